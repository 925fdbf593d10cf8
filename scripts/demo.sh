#!/usr/bin/env bash
# Set up, build (optimised) and render the built-in demo scene to demo.png (or the path given).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/apps/splatforge/splatforge demo -o "${1:-demo.png}"
