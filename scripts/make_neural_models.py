#!/usr/bin/python3
"""Makes the demo neural gaussian generators in models/ with Debian's python3-torch and python3-onnx.

  gaussians4d.onnx  a 4DGS-style model: canonical gaussians deformed by a HexPlane field (six feature
                    planes over (x, y, z, t), sampled with GridSample, align_corners) and a small MLP,
                    driven by the input `time`; exported the way the 4DGS ONNX template of the WebGPU
                    platform exports (docs/neural.md): outputs gaussian_f16 [MAX_N, 10] float16, color_sh
                    [MAX_N, 48] float16 (SH degree 3, channel-interleaved), num_points int32 [1], rows past
                    num_points zero; opset 17, no constant folding.

Next to each model, the outputs torch computed for a few inputs, as serialized TensorProtos
(<model>.t<time>.<output>.pb), the independent oracle of the executor tests. The weights are seeded random
values with a hand-set deformation scale (no training data is involved); the canonical gaussians form a
coloured torus knot so a render shows the motion.

Run from the repository root: scripts/make_neural_models.py [--out models]
"""
import argparse
import itertools
import math
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

MAX_N = 2048        # the template pads every output to a fixed capacity (its MAX_N is 4,000,000)
N = 1500            # canonical gaussians
TIMES = [0.0, 0.35, 0.8]


def torus_knot(n, seed):
    g = torch.Generator().manual_seed(seed)
    s = torch.linspace(0, 2 * math.pi, n + 1)[:-1]
    p, q = 2, 3
    r = 0.6 + 0.25 * torch.cos(q * s)
    pos = torch.stack([r * torch.cos(p * s), r * torch.sin(p * s), 0.25 * torch.sin(q * s)], -1)
    pos = pos + 0.02 * torch.randn(n, 3, generator=g)
    scales = torch.log(torch.full((n, 3), 0.03) * (0.7 + 0.6 * torch.rand(n, 3, generator=g)))
    rot = torch.randn(n, 4, generator=g)
    rot = rot / rot.norm(dim=-1, keepdim=True)
    opacity = torch.full((n, 1), 2.0) + 0.5 * torch.randn(n, 1, generator=g)  # logits
    hue = s / (2 * math.pi)
    rgb = torch.stack([0.5 + 0.5 * torch.cos(2 * math.pi * (hue + k / 3)) for k in range(3)], -1)
    shs = torch.zeros(n, 16, 3)
    shs[:, 0, :] = (rgb - 0.5) / 0.28209479177387814
    shs[:, 1:, :] = 0.05 * torch.randn(n, 15, 3, generator=g)
    return pos, scales, rot, opacity, shs


def poc_fre(x, poc):
    emb = (x.unsqueeze(-1) * poc).flatten(-2)
    return torch.cat([x, emb.sin(), emb.cos()], -1)


def hexplane_features(levels, x):
    """The HexPlane features of points x = (x, y, z, t) in [-1, 1]: per level, the product over the six pairs of
    coordinates of each plane's bilinear sample, the levels concatenated (scripts/train_gltf_4d.py uses it too)."""
    feats = []
    for planes in levels:
        f = 1.0
        for ci, comb in enumerate(itertools.combinations(range(4), 2)):
            coords = x[..., list(comb)].view(1, 1, -1, 2)
            s = F.grid_sample(planes[ci], coords, align_corners=True, mode="bilinear", padding_mode="border")
            f = f * s.view(planes[ci].shape[1], -1).transpose(0, 1)
        feats.append(f)
    return torch.cat(feats, -1)


