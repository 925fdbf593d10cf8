#!/usr/bin/env bash
# Checks that every C++ source of the repository is formatted as .clang-format says (the test command runs
# it; a formatting difference fails it). Fix with: scripts/check_format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' | grep -v '^web/third_party/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "$out" | grep -E '^[^ ].*: (error|warning):' | cut -d: -f1 | sort -u | sed 's/^/check_format: not formatted: /' | head -40
  echo "check_format: run scripts/check_format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
