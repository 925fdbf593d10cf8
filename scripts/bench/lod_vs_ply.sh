#!/bin/bash
# The frame of a level-of-detail object against the same cut drawn from a PLY: both benched with their full
# output and raster counts, the LOD frame's graph, and (where nvidia-smi exists) the GPU's clocks sampled
# during the runs. Same cut, same pairs: where the two frames' passes differ, the LOD object's frame costs it.
#   scripts/bench/lod_vs_ply.sh SPLATFORGE HIERARCHY_DIR OUT_DIR [BUDGET] [WIDTH] [HEIGHT]
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
sf=$1 dir=$2 out=$3 budget=${4:-4000000} width=${5:-1920} height=${6:-1080}
mkdir -p "$out"
log=$out/log.txt
: > "$log"
clocks=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 250 \
    > "$out/clocks.csv" 2>&1 &
  clocks=$!
  trap 'kill $clocks 2> /dev/null || true' EXIT
fi
say() { echo "== $*" | tee -a "$log"; }
keep="scene:|visible|gpu median|back to back|gpu frame|raster counts|gpu memory|wall clock"
say "cut: $budget gaussians at ${width}x${height}"
"$sf" lod cut "$dir" --budget "$budget" --width "$width" --height "$height" -o "$out/cut.ply" \
  --camera-out "$out/cut_camera.json" 2>&1 | tail -1 | tee -a "$log"
lod=("$dir" --lod-budget "$budget" --width "$width" --height "$height" --backend vulkan)
ply=("$out/cut.ply" --camera "$out/cut_camera.json" --backend vulkan)
# One input three ways: single frames, back to back, counted (NAME, then bench's input and options).
runs() {
  local name=$1
  shift
  say "$name, single frames"
  "$sf" bench "$@" --frames 5 2>&1 | grep -E "$keep" | tee -a "$log"
  say "$name, back to back"
  "$sf" bench "$@" --frames 3 --back-to-back 16 2>&1 | grep -E "$keep" | tee -a "$log"
  say "$name, counted"
  "$sf" bench "$@" --frames 2 --raster-counts 2>&1 | grep -E "$keep" | tee -a "$log"
}
runs "lod object" "${lod[@]}"
runs ply "${ply[@]}"
say "lod object, the frame graph"
"$sf" bench "${lod[@]}" --frames 1 --show-graph 2>&1 | grep -vE "off this frame" | tee -a "$log"
echo "wrote $log${clocks:+ and $out/clocks.csv}"
