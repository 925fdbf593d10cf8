#!/usr/bin/env bash
# Writes a batch manifest of hull bakes with --train from the shared sample models (docs/batch.md, "H200: 20
# hull bakes with --train"): COUNT jobs, the models taken in turn, each model once per seed, every job its own
# output. Prints the commands that run it.
#
#   scripts/batch_hull_bakes.sh OUT_DIR [--count 20] [--budget 6000] [--steps 3000] [--views 200] [--size 400]
#
# The manifest (OUT_DIR/hull_bakes.json) names the models by absolute path under $SPLATFORGE_ASSETS (default
# ../shared/assets beside the repository) and writes OUT_DIR/hulls/<model>_s<seed>.spl2 (+ .meta.json).
set -euo pipefail

usage() { echo "usage: $0 OUT_DIR [--count N] [--budget N] [--steps N] [--views N] [--size N]" >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1; shift
count=20 budget=6000 steps=3000 views=200 size=400
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --views) views=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    *) usage ;;
  esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
assets=${SPLATFORGE_ASSETS:-$repo/../shared/assets}
assets=$(cd "$assets" && pwd)
models=(gltf/cesium_man.gltf gltf/box_animated.gltf gltf/rigged_simple.gltf gltf/morph-stress-test.glb)
for m in "${models[@]}"; do
  [ -f "$assets/$m" ] || { echo "$0: $assets/$m is missing (set SPLATFORGE_ASSETS)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

python3 - "$out/hull_bakes.json" "$assets" "$count" "$budget" "$steps" "$views" "$size" "${models[@]}" <<'EOF'
import json, os, sys
path, assets, count, budget, steps, views, size = sys.argv[1:8]
models = sys.argv[8:]
jobs = []
for k in range(int(count)):
    model = models[k % len(models)]
    seed = k // len(models) + 1
    stem = os.path.splitext(os.path.basename(model))[0]
    jobs.append({
        "name": f"{stem}_s{seed}",
        "command": "hull bake",
        "inputs": [os.path.join(assets, model)],
        "outputs": [f"hulls/{stem}_s{seed}.spl2", f"hulls/{stem}_s{seed}.meta.json"],
        "flags": ["--seed", str(seed)],
    })
manifest = {
    "version": 1,
    "defaults": {"flags": {"hull bake": ["--train", "--budget", budget, "--train-steps", steps, "--train-views", views,
                                         "--train-size", size, "--train-backend", "vulkan"]}},
    "jobs": jobs,
}
with open(path, "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
EOF

echo "wrote $out/hull_bakes.json: $count hull bakes with --train (budget $budget, $steps steps, $views views of ${size}px)"
echo "run on one machine, one job per GPU (here GPUs 0 and 1):"
echo "  splatforge batch $out/hull_bakes.json --jobs 2 --devices 0,1"
echo "or as a Slurm array job, one GPU per task:"
echo "  splatforge batch $out/hull_bakes.json --slurm --gpus-per-task 1 --time 1:00:00"
echo "then: splatforge batch status $out/hull_bakes.json   (totals, the slowest jobs; $out/hull_bakes.batch/job_times.png)"
