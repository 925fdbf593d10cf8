#!/usr/bin/python3
"""Makes the demo decoder character bundle in models/characters/orb_head/ with Debian's python3-torch and
python3-onnx (docs/formats/character-bundle.md):

  scene.json               multi_region, order [head, eyes]; rig "skinned" (head/head.glb), arkit52 space
  head/head.glb            the head branch's mesh and rig: a UV sphere of radius 0.1 m at (0, 1.6, 0), one
                           skin joint, two ARKit morph targets (jawOpen stretches the lower half down,
                           cheekPuff widens it)
  head/geom.onnx           verts [1, V, 3] -> geom_uv [1, 4, R, R], code [1, 6]: the ellipsoid of the posed
                           vertices' bounds, c + r * S(u, v), S the unit sphere at the texel's uv (an analytic
                           surface: the lifted gaussians have a closed form), opacity logit 4
  head/appr.onnx           view [1, 6, R, R], code [1, 6] -> color_uv [1, 3, R, R]: a skin tone shaded by the
                           view direction, base * (0.45 + 0.55 * relu(-d . S))
  eyes/mesh.json, .bin     the eyes branch's static geometry: two UV spheres of radius 12 mm, left eye in
                           u 0..0.5, right eye in u 0.5..1
  eyes/geom.onnx           verts, gaze [1, 4] -> geom_uv: each eyeball rotated by its gaze (yaw about y,
                           pitch positive-down about x)
  eyes/appr.onnx           view, gaze -> color_uv: sclera and a dark iris around the eye's local +z

Decoder frame of both branches: center (0, 1.6, 0), scale 10 (the unit sphere). The weights are constants
(nothing is trained); opset 17, no constant folding.

Run from the repository root: scripts/make_character_bundle.py [--out models/characters/orb_head]
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn

HEAD_RES = 96
EYES_RES = 48
CENTER = np.array([0.0, 1.6, 0.0])
SCALE = 10.0
HEAD_R = 0.1
EYE_R = 0.012
EYE_CENTRES = [np.array([0.033, 1.625, 0.088]), np.array([-0.033, 1.625, 0.088])]  # left eye on +x (the head faces +z)


def sphere_dirs(u, v):
    """Unit sphere at uv: theta = pi v from the top, phi = 2 pi u - pi (u = 0.5 faces +z)."""
    th = math.pi * v
    ph = 2 * math.pi * u - math.pi
    return np.stack([np.sin(th) * np.sin(ph), np.cos(th), np.sin(th) * np.cos(ph)], 0)


def texel_dirs(width, height, u0=0.0, u1=1.0):
    """Sphere directions of a width x height block of texels spanning u0..u1 (texel centres), [3, H, W]."""
    j = (np.arange(width) + 0.5) / width
    i = (np.arange(height) + 0.5) / height
    u = u0 + (u1 - u0) * j[None, :]
    v = np.repeat(i[:, None], width, 1)
    return sphere_dirs(np.repeat(u, height, 0), v).astype(np.float32)


def uv_sphere(rings, segments, radius, centre, u0=0.0, u1=1.0):
    pos, uv, idx = [], [], []
    for r in range(rings + 1):
        for s in range(segments + 1):
            u = u0 + (u1 - u0) * s / segments
            v = r / rings
            pos.append(centre + radius * sphere_dirs(np.array(s / segments), np.array(v)))
            uv.append([u, v])
    for r in range(rings):
        for s in range(segments):
            a = r * (segments + 1) + s
            b = a + segments + 1
            idx += [a, b, a + 1, a + 1, b, b + 1]
    return np.array(pos, np.float32), np.array(uv, np.float32), np.array(idx, np.uint32)


def write_glb(path, pos, uv, idx, targets, target_names):
    """A skinned glTF binary: one mesh, joints root (0), head (1) and the eyes eye_L (2), eye_R (3) under it,
    every vertex on the head joint."""
    n = len(pos)
    joints = np.tile(np.array([1, 0, 0, 0], np.uint16), (n, 1))
    weights = np.tile(np.array([1, 0, 0, 0], np.float32), (n, 1))
    head_at = np.array([0.0, 1.5, 0.0], np.float32)
    eyes_at = [EYE_CENTRES[0].astype(np.float32), EYE_CENTRES[1].astype(np.float32)]
    ibm = np.stack([np.eye(4, dtype=np.float32) for _ in range(4)])
    ibm[1][:3, 3] = -head_at  # inverse bind of a translated joint
    ibm[2][:3, 3] = -eyes_at[0]
    ibm[3][:3, 3] = -eyes_at[1]
    ibm_cm = np.ascontiguousarray(ibm.transpose(0, 2, 1))  # column-major
    blobs, views, accessors = [], [], []

    def add(arr, comp, typ, target=None, minmax=False):
        data = np.ascontiguousarray(arr).tobytes()
        off = sum(len(b) for b in blobs)
        pad = (-len(data)) % 4
        blobs.append(data + b"\0" * pad)
        view = {"buffer": 0, "byteOffset": off, "byteLength": len(data)}
        if target:
            view["target"] = target
        views.append(view)
        acc = {"bufferView": len(views) - 1, "componentType": comp, "count": int(arr.shape[0]), "type": typ}
        if minmax:
            acc["min"] = [float(x) for x in arr.min(0)]
            acc["max"] = [float(x) for x in arr.max(0)]
        accessors.append(acc)
        return len(accessors) - 1

    a_pos = add(pos, 5126, "VEC3", 34962, True)
    a_uv = add(uv, 5126, "VEC2", 34962)
    a_j = add(joints, 5123, "VEC4", 34962)
    a_w = add(weights, 5126, "VEC4", 34962)
    a_idx = add(idx, 5125, "SCALAR", 34963)
    a_t = [add(t.astype(np.float32), 5126, "VEC3", 34962, True) for t in targets]
    a_ibm = add(ibm_cm.reshape(4, 16), 5126, "MAT4")
    doc = {
        "asset": {"version": "2.0", "generator": "scripts/make_character_bundle.py"},
        "scene": 0,
        "scenes": [{"nodes": [0, 2]}],
        "nodes": [
            {"name": "root", "children": [1]},
            {"name": "head", "translation": [float(x) for x in head_at], "children": [3, 4]},
            {"name": "orb_head", "mesh": 0, "skin": 0},
            {"name": "eye_L", "translation": [float(x) for x in eyes_at[0] - head_at]},
            {"name": "eye_R", "translation": [float(x) for x in eyes_at[1] - head_at]},
        ],
        "skins": [{"joints": [0, 1, 3, 4], "inverseBindMatrices": a_ibm, "skeleton": 0}],
        "meshes": [{
            "name": "orb_head",
            "primitives": [{
                "attributes": {"POSITION": a_pos, "TEXCOORD_0": a_uv, "JOINTS_0": a_j, "WEIGHTS_0": a_w},
                "indices": a_idx, "mode": 4,
                "targets": [{"POSITION": a} for a in a_t],
            }],
            "weights": [0.0] * len(targets),
            "extras": {"targetNames": target_names},
        }],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": sum(len(b) for b in blobs)}],
    }
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * ((-len(js)) % 4)
    binary = b"".join(blobs)
    total = 12 + 8 + len(js) + 8 + len(binary)
    with open(path, "wb") as f:
        f.write(struct.pack("<III", 0x46546C67, 2, total))
        f.write(struct.pack("<II", len(js), 0x4E4F534A) + js)
        f.write(struct.pack("<II", len(binary), 0x004E4942) + binary)


class HeadGeom(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("dirs", torch.from_numpy(texel_dirs(HEAD_RES, HEAD_RES)))

    def forward(self, verts):
        mx = verts.amax(1)  # [1, 3]
        mn = verts.amin(1)
        c = (mx + mn) * 0.5
        r = (mx - mn) * 0.5
        xyz = c[:, :, None, None] + r[:, :, None, None] * self.dirs[None]
        opacity = torch.full_like(xyz[:, :1], 4.0)
        return torch.cat([xyz, opacity], 1), torch.cat([c, r], 1)


class HeadAppr(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("dirs", torch.from_numpy(texel_dirs(HEAD_RES, HEAD_RES)))
        self.register_buffer("base", torch.tensor([0.85, 0.65, 0.55]).reshape(1, 3, 1, 1))

    def forward(self, view, code):
        d = view[:, 0:3]
        facing = torch.relu(-(d * self.dirs[None]).sum(1, keepdim=True))
        # code is the geometry pass's cached code: it sizes nothing here but keeps the contract's input.
        tint = 1.0 + 0.0 * code.sum()
        return self.base * (0.45 + 0.55 * facing) * tint


def rotation(pitch, yaw):
    """R = Ry(yaw) Rx(pitch); positive pitch turns +z down (towards -y)."""
    cp, sp, cy, sy = torch.cos(pitch), torch.sin(pitch), torch.cos(yaw), torch.sin(yaw)
    one, zero = torch.ones_like(cp), torch.zeros_like(cp)
    rx = torch.stack([torch.stack([one, zero, zero]), torch.stack([zero, cp, -sp]), torch.stack([zero, sp, cp])])
    ry = torch.stack([torch.stack([cy, zero, sy]), torch.stack([zero, one, zero]), torch.stack([-sy, zero, cy])])
    return ry @ rx


class EyesGeom(nn.Module):
    def __init__(self, verts_per_eye):
        super().__init__()
        self.n = verts_per_eye
        half = EYES_RES // 2
        self.register_buffer("left", torch.from_numpy(texel_dirs(half, EYES_RES)).reshape(3, -1))
        self.register_buffer("right", torch.from_numpy(texel_dirs(half, EYES_RES)).reshape(3, -1))

    def forward(self, verts, gaze):
        out = []
        for e, dirs in enumerate([self.left, self.right]):
            v = verts[0, e * self.n:(e + 1) * self.n]  # [n, 3]
            c = (v.amax(0) + v.amin(0)) * 0.5
            r = (v.amax(0) - v.amin(0)) * 0.5
            rot = rotation(gaze[0, 2 * e], gaze[0, 2 * e + 1])
            p = c[:, None] + r[:, None] * (rot @ dirs)  # [3, H * W/2]
            out.append(p.reshape(3, EYES_RES, EYES_RES // 2))
        xyz = torch.cat(out, 2)[None]
        return torch.cat([xyz, torch.full_like(xyz[:, :1], 5.0)], 1)


class EyesAppr(nn.Module):
    def __init__(self):
        super().__init__()
        half = EYES_RES // 2
        local = texel_dirs(half, EYES_RES).reshape(3, -1)
        self.register_buffer("local", torch.from_numpy(local))
        iris = (local[2] > 0.9).astype(np.float32)  # around the eye's own +z
        pupil = (local[2] > 0.97).astype(np.float32)
        sclera = np.array([0.93, 0.92, 0.9], np.float32)[:, None]
        iris_rgb = np.array([0.25, 0.45, 0.6], np.float32)[:, None]
        rgb = sclera * (1 - iris) + iris_rgb * iris
        rgb = rgb * (1 - pupil) + 0.05 * pupil
        self.register_buffer("albedo", torch.from_numpy(np.ascontiguousarray(rgb)))

    def forward(self, view, gaze):
        out = []
        half = EYES_RES // 2
        for e in range(2):
            rot = rotation(gaze[0, 2 * e], gaze[0, 2 * e + 1])
            n = rot @ self.local  # [3, H * W/2]
            d = view[0, 0:3, :, e * half:(e + 1) * half].reshape(3, -1)
            facing = torch.relu(-(d * n).sum(0, keepdim=True))
            out.append((self.albedo * (0.55 + 0.45 * facing)).reshape(3, EYES_RES, half))
        return torch.cat(out, 2)[None]


def export(model, args, path, inputs, outputs):
    torch.onnx.export(model, args, path, input_names=inputs, output_names=outputs, opset_version=17, do_constant_folding=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/characters/orb_head")
    a = ap.parse_args()
    out = a.out
    os.makedirs(os.path.join(out, "head"), exist_ok=True)
    os.makedirs(os.path.join(out, "eyes"), exist_ok=True)

    # Head: mesh, morph targets, rig.
    pos, uv, idx = uv_sphere(24, 48, HEAD_R, CENTER)
    rel = pos - CENTER
    jaw = np.zeros_like(pos)
    jaw[:, 1] = np.where(rel[:, 1] < 0, 0.3 * rel[:, 1], 0.0)  # the lower half 30% longer
    puff = np.zeros_like(pos)
    puff[:, 0] = np.where(rel[:, 1] < 0, 0.2 * rel[:, 0], 0.0)  # the lower half 20% wider
    write_glb(os.path.join(out, "head", "head.glb"), pos, uv, idx, [jaw, puff], ["jawOpen", "cheekPuff"])
    verts = torch.from_numpy((pos - CENTER) * SCALE).float()[None]
    export(HeadGeom(), (verts,), os.path.join(out, "head", "geom.onnx"), ["verts"], ["geom_uv", "code"])
    view = torch.zeros(1, 6, HEAD_RES, HEAD_RES)
    export(HeadAppr(), (view, torch.zeros(1, 6)), os.path.join(out, "head", "appr.onnx"), ["view", "code"], ["color_uv"])

    # Eyes: static geometry of their own (mesh_bin + mesh_json), gaze-conditioned decoders.
    parts = [uv_sphere(12, 24, EYE_R, c, 0.5 * e, 0.5 * e + 0.5) for e, c in enumerate(EYE_CENTRES)]
    n = len(parts[0][0])
    epos = np.concatenate([p[0] for p in parts])
    euv = np.concatenate([p[1] for p in parts])
    eidx = np.concatenate([parts[0][2], parts[1][2] + n])
    with open(os.path.join(out, "eyes", "mesh.bin"), "wb") as f:
        f.write(epos.astype("<f4").tobytes() + euv.astype("<f4").tobytes() + eidx.astype("<u4").tobytes())
    mesh_json = {"vertex_count": len(epos), "triangle_count": len(eidx) // 3, "positions": {"offset": 0},
                 "uvs": {"offset": 12 * len(epos)}, "indices": {"offset": 20 * len(epos)}}
    with open(os.path.join(out, "eyes", "mesh.json"), "w") as f:
        json.dump(mesh_json, f, indent=2)
    everts = torch.from_numpy((epos - CENTER) * SCALE).float()[None]
    export(EyesGeom(n), (everts, torch.zeros(1, 4)), os.path.join(out, "eyes", "geom.onnx"), ["verts", "gaze"], ["geom_uv"])
    export(EyesAppr(), (torch.zeros(1, 6, EYES_RES, EYES_RES), torch.zeros(1, 4)), os.path.join(out, "eyes", "appr.onnx"), ["view", "gaze"], ["color_uv"])

    frame = {"center": [float(x) for x in CENTER], "scale": SCALE}
    scene = {
        "mode": "multi_region",
        "order": ["head", "eyes"],
        "branches": {
            "head": {"decoders": {"geom": "head/geom.onnx", "appr": "head/appr.onnx"}, "mesh_glb": "head/head.glb",
                     "uv_resolution": HEAD_RES, "frame": frame,
                     "lift": {"scale_mult": 0.6, "thickness": 0.15, "min_scale": 0.002, "max_scale": 0.2}},
            "eyes": {"decoders": {"geom": "eyes/geom.onnx", "appr": "eyes/appr.onnx"}, "mesh_bin": "eyes/mesh.bin",
                     "mesh_json": "eyes/mesh.json", "uv_resolution": EYES_RES, "frame": frame, "static_geometry": True,
                     "gaze_conditioned": True, "lift": {"scale_mult": 0.6, "thickness": 0.3, "min_scale": 0.001,
                                                        "max_scale": 0.05, "max_triangle_distance": 6.0}},
        },
        "rig": {"backend": "skinned", "pack": "head/head.glb", "vertex_count": len(pos)},
        "expression_space": {"kind": "arkit52"},
    }
    with open(os.path.join(out, "scene.json"), "w") as f:
        json.dump(scene, f, indent=2)
    print(f"wrote {out}: head {len(pos)} vertices, {HEAD_RES}x{HEAD_RES} texels; eyes {len(epos)} vertices, {EYES_RES}x{EYES_RES} texels")


if __name__ == "__main__":
    main()
