#!/usr/bin/env bash
# Set up, build with AddressSanitizer + UndefinedBehaviorSanitizer, and run every test.
# Real-data tests read ../shared/assets (override with SPLATFORGE_ASSETS). They skip when it is absent,
# except under CI=true, where a missing asset or Vulkan device fails the test instead.
# The C++ sources' formatting is checked first (scripts/check_format.sh).
# Then a fuzz smoke run: every libFuzzer target of fuzz/ for 8 s (build/fuzz, clang; docs/fuzzing.md).
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    daily work: the build (incremental) and ctest without the slow tier (the npm peer
#                              tools, the viewer under Xvfb, the training runs, the Python module), no fuzz smoke
#   scripts/test.sh ... [ctest arguments]   e.g. -R Frame to run some tests only
#
# Prints where the time went (setup, format, configure, build, web, tests, fuzz) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
ctest_args=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ctest_args+=("$a") ;;
  esac
done

phases=()
phase_start=$SECONDS
phase() {  # records the time since the last phase under a name
  phases+=("$(printf '%-10s %4d s' "$1" $((SECONDS - phase_start)))")
  phase_start=$SECONDS
}
report() {
  echo "test: time per phase:"
  for p in "${phases[@]}"; do echo "  $p"; done
  echo "  total      $(printf '%4d s' "$SECONDS")"
}
trap report EXIT

./scripts/setup.sh
phase setup
./scripts/check_format.sh  # every C++ source as .clang-format says: a formatting difference fails the tests
phase format
cmake --preset asan >/dev/null
phase configure
cmake --build --preset asan
phase build
./scripts/build_web.sh  # the web page's WebAssembly (docs/web.md); its object files stay in build/web
phase web
echo "test: the Vulkan driver stack these tests run with:"
LSAN_OPTIONS="suppressions=$PWD/tests/lsan_suppressions.txt" ./build/asan/apps/splatforge/splatforge devices | sed 's/^/  /' || echo "  (no Vulkan device: the GPU tests will skip, or fail under CI=true)"
if [ "$quick" = 1 ]; then
  ctest --preset asan -LE slow "${ctest_args[@]}"
  phase tests
  exit 0
fi
ctest --preset asan "${ctest_args[@]}"
phase tests
./scripts/fuzz.sh all 8 --jobs 2
phase fuzz
