#!/usr/bin/env bash
# The check to run before submitting: clone the committed main branch into a fresh directory, lay out the
# shared assets beside it as CI does, and run the README's two commands from scratch (./scripts/demo.sh,
# then CI=true ./scripts/test.sh), reporting the time and the result of each.
#
#   scripts/fresh_check.sh [--warm] [--keep] [--branch NAME] [--dir DIR]
#
#   --warm         let ccache serve compiled objects (default: ccache disabled, so the build is as slow
#                  as on a new machine; packages this machine already has are not reinstalled)
#   --keep         keep the clone afterwards (default: removed when both commands pass)
#   --branch NAME  branch or commit to clone (default: main)
#   --dir DIR      where to clone (default: a new directory under ${TMPDIR:-/tmp})
#
# Exit code 0 when both commands pass. Logs: <dir>/demo.log and <dir>/test.log.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
branch=main
warm=0
keep=0
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --warm) warm=1 ;;
    --keep) keep=1 ;;
    --branch) branch=${2:?--branch needs a name}; shift ;;
    --dir) dir=${2:?--dir needs a path}; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh_check: note: $repo has uncommitted changes; they are not part of this check"
fi

dir=${dir:-$(mktemp -d "${TMPDIR:-/tmp}/splatforge-fresh.XXXXXX")}
mkdir -p "$dir"
clone="$dir/splatforge"
if [ -e "$dir/shared" ] || [ -L "$dir/shared" ]; then
  echo "fresh_check: $dir/shared already exists; choose an empty --dir" >&2
  exit 2
fi
[ -e "$clone" ] && { echo "fresh_check: $clone already exists" >&2; exit 2; }
git clone --quiet --branch "$branch" "$repo" "$clone" 2>/dev/null || git clone --quiet "$repo" "$clone"
git -C "$clone" checkout --quiet "$branch"
echo "fresh_check: cloned $(git -C "$clone" log -1 --format='%h %s') into $clone"

# CI lays out ../shared beside the clone.
shared="$repo/../shared"
if [ -d "$shared" ]; then
  ln -s "$(cd "$shared" && pwd)" "$dir/shared"
else
  echo "fresh_check: warning: $shared is absent; under CI=true the asset tests will fail"
fi

if [ "$warm" -eq 0 ]; then export CCACHE_DISABLE=1; fi
echo "fresh_check: ccache $([ "$warm" -eq 1 ] && echo on || echo off); $(nproc) cores; logs in $dir"

run_step() {  # name, log, command...
  local name=$1 log=$2; shift 2
  local t0=$SECONDS rc=0
  echo "fresh_check: $name ..."
  (cd "$clone" && "$@") >"$log" 2>&1 || rc=$?
  local secs=$((SECONDS - t0))
  printf 'fresh_check: %-28s %s in %dm%02ds\n' "$name" "$([ $rc -eq 0 ] && echo passed || echo "FAILED (exit $rc)")" $((secs / 60)) $((secs % 60))
  if [ $rc -ne 0 ]; then tail -n 40 "$log" | sed 's/^/  | /'; fi
  return $rc
}

status=0
run_step "./scripts/demo.sh" "$dir/demo.log" ./scripts/demo.sh || status=1
if [ $status -eq 0 ] && [ ! -s "$clone/demo.png" ]; then echo "fresh_check: demo.sh did not write demo.png"; status=1; fi
run_step "CI=true ./scripts/test.sh" "$dir/test.log" env CI=true ./scripts/test.sh || status=1
grep -E "tests passed|tests failed|Total Test time" "$dir/test.log" | sed 's/^/  /' || true

if [ $status -eq 0 ] && [ "$keep" -eq 0 ]; then
  rm -rf "$clone"
  if [ -L "$dir/shared" ]; then rm "$dir/shared"; fi
  echo "fresh_check: passed (clone removed; logs kept in $dir)"
elif [ $status -eq 0 ]; then
  echo "fresh_check: passed (clone kept in $clone)"
else
  echo "fresh_check: FAILED (clone kept in $clone)"
fi
exit $status