class HexPlane(nn.Module):
    """Six planes over the pairs of (x, y, z, t), two resolutions, features multiplied over planes."""

    def __init__(self, bounds, reso, out_dim, multires, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("aabb", torch.tensor([[bounds] * 3, [-bounds] * 3]))
        self.levels = nn.ModuleList()
        self.feat_dim = 0
        for m in multires:
            res = [r * m for r in reso[:3]] + reso[3:]
            planes = nn.ParameterList()
            for comb in itertools.combinations(range(4), 2):
                shape = [1, out_dim] + [res[c] for c in comb[::-1]]
                if 3 in comb:  # time planes around one with a smooth variation over time
                    t = torch.linspace(0, 1, shape[2]).view(1, 1, -1, 1)
                    plane = 1 + 0.8 * torch.sin(2 * math.pi * t + torch.rand(shape, generator=g) * 6.28)
                else:
                    plane = 0.5 + torch.rand(shape, generator=g)
                planes.append(nn.Parameter(plane))
            self.levels.append(planes)
            self.feat_dim += out_dim

    def forward(self, pts, t):
        pts = (pts - self.aabb[0]) * (2.0 / (self.aabb[1] - self.aabb[0])) - 1.0
        return hexplane_features(self.levels, torch.cat([pts, t], -1))


def head(w, out):
    return nn.Sequential(nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, out))


class Deformation(nn.Module):
    def __init__(self, seed, width=32):
        super().__init__()
        self.grid = HexPlane(1.3, [8, 8, 8, 6], 8, [1, 2], seed)
        self.feature_out = nn.Sequential(nn.Linear(self.grid.feat_dim, width), nn.ReLU(), nn.Linear(width, width))
        self.pos_deform, self.scales_deform = head(width, 3), head(width, 3)
        self.rotations_deform, self.opacity_deform, self.shs_deform = head(width, 4), head(width, 1), head(width, 48)
        with torch.no_grad():  # deformations of a visible but bounded size
            for h, gain in ((self.pos_deform, 2.0), (self.scales_deform, 0.2), (self.rotations_deform, 0.2),
                            (self.opacity_deform, 0.2), (self.shs_deform, 0.1)):
                h[-1].weight.mul_(gain)
                h[-1].bias.zero_()
        self.register_buffer("pos_poc", torch.tensor([1.0, 2.0, 4.0]))

    def forward(self, point, scales, rotations, opacity, shs, t):
        point_emb = poc_fre(point, self.pos_poc)
        hidden = self.feature_out(self.grid(point_emb[:, :3], t[:, :1]))
        pts = point_emb[:, :3] + self.pos_deform(hidden)
        scales = scales + self.scales_deform(hidden)
        rotations = rotations + self.rotations_deform(hidden)
        opacity = opacity + self.opacity_deform(hidden)
        shs = shs + self.shs_deform(hidden).reshape([shs.shape[0], 16, 3])
        return pts, scales, rotations, opacity, shs


def quat_to_rotmat(q):
    q = q / torch.clamp(q.norm(dim=-1, keepdim=True), min=1e-12)
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        torch.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        torch.stack([2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)], -1),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z], -1),
    ], -2)


