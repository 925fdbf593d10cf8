#!/usr/bin/python3
"""Trains a small 4DGS-style neural gaussian generator on an animated glTF, from the engine's own renders.

The training images come from Splatforge itself: `splatforge views MODEL --clip C --time T --lighting flat`
renders the model posed at clip time T (normalised into the 1.6 cube, orbit cameras, NeRF-synthetic folder)
for each training time; other times are held out. The model (docs/neural.md, "A trained model"):

  - canonical gaussians (centre, log-scale, quaternion, opacity logit, colour logit), initialised on the
    visual hull of the first training time's masks;
  - a HexPlane deformation field of (x, y, z, t): six feature planes over the pairs of the four coordinates
    at two resolutions, sampled with GridSample (bilinear, align_corners, border padding), features multiplied
    over the planes, then a small MLP whose output layer gives the offsets of centre, log-scale and
    quaternion (4DGS's deformation heads as one layer, without opacity or colour: `flat` views do not change
    colour over time);
  - the generator contract's outputs: `gaussians` float32 [N, 10] (x, y, z, opacity after the sigmoid,
    covariance xx xy xz yy yz zz), `rgb` float32 [N, 3] in [0, 1], `num_points` int32 [1]; input `time`
    float32 [1], the normalised clip time (clip seconds / clip duration, 4DGS's convention: a scene object
    {"generator": ..., "speed": 1 / duration} follows the glTF clip in seconds).

Gaussians are in the glTF's own frame (the source frame of the views' `"splatforge"` record,
p_dataset = p_source * scale + offset): each time's views are normalised on their own, so every camera is
taken back to the source frame before training, and the model draws where `splatforge render MODEL.gltf`
draws the mesh.

The differentiable rasterizer below is the engine's forward pass (render/cpu_renderer.cpp) in PyTorch: EWA
projection with the 1.3x field-of-view clamp, the 0.3 px dilation, pixel-index means, alpha = min(0.99,
o G) skipped under 1/255, front-to-back blending per pixel that stops where transmittance would fall under
1e-4. It evaluates only the (pixel, gaussian) pairs inside each gaussian's reach, so a step costs a few
hundred thousand pairs, and trains on the CPU.

Training runs in four stages (a photometric gradient does not find a limb that moved further than its own
width, so the motion is tracked first, a small step at a time):
  1. the canonical gaussians on the first time's views (the deformation is zero there);
  2. tracking (as Dynamic 3D Gaussians): free per-gaussian offsets of centre and quaternion fitted time after
     time away from time 0 in both directions round the looping clip, each started at constant velocity,
     neighbours keeping their distances;
  3. distillation: the HexPlane field and its MLP regress the tracked offsets;
  4. everything end to end, photometric, on every training time.

Deterministic for a seed and thread count (torch's deterministic algorithms, stable sorts). Run from the
repository root with the engine built (build/release):

  flock /tmp/sf-build.lock scripts/train_gltf_4d.py            # cesium_man -> models/cesium_man_4d.onnx

The exported model is checked by the engine (`splatforge onnx info`) and rendered by it at the held-out times
against the views of those times (`splatforge render scene.json --camera ...`): the PSNR it prints is the
engine's frame against the engine's own glTF render.
"""
import argparse
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time as clock

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from make_neural_models import hexplane_features  # the same HexPlane sampling as the demo generator

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------------------------------------ data

def assets_dir():
    return os.environ.get("SPLATFORGE_ASSETS", os.path.join(os.path.dirname(REPO), "shared", "assets"))


def render_views(sf, gltf, clip, t, size, count, test, out_dir):
    """`splatforge views` at clip time t: returns the dataset folder's JSON summary."""
    cmd = [sf, "views", gltf, "--clip", clip, "--time", repr(float(t)), "--lighting", "flat", "--size", str(size),
           "--count", str(count), "--val", "0", "--test", str(test), "-o", out_dir, "--json"]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


