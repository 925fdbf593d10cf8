#!/usr/bin/env python3
"""Writes a synthetic city for the level-of-detail benchmarks (docs/lod.md, docs/benchmarks.md): copies of
sample captures laid out on a square grid of blocks, each copy turned about the up axis, scaled and tinted
by a seeded random draw, streamed into one binary little-endian PLY (SH degree 0) without holding it in
memory, with a JSON sidecar that records every copy's transform.

  make_city.py CAPTURE.ply [CAPTURE.ply ...] -o city.ply [--gaussians 200000000 | --copies N] [--seed 0]

Copy k takes capture k mod (number of captures) and the grid cell (k mod side, k div side), side =
ceil(sqrt(copies)). With c the capture's centre (the median of its positions), its row r becomes
  position  = c + s R (p - c) + (cell_x * spacing, 0, cell_z * spacing)
  log scale = log scale + log s
  rotation  = q_yaw * q          (Hamilton product; PLY rot_0 is w)
  f_dc      = f_dc + tint
  opacity   = opacity
where R is the rotation by `yaw` about the y axis (the captures' up is -y), q_yaw = (cos(yaw/2), 0,
sin(yaw/2), 0), and spacing is 1.2 times the larger of the capture's x and z spans between its 1st and 99th
percentiles. The sidecar (OUT.json) lists for every copy: capture, cell, yaw, scale, tint and offset.
Numpy only; float64 arithmetic, written as float32."""
import argparse
import json
import math
import os
import sys

import numpy as np

FIELDS = "x y z f_dc_0 f_dc_1 f_dc_2 opacity scale_0 scale_1 scale_2 rot_0 rot_1 rot_2 rot_3".split()


def read_capture(path):
    raw = open(path, "rb").read()
    try:
        end = raw.index(b"\n", raw.index(b"end_header")) + 1
    except ValueError:
        sys.exit(f"{path}: not a PLY file (no end_header)")
    header = raw[:end].decode("ascii", "replace").splitlines()
    if "format binary_little_endian 1.0" not in header:
        sys.exit(f"{path}: only binary little-endian PLY captures are read (convert with splatforge convert)")
    count = int(next(l for l in header if l.startswith("element vertex")).split()[2])
    props = [l.split() for l in header if l.startswith("property")]
    if any(p[1] != "float" for p in props):
        sys.exit(f"{path}: every property must be float")
    names = [p[2] for p in props]
    missing = [f for f in FIELDS if f not in names]
    if missing:
        sys.exit(f"{path}: no {', '.join(missing)} (not a 3D Gaussian splatting PLY)")
    rows = np.frombuffer(raw, np.dtype([(n, "<f4") for n in names]), count, end)
    return {f: np.asarray(rows[f], np.float64) for f in FIELDS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--gaussians", type=int, default=200_000_000, help="at least this many (whole copies)")
    ap.add_argument("--copies", type=int, help="this many copies instead of --gaussians")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    caps = [read_capture(p) for p in a.captures]
    sizes = [len(c["x"]) for c in caps]
    if a.copies is not None:
        copies = a.copies
    else:
        per = sum(sizes) / len(sizes)
        copies = max(1, math.ceil(a.gaussians / per))
        while sum(sizes[k % len(caps)] for k in range(copies)) < a.gaussians:
            copies += 1
    if copies < 1:
        sys.exit("--copies must be at least 1")
    total = sum(sizes[k % len(caps)] for k in range(copies))
    side = math.ceil(math.sqrt(copies))
    centres, spans = [], []
    for c in caps:
        xyz = np.stack([c["x"], c["y"], c["z"]], 1)
        centres.append(np.nanmedian(xyz, 0))
        lo, hi = np.nanpercentile(xyz, 1, 0), np.nanpercentile(xyz, 99, 0)
        spans.append(max(hi[0] - lo[0], hi[2] - lo[2]))
    spacing = 1.2 * max(spans)
    rng = np.random.default_rng(a.seed)
    layout = []
    tmp = a.output + ".partial"
    with open(tmp, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\ncomment synthetic city: scripts/make_city.py\n"
                 f"element vertex {total}\n" + "".join(f"property float {n}\n" for n in FIELDS) +
                 "end_header\n").encode())
        for k in range(copies):
            ci = k % len(caps)
            c, centre = caps[ci], centres[ci]
            cx, cz = k % side, k // side
            yaw = float(rng.uniform(0.0, 2.0 * math.pi))
            scale = float(math.exp(rng.uniform(math.log(0.8), math.log(1.25))))
            tint = [float(t) for t in rng.uniform(-0.3, 0.3, 3)]
            offset = [(cx - (side - 1) / 2) * spacing, 0.0, (cz - (side - 1) / 2) * spacing]
            layout.append(dict(capture=a.captures[ci], cell=[cx, cz], yaw=yaw, scale=scale, tint=tint,
                               offset=offset, centre=[float(v) for v in centre]))
            cy, sy = math.cos(yaw), math.sin(yaw)
            dx, dy, dz = c["x"] - centre[0], c["y"] - centre[1], c["z"] - centre[2]
            out = np.empty((len(c["x"]), len(FIELDS)), np.float64)
            out[:, 0] = centre[0] + scale * (cy * dx + sy * dz) + offset[0]
            out[:, 1] = centre[1] + scale * dy + offset[1]
            out[:, 2] = centre[2] + scale * (-sy * dx + cy * dz) + offset[2]
            for j in range(3):
                out[:, 3 + j] = c[f"f_dc_{j}"] + tint[j]
                out[:, 7 + j] = c[f"scale_{j}"] + math.log(scale)
            out[:, 6] = c["opacity"]
            hw, hy = math.cos(yaw / 2), math.sin(yaw / 2)  # q_yaw = (hw, 0, hy, 0) times (w, x, y, z)
            w, x, y, z = c["rot_0"], c["rot_1"], c["rot_2"], c["rot_3"]
            out[:, 10] = hw * w - hy * y
            out[:, 11] = hw * x + hy * z
            out[:, 12] = hw * y + hy * w
            out[:, 13] = hw * z - hy * x
            f.write(out.astype("<f4").tobytes())
            if (k + 1) % 100 == 0 or k + 1 == copies:
                print(f"make_city: {k + 1}/{copies} copies", file=sys.stderr, flush=True)
    with open(os.path.splitext(a.output)[0] + ".json", "w") as j:
        json.dump(dict(gaussians=total, copies=copies, side=side, spacing=spacing, seed=a.seed, layout=layout), j)
    os.replace(tmp, a.output)
    print(f"wrote {total} gaussians ({copies} copies on a {side}x{side} grid, spacing {spacing:.3f}) to "
          f"{a.output}")


if __name__ == "__main__":
    main()