class Gaussians4D(nn.Module):
    def __init__(self, seed=7):
        super().__init__()
        pos, scales, rot, opacity, shs = torus_knot(N, seed)
        for k, v in dict(positions=pos, scales=scales, rotations=rot, opacity=opacity, shs=shs).items():
            self.register_buffer(k, v)
        self.deformation = Deformation(seed + 1)

    def forward(self, time):
        t = time.repeat(self.positions.shape[0], 1)
        xyz, scaling, rot, opacity, shs = self.deformation(self.positions, self.scales, self.rotations, self.opacity, self.shs, t)
        scaling = torch.exp(scaling)
        rot = F.normalize(rot)
        opacity = torch.sigmoid(opacity)
        r = quat_to_rotmat(rot)
        cov = (r * (scaling * scaling).unsqueeze(-2)) @ r.transpose(-1, -2)
        cov6 = torch.stack([cov[:, 0, 0], cov[:, 0, 1], cov[:, 0, 2], cov[:, 1, 1], cov[:, 1, 2], cov[:, 2, 2]], -1)
        gauss = torch.cat([xyz, opacity.view(-1, 1), cov6], 1)
        # Channel-separated rest coefficients interleaved per coefficient, as the template's pack_sh_to_48.
        sh = shs.transpose(1, 2).reshape(shs.shape[0], -1)  # [R0..R15, G0..G15, B0..B15]
        rest = torch.stack([sh[:, 1:16], sh[:, 17:32], sh[:, 33:48]], 2).reshape(shs.shape[0], 45)
        sh48 = torch.cat([torch.stack([sh[:, 0], sh[:, 16], sh[:, 32]], 1), rest], 1).to(torch.float16)
        gauss16 = gauss.to(torch.float16)
        z_g = (gauss16[:1, :1] - gauss16[:1, :1]).reshape(())
        z_s = (sh48[:1, :1] - sh48[:1, :1]).reshape(())
        num_points = torch.tensor([gauss16.shape[0]], dtype=torch.int32)
        gauss_fixed = torch.cat([gauss16, z_g.expand(MAX_N, 10)], 0)[:MAX_N, :]
        sh_fixed = torch.cat([sh48, z_s.expand(MAX_N, 48)], 0)[:MAX_N, :]
        return gauss_fixed.to(torch.float16), sh_fixed, num_points


class AnchorDecoder(nn.Module):
    """Scaffold-style: anchors with features and learned offsets; an MLP of (feature, view direction,
    distance) decodes K gaussians per anchor for the current camera. Inputs: the view matrix (column-major
    world-to-camera, as the platform passes it)."""

    def __init__(self, anchors=400, k=4, feat=16, width=32, seed=11):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        s = torch.rand(anchors, generator=g) * 2 * math.pi
        u = torch.rand(anchors, generator=g) * 2 - 1
        pos = torch.stack([torch.sqrt(1 - u * u) * torch.cos(s), u, torch.sqrt(1 - u * u) * torch.sin(s)], -1) * 0.8
        self.register_buffer("anchors", pos)
        self.register_buffer("features", torch.randn(anchors, feat, generator=g))
        self.register_buffer("offsets", 0.06 * torch.randn(anchors, k, 3, generator=g))
        self.k = k
        self.mlp_opacity = nn.Sequential(nn.Linear(feat + 4, width), nn.ReLU(), nn.Linear(width, k))
        self.mlp_color = nn.Sequential(nn.Linear(feat + 4, width), nn.ReLU(), nn.Linear(width, 3 * k))
        self.mlp_cov = nn.Sequential(nn.Linear(feat + 4, width), nn.ReLU(), nn.Linear(width, 7 * k))
        with torch.no_grad():
            self.mlp_opacity[-1].bias.fill_(2.0)

    def forward(self, camera):
        m = camera.view(4, 4)
        centre = -(m[:3, :3] @ m[3, :3])  # C = -R^T t from the column-major [[R^T, 0], [t^T, 1]]
        d = self.anchors - centre
        dist = d.norm(dim=-1, keepdim=True)
        h = torch.cat([self.features, d / dist, dist], -1)
        n = self.anchors.shape[0] * self.k
        opacity = torch.sigmoid(self.mlp_opacity(h)).reshape(n, 1)
        rgb = torch.sigmoid(self.mlp_color(h)).reshape(n, 3)
        cov = self.mlp_cov(h).reshape(n, 7)
        scale = 0.02 * torch.exp(torch.tanh(cov[:, :3]))
        rot = F.normalize(cov[:, 3:7] + torch.tensor([1.0, 0, 0, 0]))
        xyz = (self.anchors.unsqueeze(1) + self.offsets).reshape(n, 3)
        r = quat_to_rotmat(rot)
        c = (r * (scale * scale).unsqueeze(-2)) @ r.transpose(-1, -2)
        cov6 = torch.stack([c[:, 0, 0], c[:, 0, 1], c[:, 0, 2], c[:, 1, 1], c[:, 1, 2], c[:, 2, 2]], -1)
        gauss = torch.cat([xyz, opacity, cov6], 1)
        return gauss, rgb, torch.tensor([n], dtype=torch.int32)