def load_split(folder, split):
    """Premultiplied RGB, alpha and the cameras (world-to-camera, OpenCV axes, the dataset frame) of a split."""
    with open(os.path.join(folder, f"transforms_{split}.json")) as f:
        meta = json.load(f)
    images, w2cs = [], []
    for fr in meta["frames"]:
        rgba = np.asarray(Image.open(os.path.join(folder, fr["file_path"] + ".png")).convert("RGBA"), dtype=np.float32) / 255.0
        rgba[..., :3] *= rgba[..., 3:4]  # straight alpha in the PNG; the frame's colour over black is premultiplied
        images.append(rgba)
        c2w = np.array(fr["transform_matrix"], dtype=np.float64) @ np.diag([1.0, -1.0, -1.0, 1.0])  # OpenGL -> OpenCV
        w2cs.append(np.linalg.inv(c2w))
    size = images[0].shape[1]
    fx = 0.5 * size / math.tan(0.5 * meta["camera_angle_x"])
    return np.stack(images), np.stack(w2cs), fx


class View:
    """One training image: the camera as an affine map from the source frame to the camera, and the target."""

    def __init__(self, w2c, scale, offset, fx, size, rgba, u):
        r, t = w2c[:3, :3], w2c[:3, 3]
        self.A = torch.tensor(r * scale, dtype=torch.float32)                  # p_cam = A p_source + b
        self.b = torch.tensor(r @ np.asarray(offset) + t, dtype=torch.float32)
        self.w2c = w2c
        self.fx = self.fy = float(fx)
        self.cx = self.cy = 0.5 * size
        self.W = self.H = size
        self.rgb = torch.tensor(rgba[..., :3].reshape(-1, 3))
        self.alpha = torch.tensor(rgba[..., 3].reshape(-1))
        self.u = float(u)


# ----------------------------------------------------------------------------------------- rasterizer

def quat_to_rotmat(q):
    q = q / torch.clamp(q.norm(dim=-1, keepdim=True), min=1e-12)
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        torch.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        torch.stack([2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)], -1),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z], -1),
    ], -2)


MAX_RADIUS = 40  # pixels: larger gaussians are evaluated only this far from their centre while training


def rasterize(xyz, cov, opacity, rgb, v):
    """The engine's forward pass (render/cpu_renderer.cpp) for one view, over black: (rgb [HW, 3], alpha [HW])."""
    p = xyz @ v.A.T + v.b
    z = p[:, 2]
    keep = z > 0.2
    zc = torch.where(keep, z, torch.ones_like(z))
    tan_x, tan_y = 0.5 * v.W / v.fx, 0.5 * v.H / v.fy
    lim_xp, lim_xn = (v.W - v.cx) / v.fx + 0.3 * tan_x, v.cx / v.fx + 0.3 * tan_x
    lim_yp, lim_yn = (v.H - v.cy) / v.fy + 0.3 * tan_y, v.cy / v.fy + 0.3 * tan_y
    tx = torch.clamp(p[:, 0] / zc, -lim_xn, lim_xp) * zc
    ty = torch.clamp(p[:, 1] / zc, -lim_yn, lim_yp) * zc
    zero = torch.zeros_like(zc)
    j0 = torch.stack([v.fx / zc, zero, -v.fx * tx / (zc * zc)], -1)
    j1 = torch.stack([zero, v.fy / zc, -v.fy * ty / (zc * zc)], -1)
    t0, t1 = j0 @ v.A, j1 @ v.A                                    # rows of T = J W (the camera's linear part)
    s0, s1 = (cov @ t0.unsqueeze(-1)).squeeze(-1), (cov @ t1.unsqueeze(-1)).squeeze(-1)
    a = (t0 * s0).sum(-1) + 0.3
    b = (t0 * s1).sum(-1)
    c = (t1 * s1).sum(-1) + 0.3
    det = a * c - b * b
    keep = keep & (det > 0)
    det = torch.where(keep, det, torch.ones_like(det))
    ca, cb, cc = c / det, -b / det, a / det
    mx = v.fx * p[:, 0] / zc + v.cx - 0.5
    my = v.fy * p[:, 1] / zc + v.cy - 0.5
    with torch.no_grad():
        # alpha >= 1/255 needs q = d' conic d <= k^2 = 2 ln(255 o): the ellipse whose bounding box is
        # k sqrt(cov_xx) by k sqrt(cov_yy) around the mean. Only pixels inside it are evaluated.
        k2 = 2 * torch.log(torch.clamp(255 * opacity, min=1.0))
        rx = torch.clamp(torch.sqrt(k2 * a), max=MAX_RADIUS)
        ry = torch.clamp(torch.sqrt(k2 * c), max=MAX_RADIUS)
        x0 = torch.clamp(torch.ceil(mx - rx), min=0).long()
        x1 = torch.clamp(torch.floor(mx + rx), max=v.W - 1).long()
        y0 = torch.clamp(torch.ceil(my - ry), min=0).long()
        y1 = torch.clamp(torch.floor(my + ry), max=v.H - 1).long()
        w = torch.clamp(x1 - x0 + 1, min=0)
        h = torch.clamp(y1 - y0 + 1, min=0)
        keep = keep & (opacity * 255 >= 1) & torch.isfinite(mx) & torch.isfinite(my)
        counts = torch.where(keep, w * h, torch.zeros_like(w))
        order = torch.argsort(z.detach(), stable=True)             # front to back
        counts_o = counts[order]
        gi = torch.repeat_interleave(order, counts_o)              # pairs, in depth order
        starts = torch.cumsum(counts_o, 0) - counts_o
        local = torch.arange(gi.shape[0]) - torch.repeat_interleave(starts, counts_o)
        m = torch.stack([x0.float(), y0.float(), w.float(), mx, my, ca, cb, cc, k2], -1)[gi]
        wi = m[:, 2].long()
        px = m[:, 0].long() + local % wi
        py = m[:, 1].long() + torch.div(local, wi, rounding_mode="floor")
        fx_, fy_ = m[:, 3] - px, m[:, 4] - py
        inside = m[:, 5] * fx_ * fx_ + 2 * m[:, 6] * fx_ * fy_ + m[:, 7] * fy_ * fy_ <= m[:, 8] + 1e-3
        gi, px, py = gi[inside], px[inside], py[inside]
        pix = py * v.W + px
        pix, perm = torch.sort(pix, stable=True)                  # per pixel, still front to back
        gi, px, py = gi[perm], px[perm], py[perm]
        _, seg_counts = torch.unique_consecutive(pix, return_counts=True)
        seg_first = torch.repeat_interleave(torch.cumsum(seg_counts, 0) - seg_counts, seg_counts)
    g = torch.cat([torch.stack([mx, my, ca, cb, cc, opacity], -1), rgb], -1)[gi]  # one gather (and one scatter back)
    dx = g[:, 0] - px.float()
    dy = g[:, 1] - py.float()
    power = -0.5 * (g[:, 2] * dx * dx + g[:, 4] * dy * dy) - g[:, 3] * dx * dy
    alpha = torch.clamp(g[:, 5] * torch.exp(torch.clamp(power, max=0.0)), max=0.99)
    alpha = torch.where((alpha.detach() >= 1.0 / 255.0) & (power.detach() <= 0), alpha, torch.zeros_like(alpha))
    log_keep = torch.log1p(-alpha.double())
    incl = torch.cumsum(log_keep, 0)
    excl = incl - log_keep
    trans = torch.exp(excl - excl[seg_first]).float()            # transmittance before each pair
    weight = alpha * trans
    weight = torch.where((trans * (1 - alpha)).detach() < 1e-4, torch.zeros_like(weight), weight)
    out = torch.zeros(v.W * v.H, 4).index_add(0, pix, weight.unsqueeze(-1) * torch.cat([g[:, 6:9], torch.ones_like(weight).unsqueeze(-1)], -1))
    return out[:, :3], out[:, 3]


# ------------------------------------------------------------------------------------------------ model

class HexPlane(nn.Module):
    """Six planes over the pairs of (x, y, z, t), per level; features multiplied over the planes (4DGS)."""

    def __init__(self, lo, hi, reso, channels, multires, gen):
        super().__init__()
        self.register_buffer("lo", lo)
        self.register_buffer("inv", 2.0 / (hi - lo))
        self.levels = nn.ModuleList()
        for m in multires:
            res = [r * m for r in reso[:3]] + reso[3:]
            planes = nn.ParameterList()
            for comb in itertools.combinations(range(4), 2):
                shape = [1, channels] + [res[c] for c in comb[::-1]]
                if 3 in comb:
                    planes.append(nn.Parameter(torch.ones(shape)))
                else:
                    planes.append(nn.Parameter(0.5 + torch.rand(shape, generator=gen)))
            self.levels.append(planes)
        self.feat_dim = channels * len(multires)

    def forward(self, pts, t):
        return hexplane_features(self.levels, torch.cat([(pts - self.lo) * self.inv - 1.0, t * 2.0 - 1.0], -1))

    def smoothness(self):
        """4DGS's regularisers: total variation of every plane, second differences of the time planes."""
        loss = 0.0
        for planes in self.levels:
            for ci, comb in enumerate(itertools.combinations(range(4), 2)):
                p = planes[ci]
                loss = loss + (p[..., 1:, :] - p[..., :-1, :]).pow(2).mean() + (p[..., :, 1:] - p[..., :, :-1]).pow(2).mean()
                if 3 in comb:  # time is the plane's height axis (dim 2)
                    d2 = p[..., 2:, :] - 2 * p[..., 1:-1, :] + p[..., :-2, :]
                    loss = loss + 10.0 * d2.pow(2).mean()
        return loss


