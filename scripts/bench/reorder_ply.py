#!/usr/bin/env python3
"""The same gaussians with their rows permuted, to measure what the slot order costs the frame
(docs/benchmarks.md, "The 4M overview"): by a 30-bit Morton code of the centres (10 bits an axis over the
bounding box, ties in row order), or shuffled (seed 1). Binary little-endian PLY of float properties only.
  reorder_ply.py IN.ply OUT.ply morton|shuffle"""
import sys

import numpy as np


def main(argv):
    if len(argv) != 4 or argv[3] not in ("morton", "shuffle"):
        sys.exit(__doc__.strip())
    src, dst, mode = argv[1:4]
    raw = open(src, "rb").read()
    if b"end_header" not in raw:
        sys.exit(f"{src}: not a PLY (no end_header)")
    end = raw.index(b"\n", raw.index(b"end_header")) + 1
    header = raw[:end].decode("ascii", "replace").splitlines()
    if "format binary_little_endian 1.0" not in header:
        sys.exit(f"{src}: only binary little-endian PLY is reordered")
    props = [line.split() for line in header if line.startswith("property")]
    if any(p[1] != "float" for p in props):
        sys.exit(f"{src}: only float properties are reordered ({' '.join(p[2] for p in props if p[1] != 'float')})")
    names = [p[2] for p in props]
    n = int(next(line for line in header if line.startswith("element vertex")).split()[2])
    if len(raw) - end < n * len(names) * 4:
        sys.exit(f"{src}: {n} rows of {len(names)} floats need {n * len(names) * 4} bytes after the header, "
                 f"it has {len(raw) - end}")
    rows = np.frombuffer(raw, np.float32, n * len(names), end).reshape(n, len(names))
    if mode == "shuffle":
        order = np.random.default_rng(1).permutation(n)
    else:
        xyz = rows[:, [names.index(a) for a in "xyz"]].astype(np.float64)
        lo, hi = xyz.min(0), xyz.max(0)
        q = ((xyz - lo) / np.maximum(hi - lo, 1e-9) * 1023.0).astype(np.uint64)
        code = np.zeros(n, np.uint64)
        for bit in range(10):
            for axis in range(3):
                code |= ((q[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + axis)
        order = np.argsort(code, kind="stable")
    with open(dst, "wb") as f:
        f.write(raw[:end])
        f.write(np.ascontiguousarray(rows[order]).tobytes())
    print(f"{dst}: {n} rows, {mode}")


if __name__ == "__main__":
    main(sys.argv)