class ProceduralAnchors(AnchorDecoder):
    """AnchorDecoder at benchmark scale (--anchors): procedural anchors (a golden spiral on a sphere),
    features and offsets, stored as float16 and cast to float32 in the graph (constants the loader folds),
    so that a model of millions of gaussians stays half the size; the per-frame work (view-dependent MLP
    decode of K gaussians per anchor) is the same."""

    def __init__(self, anchors, k=10, feat=16, width=32):
        super().__init__(anchors=1, k=k, feat=feat, width=width)
        i = torch.arange(anchors, dtype=torch.float32)
        golden = math.pi * (3.0 - math.sqrt(5.0))
        y = 1 - 2 * (i + 0.5) / anchors
        r = torch.sqrt(1 - y * y)
        pos = torch.stack([r * torch.cos(golden * i), y, r * torch.sin(golden * i)], -1) * 0.8
        f = torch.arange(feat, dtype=torch.float32)
        kk = torch.arange(k * 3, dtype=torch.float32)
        del self.anchors, self.features, self.offsets
        self.register_buffer("anchors_h", pos.half())
        self.register_buffer("features_h", torch.sin(i.unsqueeze(1) * (0.37 + 0.11 * f).unsqueeze(0)).half())
        self.register_buffer("offsets_h", (0.02 * torch.sin(i.unsqueeze(1) * (0.53 + 0.07 * kk).unsqueeze(0))).reshape(anchors, k, 3).half())

    def forward(self, camera):
        self.anchors = self.anchors_h.float()
        self.features = self.features_h.float()
        self.offsets = self.offsets_h.float()
        return super().forward(camera)


class LbsAvatar(nn.Module):
    """Canonical gaussians on a two-bone limb (a tapered tube along +x) with skinning weights to joint 0
    (origin) and joint 1 (x = 0.5); the input `pose` [2, 4] holds each joint's local rotation as a unit
    quaternion (w, x, y, z). Linear blend skinning of centres and covariances (A Sigma A^T)."""

    def __init__(self, n=1200, seed=5):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        x = torch.rand(n, generator=g)
        a = torch.rand(n, generator=g) * 2 * math.pi
        radius = 0.12 - 0.05 * x
        pos = torch.stack([x, radius * torch.cos(a), radius * torch.sin(a)], -1)
        w1 = torch.clamp((x - 0.4) / 0.2, 0, 1)
        self.register_buffer("positions", pos)
        self.register_buffer("weights", torch.stack([1 - w1, w1], -1))
        s = torch.full((n, 3), 0.025)
        self.register_buffer("cov_rest", torch.diag_embed(s * s))
        rgb = torch.stack([0.9 - 0.5 * x, 0.4 + 0.3 * torch.cos(a), 0.3 + 0.6 * x], -1)
        self.register_buffer("rgb", rgb)
        self.register_buffer("joints", torch.tensor([[0.0, 0, 0], [0.5, 0, 0]]))

    def forward(self, pose):
        r0 = quat_to_rotmat(pose[0:1])[0]
        r1 = quat_to_rotmat(pose[1:2])[0]
        j1 = self.joints[1]
        # World transforms of the joints' skinning: x -> A_j x + b_j.
        a0, b0 = r0, torch.zeros(3)
        a1 = r0 @ r1
        b1 = r0 @ j1 - a1 @ j1
        w = self.weights
        a = w[:, 0, None, None] * a0 + w[:, 1, None, None] * a1
        b = w[:, 0, None] * b0 + w[:, 1, None] * b1
        xyz = (a @ self.positions.unsqueeze(-1)).squeeze(-1) + b
        c = a @ self.cov_rest @ a.transpose(-1, -2)
        cov6 = torch.stack([c[:, 0, 0], c[:, 0, 1], c[:, 0, 2], c[:, 1, 1], c[:, 1, 2], c[:, 2, 2]], -1)
        n = xyz.shape[0]
        gauss = torch.cat([xyz, torch.full((n, 1), 0.9), cov6], 1)
        return gauss, self.rgb, torch.tensor([n], dtype=torch.int32)