class Gaussians4D(nn.Module):
    def __init__(self, xyz, rgb, scale, gen, width=32, reso=(12, 12, 12, 10), channels=8):
        super().__init__()
        n = xyz.shape[0]
        self.xyz = nn.Parameter(xyz.clone())
        self.log_scale = nn.Parameter(torch.log(scale) * torch.ones(n, 3))
        self.rot = nn.Parameter(torch.cat([torch.ones(n, 1), torch.zeros(n, 3)], 1))
        self.opacity_logit = nn.Parameter(torch.full((n, 1), -1.0))
        self.rgb_logit = nn.Parameter(torch.logit(torch.clamp(rgb, 0.02, 0.98)))
        lo, hi = xyz.min(0).values, xyz.max(0).values
        pad = 0.15 * (hi - lo).max()
        self.grid = HexPlane(lo - pad, hi + pad, list(reso), channels, [1, 2], gen)
        self.feature_out = nn.Sequential(nn.Linear(self.grid.feat_dim, width), nn.ReLU(), nn.Linear(width, width))
        # The deformation heads of centre (3), log-scale (3) and quaternion (4) as one layer pair over the
        # shared hidden features (4DGS has a pair per head; one pair is a third of the CPU time).
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
        with torch.no_grad():  # the deformation starts at zero
            self.head[-1].weight.zero_()
            self.head[-1].bias.zero_()

    def deformed(self, t, deform=True):
        """Centres, covariances, opacities and colours at normalised time t (a float or a [1] tensor)."""
        xyz, log_scale, rot = self.xyz, self.log_scale, self.rot
        if deform:
            tt = torch.as_tensor(t, dtype=torch.float32).reshape(1, 1).expand(xyz.shape[0], 1)
            d = self.head(self.feature_out(self.grid(xyz, tt)))
            xyz = xyz + d[:, 0:3]
            log_scale = log_scale + d[:, 3:6]
            rot = rot + d[:, 6:10]
        s = torch.exp(log_scale)
        r = quat_to_rotmat(rot)
        cov = (r * (s * s).unsqueeze(-2)) @ r.transpose(-1, -2)
        return xyz, cov, torch.sigmoid(self.opacity_logit).view(-1), torch.sigmoid(self.rgb_logit)

    def forward(self, time):
        """The generator contract (docs/neural.md): gaussians [N, 10], rgb [N, 3], num_points [1]."""
        xyz, cov, opacity, rgb = self.deformed(time)
        cov6 = torch.stack([cov[:, 0, 0], cov[:, 0, 1], cov[:, 0, 2], cov[:, 1, 1], cov[:, 1, 2], cov[:, 2, 2]], -1)
        gauss = torch.cat([xyz, opacity.view(-1, 1), cov6], 1)
        return gauss, rgb, torch.tensor([xyz.shape[0]], dtype=torch.int32)


# ------------------------------------------------------------------------------------------ training

def visual_hull_points(views, n, grid, gen):
    """Surface cells of the visual hull of the views' masks (all of one time), in the source frame."""
    lin = torch.linspace(-1.0, 1.0, grid)  # the views' subject lies in the 1.6 cube of its dataset frame
    inside = None
    # Cells in the source frame through the first view's normalisation: p_source = (p_dataset - offset) / scale.
    a0, b0 = views[0].A, views[0].b
    w2c0 = torch.tensor(views[0].w2c[:3, :3], dtype=torch.float32)
    scale = float(a0.norm(dim=1).mean())
    offset = w2c0.T @ (b0 - torch.tensor(views[0].w2c[:3, 3], dtype=torch.float32))
    pd = torch.stack(torch.meshgrid(lin, lin, lin, indexing="ij"), -1).reshape(-1, 3)
    ps = (pd - offset) / scale
    colour = torch.zeros(ps.shape[0], 3)
    for v in views:
        p = ps @ v.A.T + v.b
        x = torch.round(v.fx * p[:, 0] / p[:, 2] + v.cx - 0.5).long()
        y = torch.round(v.fy * p[:, 1] / p[:, 2] + v.cy - 0.5).long()
        ok = (x >= 0) & (x < v.W) & (y >= 0) & (y < v.H)
        idx = torch.clamp(y, 0, v.H - 1) * v.W + torch.clamp(x, 0, v.W - 1)
        hit = ok & (v.alpha[idx] > 0.5)
        inside = hit if inside is None else inside & hit
        colour += v.rgb[idx] / torch.clamp(v.alpha[idx], min=1e-3).unsqueeze(-1)
    occ = inside.view(grid, grid, grid)
    pad = F.pad(occ.float().unsqueeze(0).unsqueeze(0), (1, 1, 1, 1, 1, 1))
    full = -F.max_pool3d(-pad, 3, stride=1)[0, 0] > 0.5  # cells whose 26 neighbours are all inside
    surface = (occ & ~full).reshape(-1)
    cells = torch.nonzero(surface).view(-1)
    pick = cells[torch.randint(cells.shape[0], (n,), generator=gen)]
    cell = (lin[1] - lin[0]) / scale
    xyz = ps[pick] + (torch.rand(n, 3, generator=gen) - 0.5) * cell
    return xyz, torch.clamp(colour[pick] / len(views), 0, 1), cell, int(cells.shape[0])


def image_loss(out_rgb, out_alpha, v):
    """L1 on colour and half the alpha, at full size and pooled 4x and 16x: a limb some pixels from its place
    still meets it in a coarse cell, so the gradient reaches further than a gaussian's footprint."""
    ours = torch.cat([out_rgb, 0.5 * out_alpha.unsqueeze(-1)], -1).T.reshape(1, 4, v.H, v.W)
    theirs = torch.cat([v.rgb, 0.5 * v.alpha.unsqueeze(-1)], -1).T.reshape(1, 4, v.H, v.W)
    loss = (ours - theirs).abs().mean()
    for k in (4, 16):
        loss = loss + (F.avg_pool2d(ours, k) - F.avg_pool2d(theirs, k)).abs().mean()
    return loss


def pick(seq, gen):
    return seq[int(torch.randint(len(seq), (1,), generator=gen))]


def fit_static(model, views, steps, batch, gen, log):
    """Stage 1: the canonical gaussians alone on the first time's views (the deformation is zero there)."""
    opt = torch.optim.Adam([
        {"params": [model.xyz], "lr": 2e-3}, {"params": [model.log_scale], "lr": 5e-3}, {"params": [model.rot], "lr": 2e-3},
        {"params": [model.opacity_logit], "lr": 5e-2}, {"params": [model.rgb_logit], "lr": 1e-2}], eps=1e-15)
    for step in range(steps):
        xyz, cov, opacity, rgb = model.deformed(0.0, deform=False)
        loss = sum(image_loss(*rasterize(xyz, cov, opacity, rgb, v), v) for v in [pick(views, gen) for _ in range(batch)]) / batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            log(f"  static step {step:4d}  loss {float(loss):.5f}")


def track(model, by_time, steps_per_time, rigidity, gen, log, lr=4e-3):
    """Stage 2 (Dynamic 3D Gaussians' tracking): free per-gaussian offsets of centre and quaternion for each
    training time, fitted time after time away from the canonical time 0 in both directions around the loop,
    each started where constant velocity takes the previous two; colours, opacities and scales stay the
    canonical ones, and neighbours (8 nearest in the canonical) keep their distances (local isometry)."""
    with torch.no_grad():
        xyz0 = model.xyz.detach()
        d = torch.cdist(xyz0, xyz0)
        knn = torch.topk(d, 9, largest=False).indices[:, 1:]
        rest = (xyz0.unsqueeze(1) - xyz0[knn]).norm(dim=-1)
        log_scale, rot0 = model.log_scale.detach(), model.rot.detach()
        opacity = torch.sigmoid(model.opacity_logit.detach()).view(-1)
        rgb = torch.sigmoid(model.rgb_logit.detach())
        s = torch.exp(log_scale)
    times = sorted(by_time)
    n = len(times)
    zero = (torch.zeros_like(xyz0), torch.zeros_like(rot0))
    tracks = {times[0]: zero}
    forward = times[1:n // 2 + 1]
    backward = times[n // 2:][::-1]  # both chains track the middle time; its two fits are averaged
    middle = {}
    for chain in (forward, backward):
        prev2, prev = zero, zero
        for u in chain:
            dx = (2 * prev[0] - prev2[0]).clone().requires_grad_(True)
            dq = (2 * prev[1] - prev2[1]).clone().requires_grad_(True)
            opt = torch.optim.Adam([dx, dq], lr=lr, eps=1e-15)
            for step in range(steps_per_time):
                for g in opt.param_groups:  # from 2.5x the rate down to a quarter of it
                    g["lr"] = lr * 2.5 * 0.1 ** (step / max(steps_per_time - 1, 1))
                p = xyz0 + dx
                r = quat_to_rotmat(rot0 + dq)
                cov = (r * (s * s).unsqueeze(-2)) @ r.transpose(-1, -2)
                v = pick(by_time[u], gen)
                loss = image_loss(*rasterize(p, cov, opacity, rgb, v), v)
                iso = ((p.unsqueeze(1) - p[knn]).norm(dim=-1) - rest).abs().mean()
                opt.zero_grad(set_to_none=True)
                (loss + rigidity * iso).backward()
                opt.step()
            prev2, prev = prev, (dx.detach(), dq.detach())
            tracks[u] = prev
            middle.setdefault(u, []).append(prev)
        log(f"  tracked {len(chain)} times to t = {chain[-1]:.3f} (normalised): loss {float(loss):.5f}, isometry {float(iso):.5f}")
    for u, fits in middle.items():
        if len(fits) > 1:
            tracks[u] = tuple(sum(f[k] for f in fits) / len(fits) for k in range(2))
    return tracks


def distill(model, tracks, steps, gen, log):
    """Stage 3: the HexPlane field and its MLP regress the tracked offsets (L1) at every training time."""
    opt = torch.optim.Adam([{"params": list(model.grid.parameters()), "lr": 1e-2},
                            {"params": list(model.feature_out.parameters()) + list(model.head.parameters()), "lr": 3e-3}])
    base = [g["lr"] for g in opt.param_groups]
    times = sorted(tracks)
    xyz0 = model.xyz.detach()
    for step in range(steps):
        for g, lr in zip(opt.param_groups, base):
            g["lr"] = lr * 0.1 ** (step / steps)
        u = pick(times, gen)
        out = model.head(model.feature_out(model.grid(xyz0, torch.full((xyz0.shape[0], 1), u))))
        dx, dq = tracks[u]
        loss = (out[:, 0:3] - dx).abs().sum(-1).mean() + 0.1 * (out[:, 6:10] - dq).abs().sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    with torch.no_grad():
        err = [float((model.head(model.feature_out(model.grid(xyz0, torch.full((xyz0.shape[0], 1), u))))[:, 0:3] - tracks[u][0]).norm(dim=1).mean())
               for u in times]
        moved = [float(tracks[u][0].norm(dim=1).mean()) for u in times]
    log(f"  distilled: mean centre error {sum(err) / len(err):.4f} for a mean tracked offset of {sum(moved) / len(moved):.4f}")


def fine_tune(model, by_time, steps, batch, lr_grid, lr_mlp, gen, log):
    """Stage 4: everything end to end on every training time, photometric, the rates decaying to 1/20."""
    groups = [
        {"params": [model.xyz], "lr": 5e-4}, {"params": [model.log_scale], "lr": 2e-3}, {"params": [model.rot], "lr": 1e-3},
        {"params": [model.opacity_logit], "lr": 2e-2}, {"params": [model.rgb_logit], "lr": 5e-3},
        {"params": list(model.grid.parameters()), "lr": lr_grid},
        {"params": list(model.feature_out.parameters()) + list(model.head.parameters()), "lr": lr_mlp},
    ]
    opt = torch.optim.Adam(groups, eps=1e-15)
    base = [g["lr"] for g in opt.param_groups]
    times = sorted(by_time)
    for step in range(steps):
        for g, lr in zip(opt.param_groups, base):
            g["lr"] = lr * 0.05 ** (step / max(steps - 1, 1))
        u = pick(times, gen)  # one time per step (the deformation runs once), `batch` of its views
        xyz, cov, opacity, rgb = model.deformed(u)
        loss = sum(image_loss(*rasterize(xyz, cov, opacity, rgb, v), v) for v in [pick(by_time[u], gen) for _ in range(batch)]) / batch
        loss = loss + 1e-4 * model.grid.smoothness()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            log(f"  fine-tune step {step:4d}  loss {float(loss):.5f}")


def train(model, views, args, gen, log, probe=None):
    times = sorted({v.u for v in views})
    by_time = {u: [v for v in views if v.u == u] for u in times}
    t0 = clock.time()
    fit_static(model, by_time[times[0]], args.static_steps, args.batch, gen, log)
    t1 = clock.time()
    tracks = track(model, by_time, args.track_steps, args.rigidity, gen, log)
    t2 = clock.time()
    distill(model, tracks, args.distill_steps, gen, log)
    t3 = clock.time()
    log(f"  canonical fit {t1 - t0:.1f} s, tracking {t2 - t1:.1f} s, distillation {t3 - t2:.1f} s")
    if probe:
        probe("after distillation")
    fine_tune(model, by_time, args.steps, args.batch, args.lr_grid, args.lr_mlp, gen, log)
    return clock.time() - t0


def psnr(a, b):
    mse = float(((torch.clamp(a, 0, 1) - torch.clamp(b, 0, 1)) ** 2).mean())
    return 10 * math.log10(1.0 / mse) if mse > 0 else float("inf")


def evaluate(model, views, deform=True, at=None):
    """Mean PSNR (RGB over black, the whole image) of the model at each view's time (or at time `at`)."""
    out = []
    with torch.no_grad():
        for v in views:
            xyz, cov, opacity, rgb = model.deformed(v.u if at is None else at, deform)
            img, _ = rasterize(xyz, cov, opacity, rgb, v)
            out.append(psnr(img, v.rgb))
    return sum(out) / len(out)


# ------------------------------------------------------------------------------------------ the engine

def engine_psnr(sf, onnx_path, work, held):
    """The exported model in the engine's frame (`splatforge render` of a scene with the generator placed by the
    time's normalisation, the CPU backend) against the engine's views of the glTF at that time."""
    results = {}
    shutil.copyfile(onnx_path, os.path.join(work, "model.onnx"))
    for t, (folder, summary, duration) in held.items():
        scene = {"objects": [{"generator": "model.onnx", "speed": 1.0 / duration,
                              "transform": {"scale": summary["scale"], "translation": summary["offset"]}}]}
        with open(os.path.join(work, "scene.json"), "w") as f:
            json.dump(scene, f)
        images, w2cs, fx = load_split(folder, "test")
        size = images.shape[1]
        scores = []
        for i in range(images.shape[0]):
            cam = {"width": size, "height": size, "fx": fx, "fy": fx, "cx": size / 2, "cy": size / 2,
                   "world_to_camera": [float(x) for x in w2cs[i].reshape(-1)]}
            with open(os.path.join(work, "cam.json"), "w") as f:
                json.dump(cam, f)
            npy = os.path.join(work, "frame.npy")
            subprocess.run([sf, "render", os.path.join(work, "scene.json"), "--camera", os.path.join(work, "cam.json"), "--time",
                            repr(float(t)), "--backend", "cpu", "-o", os.path.join(work, "frame.png"), "--save-float", npy],
                           check=True, capture_output=True)
            frame = torch.tensor(np.load(npy)[..., :3].reshape(-1, 3))
            scores.append(psnr(frame, torch.tensor(images[i, ..., :3].reshape(-1, 3))))
        results[t] = sum(scores) / len(scores)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gltf", default=os.path.join(assets_dir(), "gltf", "cesium_man.gltf"))
    ap.add_argument("--clip", default="0")
    ap.add_argument("--duration", type=float, default=2.0, help="clip length, seconds (normalised time 1)")
    ap.add_argument("--train-times", type=int, default=20, help="training times, evenly over the clip from 0")
    ap.add_argument("--held-out", default="0.25,0.75,1.25,1.75", help="held-out clip times, seconds")
    ap.add_argument("--views", type=int, default=32, help="train views per time")
    ap.add_argument("--test-views", type=int, default=8, help="test views per held-out time")
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--gaussians", type=int, default=4000)
    ap.add_argument("--static-steps", type=int, default=300, help="stage 1: canonical gaussians on the first time")
    ap.add_argument("--track-steps", type=int, default=80, help="stage 2: steps per training time")
    ap.add_argument("--rigidity", type=float, default=2.0, help="stage 2: weight of the neighbours' isometry")
    ap.add_argument("--distill-steps", type=int, default=1200, help="stage 3: regression steps")
    ap.add_argument("--steps", type=int, default=600, help="stage 4: end-to-end steps")
    ap.add_argument("--batch", type=int, default=2, help="views per step (stages 1 and 4)")
    ap.add_argument("--lr-grid", type=float, default=2e-3, help="stage 4: HexPlane learning rate (decays to 1/20)")
    ap.add_argument("--lr-mlp", type=float, default=5e-4, help="stage 4: deformation MLP learning rate (decays to 1/20)")
    ap.add_argument("--probe", action="store_true", help="also score the held-out views between the stages")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--splatforge", default=os.path.join(REPO, "build", "release", "apps", "splatforge", "splatforge"))
    ap.add_argument("--out", default=os.path.join(REPO, "models", "cesium_man_4d.onnx"))
    ap.add_argument("--work", default="", help="folder for the views (default: a temporary one, removed)")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    # The backward of a gather (index_put_ with accumulate) adds in thread order unless told otherwise.
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(args.seed)
    log = lambda s: print(s, flush=True)
    work = args.work or tempfile.mkdtemp(prefix="sf_train4d_")
    os.makedirs(work, exist_ok=True)
    start = clock.time()

    train_times = [args.duration * k / args.train_times for k in range(args.train_times)]
    held_times = [float(x) for x in args.held_out.split(",") if x]
    views, test_views, held = [], [], {}
    for t in train_times + held_times:
        is_train = t in train_times
        folder = os.path.join(work, f"t{t:.4f}")
        summary = render_views(args.splatforge, args.gltf, args.clip, t, args.size, args.views if is_train else 1,
                               0 if is_train else args.test_views, folder)
        images, w2cs, fx = load_split(folder, "train" if is_train else "test")
        u = t / args.duration
        vs = [View(w2cs[i], summary["scale"], summary["offset"], fx, args.size, images[i], u) for i in range(len(images))]
        (views if is_train else test_views).extend(vs)
        if not is_train:
            held[t] = (folder, summary, args.duration)
    t_views = clock.time() - start
    log(f"views: {len(views)} train images at {len(train_times)} times, {len(test_views)} test images at held-out times "
        f"{held_times}, {args.size}x{args.size}, {t_views:.1f} s")

    xyz, rgb, cell, cells = visual_hull_points([v for v in views if v.u == 0.0], args.gaussians, 64, gen)
    log(f"canonical: {args.gaussians} gaussians on {cells} surface cells of the first time's visual hull")
    model = Gaussians4D(xyz, rgb, torch.tensor(0.5 * float(cell)), gen)
    t_train = train(model, views, args, gen, log,
                    probe=lambda what: log(f"  {what}: held-out PSNR {evaluate(model, test_views):.2f} dB (torch rasterizer)") if args.probe else None)
    log(f"trained in {t_train:.1f} s")

    train_psnr = evaluate(model, views[:: max(1, len(views) // 64)])
    held_psnr = evaluate(model, test_views)
    static_psnr = evaluate(model, test_views, deform=False)
    log(f"torch rasterizer, PSNR over black: train views {train_psnr:.2f} dB; held-out times, test views {held_psnr:.2f} dB; "
        f"canonical gaussians without the deformation {static_psnr:.2f} dB")
    for t in held_times:
        vs = [v for v in test_views if abs(v.u - t / args.duration) < 1e-9]
        wrong = (t / args.duration + 0.25) % 1.0
        log(f"  held-out t={t:g} s: model at t {evaluate(model, vs):.2f} dB, model at t + {0.25 * args.duration:g} s "
            f"{evaluate(model, vs, at=wrong):.2f} dB")

    model.eval()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.onnx.export(model, (torch.zeros(1, dtype=torch.float32),), args.out, input_names=["time"],
                      output_names=["gaussians", "rgb", "num_points"], opset_version=17, do_constant_folding=False)
    log(f"wrote {args.out}: {os.path.getsize(args.out)} bytes")
    info = subprocess.run([args.splatforge, "onnx", "info", args.out], capture_output=True, text=True)
    log(info.stdout.strip() if info.returncode == 0 else info.stderr.strip())
    if info.returncode != 0:
        sys.exit("the engine refused the model")
    scores = engine_psnr(args.splatforge, args.out, work, held)
    log("engine frame (render --backend cpu) vs the engine's views at held-out times: " +
        ", ".join(f"t={t:g} s {p:.2f} dB" for t, p in scores.items()))
    log(f"total {clock.time() - start:.1f} s")
    if not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
