#!/usr/bin/env bash
# Set up, build with AddressSanitizer + UndefinedBehaviorSanitizer, and run every test.
# Real-data tests read ../shared/assets (override with SPLATFORGE_ASSETS) and skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan
