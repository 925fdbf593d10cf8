#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (docs/fuzzing.md).
#
#   scripts/fuzz.sh TARGET|all SECONDS [--jobs N] [--no-build] [extra libFuzzer arguments...]
#
# Configures (preset "fuzz": clang, ASan + UBSan) and builds build/fuzz when needed, then runs each target
# for SECONDS on its seeds (build/fuzz/fuzz/seeds/TARGET, written by fuzz_seeds from our own writers), the
# committed regressions (tests/fuzz_corpus/TARGET) and a persistent working corpus (build/fuzz/corpus/TARGET,
# where new inputs are kept between runs), with its dictionary (fuzz/dict/TARGET.dict). Findings (crash-*,
# leak-*, timeout-*, oom-* inputs) go to build/fuzz/findings/TARGET/, logs to build/fuzz/logs/TARGET.log.
# `all` runs every target in turn, or N at a time with --jobs N. Prints, per target, the executions, the
# coverage (cov/ft of libFuzzer's last status line) and the findings; exits non-zero when any target finds
# something (or fails to run). Build parallelism follows CMAKE_BUILD_PARALLEL_LEVEL (default: all cores).
# --no-build runs the binaries already in build/fuzz/fuzz/ (built elsewhere and copied in, for long runs
# on a machine with more cores) with the seeds already in build/fuzz/fuzz/seeds/.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(fuzz_ply fuzz_compressed_ply fuzz_spz fuzz_spz_body fuzz_splat fuzz_gltf fuzz_camera fuzz_scene fuzz_character fuzz_bindings fuzz_sog fuzz_ksplat fuzz_onnx fuzz_spl2 fuzz_nerf fuzz_gnm fuzz_bundle fuzz_mouth fuzz_lod fuzz_lod_meta)
build=build/fuzz

usage() {
  echo "usage: $0 TARGET|all SECONDS [--jobs N] [--no-build] [extra libFuzzer arguments...]" >&2
  echo "targets: ${all_targets[*]}" >&2
  exit 2
}

[ $# -ge 2 ] || usage
target=$1
seconds=$2
shift 2
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "fuzz: SECONDS must be a positive integer, got '$seconds'" >&2; usage; }
jobs=1
no_build=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#--jobs=}; shift ;;
    --no-build) no_build=1; shift ;;
    *) extra+=("$1"); shift ;;
  esac
done
[[ $jobs =~ ^[0-9]+$ && $jobs -ge 1 ]] || { echo "fuzz: --jobs needs a positive integer, got '$jobs'" >&2; exit 2; }

if [ "$target" = all ]; then
  targets=("${all_targets[@]}")
else
  case " ${all_targets[*]} " in
    *" $target "*) targets=("$target") ;;
    *) echo "fuzz: unknown target '$target'" >&2; usage ;;
  esac
fi

# Configure once (cmake re-runs itself when a CMakeLists.txt changes), then build what the run needs.
if [ "$no_build" = 1 ]; then
  for t in "${targets[@]}"; do
    [ -x "$build/fuzz/$t" ] || { echo "fuzz: --no-build: $build/fuzz/$t is missing" >&2; exit 2; }
  done
else
  if [ ! -f "$build/build.ninja" ]; then
    echo "fuzz: configuring $build (preset fuzz)"
    cmake --preset fuzz >/dev/null
  fi
  echo "fuzz: building ${targets[*]} and the seed corpora"
  cmake --build "$build" --target "${targets[@]}" fuzz_seed_corpus
fi

# UBSan reports with a stack; every report is fatal already (-fno-sanitize-recover=all).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# Runs one target; writes its summary line(s) to $build/logs/TARGET.summary and its status (0: clean,
# 1: findings, 2: the run failed without a finding) to $build/logs/TARGET.status.
run_one() {
  local t=$1
  local corpus=$build/corpus/$t findings=$build/findings/$t log=$build/logs/$t.log tmp=$build/tmp/$t
  local summary=$build/logs/$t.summary
  mkdir -p "$corpus" "$findings" "$build/logs"
  rm -rf "$tmp" && mkdir -p "$tmp"
  local dirs=("$corpus")
  for d in "$build/fuzz/seeds/$t" "tests/fuzz_corpus/$t"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  local rc=0
  # TMPDIR: fuzz_character's package directory lives under the build tree and is removed below, even
  # when the target dies before its own clean-up runs.
  TMPDIR=$PWD/$tmp "$build/fuzz/$t" -dict="fuzz/dict/$t.dict" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$findings/" -print_final_stats=1 ${extra[@]+"${extra[@]}"} "${dirs[@]}" >"$log" 2>&1 || rc=$?
  rm -rf "$tmp"
  # The inputs libFuzzer saved for this run's findings (an input found again keeps its name).
  local new
  new=$(sed -n 's/^.*Test unit written to //p' "$log" | grep -E '/(crash|leak|timeout|oom)-[^/]*$' || true)
  local execs cov ft units
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  ft=${cov#* ft: }
  cov=${cov#cov: }
  cov=${cov%% *}
  local count=0
  [ -n "$new" ] && count=$(printf '%s\n' "$new" | wc -l)
  {
    printf '%-20s %5s s  %12s executions  cov %6s  ft %7s  new corpus inputs %5s  findings %d\n' \
      "$t" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${units:-?}" "$count"
    if [ -n "$new" ]; then
      printf '%s\n' "$new" | sed 's/^/    /'
      grep -E '^(==[0-9]+==ERROR|SUMMARY:|.*runtime error:|.*uncaught exception|.*out-of-memory|ALARM: working on the last Unit for)' "$log" | head -4 | sed 's/^/    /' || true
      echo "    log: $log"
    elif [ "$rc" -ne 0 ]; then
      echo "    libFuzzer exited with $rc and wrote no finding; the end of $log:"
      tail -5 "$log" | sed 's/^/    /' || true
    fi
  } >"$summary"
  if [ -n "$new" ]; then echo 1; elif [ "$rc" -ne 0 ]; then echo 2; else echo 0; fi >"$build/logs/$t.status"
}

echo "fuzz: ${#targets[@]} target(s), $seconds s each, $jobs at a time; logs in $build/logs/"
running=0
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.status" "$build/logs/$t.summary"
  if [ "$jobs" -le 1 ]; then
    echo "fuzz: running $t"
    run_one "$t"
    cat "$build/logs/$t.summary"
  else
    echo "fuzz: starting $t"
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  fi
done
wait || true

failed=0
if [ "$jobs" -gt 1 ]; then echo "fuzz: results"; fi
for t in "${targets[@]}"; do
  if [ "$jobs" -gt 1 ]; then cat "$build/logs/$t.summary" 2>/dev/null || echo "$t: no summary (see $build/logs/$t.log)"; fi
  status=$(cat "$build/logs/$t.status" 2>/dev/null || echo 2)
  [ "$status" = 0 ] || failed=$((failed + 1))
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: $failed of ${#targets[@]} target(s) found something or failed to run (findings in $build/findings/)"
  exit 1
fi
echo "fuzz: ${#targets[@]} target(s) ran clean"
