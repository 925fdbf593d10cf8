#!/usr/bin/env bash
# Set up, build with AddressSanitizer + UndefinedBehaviorSanitizer, and run every test.
# Real-data tests read ../shared/assets (override with SPLATFORGE_ASSETS). They skip when it is absent,
# except under CI=true, where a missing asset or Vulkan device fails the test instead.
# Then a fuzz smoke run: every libFuzzer target of fuzz/ for 20 s (build/fuzz, clang; docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset asan >/dev/null
cmake --build --preset asan
echo "test: the Vulkan driver stack these tests run with:"
LSAN_OPTIONS="suppressions=$PWD/tests/lsan_suppressions.txt" ./build/asan/apps/splatforge/splatforge devices | sed 's/^/  /' || echo "  (no Vulkan device: the GPU tests will skip, or fail under CI=true)"
ctest --preset asan
./scripts/fuzz.sh all 20 --jobs 2
