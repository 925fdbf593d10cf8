#!/usr/bin/env python3
"""An SSIM reference written apart from src/core/image.cpp, for tests/core/image_test.cpp.

Wang, Bovik, Sheikh and Simoncelli 2004: a Gaussian window of sigma 1.5 (11x11, or the largest odd size that
fits a smaller image), K1 = 0.01, K2 = 0.03, data range 1, RGB clamped to [0, 1], population (co)variances,
'valid' window positions only (no padding), the mean over the channels and the positions. Computed directly
with the 2D window at every position (no separable filtering), in float64.

  ssim_reference.py A.npy B.npy   prints the SSIM of two float32 (H, W, C >= 3) arrays
  ssim_reference.py --fixtures    prints the SSIM of the test's formula images (the constants it pastes)
"""
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def ssim(a, b):
    a = np.clip(np.asarray(a, np.float64)[..., :3], 0.0, 1.0)
    b = np.clip(np.asarray(b, np.float64)[..., :3], 0.0, 1.0)
    k = min(11, a.shape[0], a.shape[1])
    if k % 2 == 0:
        k -= 1
    x = np.arange(k) - k // 2
    g = np.exp(-(x * x) / (2 * 1.5 ** 2))
    w = np.outer(g, g)
    w /= w.sum()
    wa = sliding_window_view(a, (k, k), axis=(0, 1))  # (H-k+1, W-k+1, 3, k, k)
    wb = sliding_window_view(b, (k, k), axis=(0, 1))
    mean = lambda v: (v * w).sum(axis=(-2, -1))
    mu_a, mu_b = mean(wa), mean(wb)
    var_a = mean(wa * wa) - mu_a ** 2
    var_b = mean(wb * wb) - mu_b ** 2
    cov = mean(wa * wb) - mu_a * mu_b
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    s = (2 * mu_a * mu_b + c1) * (2 * cov + c2) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return float(s.mean())


def fixture(width, height, which):
    """The test's formula images (image_test.cpp: formulaImage), float32."""
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    y, x, c = y.astype(np.float64), x.astype(np.float64), c.astype(np.float64)
    if which == 0:
        v = 0.5 + 0.45 * np.sin(0.37 * x + 0.23 * y + c)
    else:
        v = 0.5 + 0.45 * np.sin(0.37 * x + 0.23 * y + c) + 0.2 * np.cos(0.9 * x - 0.55 * y + 2 * c) - 0.05 * c
    return v.astype(np.float32)


if __name__ == "__main__":
    if sys.argv[1:] == ["--fixtures"]:
        for w, h in ((24, 17), (7, 9)):
            print(f"{w}x{h}: {ssim(fixture(w, h, 0), fixture(w, h, 1)):.12f}")
    elif len(sys.argv) == 3:
        print(f"{ssim(np.load(sys.argv[1]), np.load(sys.argv[2])):.12f}")
    else:
        sys.exit(__doc__)