class TinyUNet(nn.Module):
    """Image to image post-processing: RGB [1, 3, H, W] in [0, 1] -> the same, a two-level U-Net (Conv,
    BatchNorm folded at export, LeakyRelu, stride-2 Conv down, bilinear Resize up, skip Concat) whose output
    is the input plus a bounded residual (a mild stylisation). H and W are dynamic."""

    def __init__(self, seed=3):
        super().__init__()
        torch.manual_seed(seed)
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.LeakyReLU(0.1))
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1))
        self.dec = nn.Sequential(nn.Conv2d(24, 8, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(8, 3, 1))
        with torch.no_grad():
            self.enc[1].running_mean.uniform_(-0.1, 0.1)
            self.enc[1].running_var.uniform_(0.5, 1.5)

    def forward(self, image):
        e = self.enc(image)
        d = self.down(e)
        u = F.interpolate(d, size=(e.shape[2], e.shape[3]), mode="bilinear", align_corners=False)
        return torch.clamp(image + 0.15 * torch.tanh(self.dec(torch.cat([e, u], 1))), 0, 1)


class OneLayer(nn.Module):
    """Benchmarks: one MLP layer over rows computed in the graph from the input `time` (a broadcast
    Relu(t + r), one fused elementwise node), then Relu(Linear(32, 32)): a single GEMM and its producer,
    timed alone."""

    def __init__(self, rows, width=32):
        super().__init__()
        self.rows, self.width = rows, width
        self.r = nn.Parameter(torch.randn(1, width))
        self.layer = nn.Linear(width, width)

    def forward(self, t):
        x = torch.relu(t.reshape(1, 1).expand(self.rows, self.width) + self.r)
        return torch.relu(self.layer(x))


def save_outputs(model, out_dir, stem, names):
    for t in TIMES:
        with torch.no_grad():
            outs = model(torch.tensor([t], dtype=torch.float32))
        for name, value in zip(names, outs):
            proto = numpy_helper.from_array(value.numpy(), name)
            with open(os.path.join(out_dir, f"{stem}.t{t:g}.{name}.pb"), "wb") as f:
                f.write(proto.SerializeToString())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="models")
    ap.add_argument("--gaussians", type=int, default=0,
                    help="benchmarks: write only the 4DGS-style model, with this many gaussians (and capacity), no oracle files")
    ap.add_argument("--anchors", type=int, default=0,
                    help="benchmarks: write only a Scaffold-style model of this many anchors (10 gaussians each), computed in the graph")
    ap.add_argument("--layer", type=int, default=0,
                    help="benchmarks: write only a one-layer model (layer_ROWS.onnx: ROWS x 32 x 32 after a broadcast elementwise producer)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    if args.layer > 0:
        path = os.path.join(args.out, "layer_%d.onnx" % args.layer)
        torch.onnx.export(OneLayer(args.layer).eval(), (torch.ones(1, dtype=torch.float32),), path, input_names=["time"],
                          output_names=["y"], opset_version=17)
        report(path)
        return
    if args.anchors > 0:
        model = ProceduralAnchors(args.anchors).eval()
        path = os.path.join(args.out, "anchors_%d.onnx" % (args.anchors * model.k))
        torch.onnx.export(model, (view_cm(0.0),), path, input_names=["camera_matrix"], output_names=["gaussians", "rgb", "num_points"],
                          opset_version=17, do_constant_folding=False)
        report(path)
        return
    if args.gaussians > 0:
        global N, MAX_N
        N = MAX_N = args.gaussians
        path = os.path.join(args.out, "gaussians4d_%d.onnx" % N)
        torch.onnx.export(Gaussians4D().eval(), (torch.ones(1, dtype=torch.float32),), path, input_names=["time"],
                          output_names=["gaussian_f16", "color_sh", "num_points"], opset_version=17, do_constant_folding=False,
                          export_params=True)
        report(path)
        return
    model = Gaussians4D().eval()
    path = os.path.join(args.out, "gaussians4d.onnx")
    names = ["gaussian_f16", "color_sh", "num_points"]
    torch.onnx.export(model, (torch.ones(1, dtype=torch.float32),), path, input_names=["time"], output_names=names,
                      opset_version=17, do_constant_folding=False, export_params=True)
    save_outputs(model, args.out, "gaussians4d", names)
    report(path)

    # Scaffold-style anchors, view-dependent: outputs for two cameras.
    anchors = AnchorDecoder().eval()
    path = os.path.join(args.out, "anchors.onnx")
    cams = {"front": view_cm(0.0), "side": view_cm(1.2)}
    torch.onnx.export(anchors, (cams["front"],), path, input_names=["camera_matrix"], output_names=["gaussians", "rgb", "num_points"],
                      opset_version=17, do_constant_folding=False)
    for key, cam in cams.items():
        with torch.no_grad():
            outs = anchors(cam)
        write_pb(args.out, f"anchors.{key}", ["camera_matrix"] + ["gaussians", "rgb", "num_points"], [cam] + list(outs))
    report(path)

    # LBS avatar: rest pose and a bent elbow.
    avatar = LbsAvatar().eval()
    path = os.path.join(args.out, "avatar.onnx")
    rest = torch.tensor([[1.0, 0, 0, 0], [1.0, 0, 0, 0]])
    bent = torch.tensor([[math.cos(0.2), 0, 0, math.sin(0.2)], [math.cos(0.6), 0, 0, math.sin(0.6)]])
    torch.onnx.export(avatar, (rest,), path, input_names=["pose"], output_names=["gaussians", "rgb", "num_points"],
                      opset_version=17, do_constant_folding=False)
    for key, pose in (("rest", rest), ("bent", bent)):
        with torch.no_grad():
            outs = avatar(pose)
        write_pb(args.out, f"avatar.{key}", ["pose", "gaussians", "rgb", "num_points"], [pose] + list(outs))
    report(path)

    # Post-processing U-Net, dynamic size; one test image.
    unet = TinyUNet().eval()
    path = os.path.join(args.out, "unet.onnx")
    image = torch.rand(1, 3, 24, 40, generator=torch.Generator().manual_seed(9))
    torch.onnx.export(unet, (image,), path, input_names=["image"], output_names=["output"], opset_version=17,
                      dynamic_axes={"image": {2: "height", 3: "width"}, "output": {2: "height", 3: "width"}})
    with torch.no_grad():
        write_pb(args.out, "unet.sample", ["image", "output"], [image, unet(image)])
    report(path)


def view_cm(angle):
    """A camera 3 units from the origin at `angle` about y, looking at it (x right, y down, z forward),
    as the column-major [4, 4] tensor the contract passes."""
    eye = torch.tensor([3 * math.sin(angle), 0.0, -3 * math.cos(angle)])
    fwd = -eye / eye.norm()
    right = torch.linalg.cross(torch.tensor([0.0, -1.0, 0.0]), fwd)
    right = right / right.norm()
    down = torch.linalg.cross(fwd, right)
    r = torch.stack([right, down, fwd])
    t = -r @ eye
    m = torch.eye(4)
    m[:3, :3] = r
    m[:3, 3] = t
    return m.t().contiguous()


def write_pb(out_dir, stem, names, values):
    for name, value in zip(names, values):
        proto = numpy_helper.from_array(value.numpy(), name)
        with open(os.path.join(out_dir, f"{stem}.{name}.pb"), "wb") as f:
            f.write(proto.SerializeToString())


def report(path):
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"wrote {path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, ops: {' '.join(ops)}")


if __name__ == "__main__":
    main()
