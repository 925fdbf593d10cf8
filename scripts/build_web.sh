#!/usr/bin/env bash
# Builds the web page's WebAssembly module (web/wasm/, docs/web.md) with Debian's emscripten into build/web/:
# sf_decode.js (the glue, a classic-worker script) and sf_decode.wasm. The object files stay in
# build/web/cmake between runs, so a second run with nothing changed takes about a second.
#
#   scripts/build_web.sh           configure (first run) and build
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v emcmake >/dev/null; then
  echo "build_web: error: emscripten is not installed (scripts/setup.sh installs Debian's emscripten)" >&2
  exit 1
fi
# Debian's emscripten runs its JavaScript tools with Debian's node modules (node-acorn); a Node.js from
# elsewhere does not look there by itself.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
out=build/web
if [ ! -f "$out/cmake/build.ninja" ]; then
  emcmake cmake -S web/wasm -B "$out/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$out/cmake"
for f in sf_decode.js sf_decode.wasm; do
  if ! cmp -s "$out/cmake/$f" "$out/$f"; then cp "$out/cmake/$f" "$out/$f"; fi
done
echo "build_web: $out/sf_decode.js $(stat -c %s "$out/sf_decode.js") B, $out/sf_decode.wasm $(stat -c %s "$out/sf_decode.wasm") B"
