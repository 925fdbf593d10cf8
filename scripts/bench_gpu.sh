#!/usr/bin/env bash
# GPU benchmark suite (docs/benchmarks.md): 40 tiled copies of the biker capture and a synthetic scene of
# the same size, 1920x1080, SH degree 0 and 3, plus a biker render kept for comparison with the CPU
# reference. Usage: scripts/bench_gpu.sh SPLATFORGE_BINARY ASSETS_DIR OUTPUT_DIR [FRAMES]
set -uo pipefail
bin=$1 assets=$2 out=$3 frames=${4:-20}
mkdir -p "$out"
"$bin" render "$assets/splats/biker.spz" -o "$out/biker_gpu.png" --backend vulkan --width 1280 --height 720 --save-float "$out/biker_gpu.npy"
for sh in 0 3; do
  "$bin" bench "$assets/splats/biker.spz" --copies 40 --sh-degree $sh --width 1920 --height 1080 --frames "$frames" --backend vulkan --json-out "$out/biker40_sh$sh.json"
  "$bin" bench --synthetic 6109840 --sh-degree $sh --width 1920 --height 1080 --frames "$frames" --backend vulkan --json-out "$out/synthetic6m_sh$sh.json"
done
