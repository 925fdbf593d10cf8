"""Tests of the splatforge Python module (python/, docs/python.md).

Every check compares with an independent oracle: PLY bytes parsed here with numpy, the closed-form image of
one gaussian, the values a cloud was built from, the CPU reference for the Vulkan renderer, and the glTF
animation written here for the scene test. Run by ctest as `python_module` (PYTHONPATH = the module's build
directory). Tests that need the shared assets or a Vulkan device skip with a message, and fail under CI=true.
"""

import base64
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

import splatforge

REPO = pathlib.Path(__file__).resolve().parents[2]
SH_C0 = 0.28209479177387814


def assets_dir():
    return pathlib.Path(os.environ.get("SPLATFORGE_ASSETS", REPO.parent / "shared" / "assets"))


def strict_ci():
    return os.environ.get("CI", "") in ("true", "1")


def skip_or_fail(test, message):
    if strict_ci():
        test.fail(message + " [CI=true: a test that cannot run is an error]")
    test.skipTest(message)


def require_asset(test, relative):
    path = assets_dir() / relative
    if not path.is_file():
        skip_or_fail(test, f"asset {relative} not found under {assets_dir()} (set SPLATFORGE_ASSETS to the shared assets directory)")
    return str(path)


def require_vulkan(test):
    if not splatforge.vulkan_available():
        skip_or_fail(test, "no Vulkan device (install mesa-vulkan-drivers for lavapipe)")


# ---- an independent PLY reader: header by hand, body by a numpy structured dtype ----

PLY_TYPES = {"char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "uint": "u4", "float": "f4",
             "double": "f8", "int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
             "float32": "f4", "float64": "f8"}


def read_ply_vertices(data):
    """The vertex element of a binary little-endian PLY whose first element is 'vertex', as a record array."""
    end = data.index(b"end_header\n") + len(b"end_header\n")
    lines = data[:end].decode("ascii").splitlines()
    assert lines[0] == "ply" and lines[1].startswith("format binary_little_endian"), lines[:2]
    count, fields, in_vertex = 0, [], False
    for line in lines[2:]:
        words = line.split()
        if words[0] == "element":
            in_vertex = words[1] == "vertex"
            if in_vertex:
                count = int(words[2])
            elif count:
                break  # elements after the vertex element do not change its offset
        elif words[0] == "property" and in_vertex:
            fields.append((words[2], "<" + PLY_TYPES[words[1]]))
    return np.frombuffer(data, dtype=np.dtype(fields), count=count, offset=end)


def expected_from_ply(v):
    """Activated values (what GaussianCloud holds) from raw PLY properties, by the INRIA 3DGS definitions."""
    names = v.dtype.names
    rest = sorted((n for n in names if n.startswith("f_rest_")), key=lambda n: int(n[7:]))
    per_channel = len(rest) // 3
    coeffs = 1 + per_channel
    sh = np.zeros((len(v), coeffs, 3), np.float64)
    for c in range(3):
        sh[:, 0, c] = v[f"f_dc_{c}"]
        for k in range(per_channel):  # f_rest is channel-major: channel * per_channel + (coefficient - 1)
            sh[:, 1 + k, c] = v[f"f_rest_{c * per_channel + k}"]
    q = np.stack([v[f"rot_{i}"] for i in range(4)], axis=1).astype(np.float64)
    return {
        "positions": np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64),
        "scales": np.exp(np.stack([v[f"scale_{i}"] for i in range(3)], axis=1).astype(np.float64)),
        "rotations": q / np.linalg.norm(q, axis=1, keepdims=True),
        "opacities": 1.0 / (1.0 + np.exp(-v["opacity"].astype(np.float64))),
        "sh": sh,
    }


def write_ply(path, columns, order):
    """A binary little-endian PLY of float32 properties in `order`, written byte by byte here."""
    n = len(next(iter(columns.values())))
    header = "ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % n
    header += "".join(f"property float {name}\n" for name in order) + "end_header\n"
    body = np.stack([np.asarray(columns[name], np.float32) for name in order], axis=1).astype("<f4").tobytes()
    pathlib.Path(path).write_bytes(header.encode("ascii") + body)


def random_cloud(n, sh_degree, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    return splatforge.Cloud(
        positions=rng.uniform(-1, 1, (n, 3)).astype(np.float32),
        scales=rng.uniform(0.01, 0.2, (n, 3)).astype(np.float32),
        rotations=(q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32),
        opacities=rng.uniform(0.05, 0.95, n).astype(np.float32),
        sh=rng.uniform(-0.5, 0.5, (n, (sh_degree + 1) ** 2, 3)).astype(np.float32))


def read_png_rgb8(data):
    """An 8-bit RGB, non-interlaced PNG decoded here: chunks, zlib, and the five scanline filters."""
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, color, interlace) == (8, 2, 0)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * 3
    out = np.zeros((height, stride), np.int32)
    for y in range(height):
        f, line = raw[y * (stride + 1)], np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        up = out[y - 1] if y else np.zeros(stride, np.int32)
        row = out[y]
        for x in range(stride):
            a = row[x - 3] if x >= 3 else 0
            b, c = up[x], (up[x - 3] if x >= 3 else 0)
            if f == 0:
                pred = 0
            elif f == 1:
                pred = a
            elif f == 2:
                pred = b
            elif f == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            row[x] = (line[x] + pred) & 255
    return out.reshape(height, width, 3).astype(np.uint8)


def psnr(a, b):
    a = np.clip(a[..., :3].astype(np.float64), 0, 1)
    b = np.clip(b[..., :3].astype(np.float64), 0, 1)
    mse = np.mean((a - b) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(1 / mse)


def assert_rotations_close(test, a, b, tol):
    """q and -q are one rotation: compare |<a, b>| with 1."""
    dots = np.abs(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64), axis=1))
    test.assertGreater(dots.min(), 1 - tol, f"worst rotation row {int(np.argmin(dots))}")


class ModuleTest(unittest.TestCase):
    def test_version_is_the_cmake_project_version(self):
        text = (REPO / "CMakeLists.txt").read_text()
        version = re.search(r"project\(splatforge VERSION ([0-9.]+)", text).group(1)
        self.assertEqual(splatforge.__version__, version)

    def test_errors_are_runtime_errors(self):
        self.assertTrue(issubclass(splatforge.Error, RuntimeError))
        self.assertTrue(issubclass(splatforge.FormatError, splatforge.Error))
        for name in ("load", "save", "render", "Cloud", "Scene", "auto_camera", "vulkan_available"):
            self.assertTrue(getattr(splatforge, name).__doc__, name)


class PlyOracleTest(unittest.TestCase):
    """(a) load() against a numpy parse of the same bytes."""

    def compare(self, cloud, expected):
        self.assertEqual(cloud.count, len(expected["positions"]))
        np.testing.assert_array_equal(cloud.positions, expected["positions"].astype(np.float32))
        np.testing.assert_allclose(cloud.scales, expected["scales"], rtol=2e-6, atol=0)
        np.testing.assert_allclose(cloud.rotations, expected["rotations"], rtol=0, atol=2e-7)
        np.testing.assert_allclose(cloud.opacities, expected["opacities"], rtol=0, atol=2e-7)
        np.testing.assert_array_equal(cloud.sh, expected["sh"].astype(np.float32))
        np.testing.assert_allclose(cloud.colors, 0.5 + SH_C0 * expected["sh"][:, 0, :], rtol=0, atol=1e-6)
        # colors is computed: read-only like the views, so a write cannot silently change nothing.
        with self.assertRaises(ValueError):
            cloud.colors[0, 0] = 1.0
        # Scene.frames()'s signature names its iterator type (not a C++ name).
        self.assertIn("splatforge.FrameIterator", splatforge.Scene.frames.__doc__)
        self.assertNotIn("anonymous", splatforge.Scene.frames.__doc__)

    def test_written_ply_with_sh_degree_1_and_shuffled_properties(self):
        rng = np.random.default_rng(7)
        n = 64
        cols = {name: rng.uniform(-1, 1, n) for name in ("x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity")}
        cols.update({f"scale_{i}": rng.uniform(-5, -1, n) for i in range(3)})
        cols.update({f"rot_{i}": rng.normal(size=n) for i in range(4)})
        cols.update({f"f_rest_{i}": rng.uniform(-0.3, 0.3, n) for i in range(9)})
        cols["confidence"] = rng.uniform(0, 1, n)  # unknown to the engine: kept, not interpreted
        order = list(cols)
        rng.shuffle(order)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "written.ply")
            write_ply(path, cols, order)
            data = pathlib.Path(path).read_bytes()
            cloud = splatforge.load(pathlib.Path(path))
        self.assertEqual((cloud.format, cloud.version, cloud.sh_degree), ("ply", 0, 1))
        self.assertEqual(cloud.file_bytes, len(data))
        self.compare(cloud, expected_from_ply(read_ply_vertices(data)))

    def test_real_capture(self):
        path = require_asset(self, "splats/biker.ply")
        data = pathlib.Path(path).read_bytes()
        cloud = splatforge.load(path)
        self.assertEqual(cloud.count, 152746)
        self.assertEqual(cloud.dropped_non_finite, 0)
        self.compare(cloud, expected_from_ply(read_ply_vertices(data)))
        # The same capture in the other two containers, within their quantization (docs/formats/spz.md).
        spz = splatforge.load(require_asset(self, "splats/biker.spz"))
        self.assertEqual((spz.format, spz.version, spz.count), ("spz", 4, 152746))
        self.assertLess(np.abs(spz.positions - cloud.positions).max(), 2.0 / 4096)

    def test_reordered_capture_is_a_permutation_of_its_rows(self):
        # scripts/bench/reorder_ply.py (the slot-order benchmark's input): the same rows, each once, in a new
        # order; the Morton order's codes do not decrease along it.
        path = require_asset(self, "splats/biker.ply")
        cloud = splatforge.load(path)
        script = REPO / "scripts" / "bench" / "reorder_ply.py"
        with tempfile.TemporaryDirectory() as d:
            for mode in ("morton", "shuffle"):
                out = os.path.join(d, mode + ".ply")
                subprocess.run([sys.executable, str(script), path, out, mode], check=True, capture_output=True)
                other = splatforge.load(out)
                self.assertEqual(other.count, cloud.count)
                a = np.concatenate([cloud.positions, cloud.opacities[:, None]], 1)
                b = np.concatenate([other.positions, other.opacities[:, None]], 1)
                self.assertFalse(np.array_equal(a, b))
                self.assertTrue(np.array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)]))
                if mode == "morton":
                    p = other.positions.astype(np.float64)
                    lo, hi = p.min(0), p.max(0)
                    q = ((p - lo) / np.maximum(hi - lo, 1e-9) * 1023.0).astype(np.uint64)
                    code = np.zeros(len(p), np.uint64)
                    for bit in range(10):
                        for axis in range(3):
                            code |= ((q[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + axis)
                    self.assertTrue(np.all(np.diff(code.astype(np.int64)) >= 0))
            bad = subprocess.run([sys.executable, str(script), path, os.path.join(d, "x.ply"), "sideways"],
                                 capture_output=True, text=True)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("morton|shuffle", bad.stderr)

    def test_views_are_read_only_and_share_the_cloud_storage(self):
        cloud = random_cloud(10, 1, seed=3)
        p = cloud.positions
        self.assertEqual((p.dtype, p.shape, p.flags.writeable), (np.float32, (10, 3), False))
        self.assertTrue(np.shares_memory(p, cloud.positions))  # a view, not a copy
        self.assertEqual(cloud.sh.shape, (10, 4, 3))
        self.assertEqual(cloud.rotations.shape, (10, 4))
        with self.assertRaises(ValueError):
            p[0, 0] = 1
        cloud.positions = p + np.float32(1)  # assignment replaces the storage
        np.testing.assert_array_equal(cloud.positions, p + np.float32(1))
        self.assertFalse(np.shares_memory(p, cloud.positions))


class ClosedFormRenderTest(unittest.TestCase):
    """(b) One isotropic gaussian on the camera axis against alpha = opacity * exp(-0.5 d^T S^-1 d)."""

    W = H = 64
    F = 80.0
    Z, SIGMA, OPACITY = 4.0, 0.1, 0.8

    def camera(self):
        # cx = 32.5 puts the gaussian's centre on the centre of pixel (32, 32) (pixel i covers [i, i + 1)).
        return {"width": self.W, "height": self.H, "fx": self.F, "fy": self.F, "cx": 32.5, "cy": 32.5,
                "world_to_camera": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]}

    def cloud(self, color, color_space="srgb"):
        return splatforge.Cloud(positions=[[0, 0, self.Z]], scales=[[self.SIGMA] * 3], rotations=[[1, 0, 0, 0]],
                                opacities=[self.OPACITY], colors=[color], color_space=color_space)

    def expected(self, dx, dy, color, background):
        # EWA projection of an isotropic gaussian on the axis: J = diag(f / z), plus the 0.3 pixel^2 dilation.
        var = (self.F * self.SIGMA / self.Z) ** 2 + 0.3
        alpha = min(0.99, self.OPACITY * math.exp(-0.5 * (dx * dx + dy * dy) / var))
        if alpha < 1 / 255:
            alpha = 0.0
        return np.array([alpha * c + (1 - alpha) * b for c, b in zip(color, background)] + [alpha])

    def test_cpu_pixels_match_the_closed_form(self):
        color, bg = (0.9, 0.3, 0.1), (0.2, 0.4, 0.6)
        image = splatforge.render(self.cloud(color), self.camera(), backend="cpu", background=bg)
        self.assertEqual((image.dtype, image.shape), (np.float32, (self.H, self.W, 4)))
        for dx, dy in ((0, 0), (3, 0), (0, -2), (2, 2), (-4, 1), (25, 25)):
            np.testing.assert_allclose(image[32 + dy, 32 + dx], self.expected(dx, dy, color, bg), rtol=0, atol=2e-6,
                                       err_msg=f"pixel offset ({dx}, {dy})")

    def test_linear_blend_space_decodes_blends_and_encodes(self):
        color, bg = (0.9, 0.3, 0.1), (0.2, 0.4, 0.6)
        image = splatforge.render(self.cloud(color), self.camera(), backend="cpu", background=bg, blend_space="linear")
        dec = lambda c: c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        enc = lambda l: 12.92 * l if l <= 0.0031308 else 1.055 * l ** (1 / 2.4) - 0.055
        var = (self.F * self.SIGMA / self.Z) ** 2 + 0.3
        for dx in (0, 3):
            alpha = min(0.99, self.OPACITY * math.exp(-0.5 * dx * dx / var))
            expected = [enc(alpha * dec(c) + (1 - alpha) * dec(b)) for c, b in zip(color, bg)]
            np.testing.assert_allclose(image[32, 32 + dx, :3], expected, rtol=0, atol=2e-6)
        with self.assertRaisesRegex(ValueError, "blend_space: expected"):
            splatforge.render(self.cloud(color), self.camera(), backend="cpu", blend_space="gamma")

    def test_linear_colours_are_encoded_to_srgb(self):
        linear = (0.2, 0.05, 0.001)
        srgb = [12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055 for c in linear]
        image = splatforge.render(self.cloud(linear, "linear"), self.camera(), backend="cpu")
        np.testing.assert_allclose(image[32, 32], self.expected(0, 0, srgb, (0, 0, 0)), rtol=0, atol=1e-5)

    def test_uint8_output_rounds_as_png(self):
        cloud = self.cloud((0.9, 0.3, 0.1))
        f = splatforge.render(cloud, self.camera(), backend="cpu")
        u = splatforge.render(cloud, self.camera(), backend="cpu", dtype=np.uint8)
        self.assertEqual(u.dtype, np.uint8)
        np.testing.assert_array_equal(u, np.round(np.clip(f, 0, 1) * 255).astype(np.uint8))

    def test_width_and_height_scale_the_camera(self):
        image = splatforge.render(self.cloud((1, 1, 1)), self.camera(), backend="cpu", width=128, height=32)
        self.assertEqual(image.shape, (32, 128, 4))
        # fx doubles and fy halves with cx = 65, cy = 16.25: the centre lands on pixel (64.5, 15.75).
        self.assertEqual(np.unravel_index(np.argmax(image[..., 3]), image.shape[:2]), (16, 64))


class DlpackProducer:
    """A tensor of another library as the DLPack protocol sees it: only __dlpack__ / __dlpack_device__ (backed by
    numpy's own exporter, so the capsule is a real one)."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = np.asarray(array), device

    def __dlpack__(self, stream=None):
        if self.device[0] != 1:
            raise BufferError("device memory: not readable on the host")
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


class DeviceTensor(DlpackProducer):
    """A tensor in device memory (DLPack device type 2, CUDA) whose .cpu() copies it to the host."""

    def __init__(self, host):
        super().__init__(np.zeros_like(host), device=(2, 0))
        self.host = host

    def cpu(self):
        return DlpackProducer(self.host)


class DlpackTest(unittest.TestCase):
    """Tensors (torch, JAX, CuPy, ...) in through DLPack: the same cloud and image as from numpy arrays."""

    def arrays(self):
        rng = np.random.default_rng(5)
        return dict(positions=(rng.normal(size=(40, 3)) + [0, 0, 4]).astype(np.float32),
                    scales=rng.uniform(0.05, 0.2, size=(40, 3)).astype(np.float32),
                    rotations=rng.normal(size=(40, 4)).astype(np.float32),
                    opacities=rng.uniform(0.2, 0.9, size=40).astype(np.float32),
                    sh=rng.normal(scale=0.3, size=(40, 4, 3)).astype(np.float32))

    def test_tensors_build_the_same_cloud_and_image(self):
        a = self.arrays()
        from_numpy = splatforge.Cloud(**a)
        from_tensors = splatforge.Cloud(**{k: DlpackProducer(v) for k, v in a.items()})
        for name in ("positions", "scales", "rotations", "opacities", "sh"):
            np.testing.assert_array_equal(getattr(from_tensors, name), getattr(from_numpy, name), err_msg=name)
        # A camera dict whose world_to_camera is a (4, 4) tensor (gsplat's viewmat) and whose focal length is
        # a 0-d array.
        cam = ClosedFormRenderTest().camera()
        tensor_cam = dict(cam, fx=np.float32(cam["fx"]),
                          world_to_camera=DlpackProducer(np.array(cam["world_to_camera"], np.float32).reshape(4, 4)))
        np.testing.assert_array_equal(splatforge.render(from_tensors, tensor_cam, backend="cpu"),
                                      splatforge.render(from_numpy, cam, backend="cpu"))
        # Setters take tensors too.
        moved = splatforge.Cloud(**a)
        moved.positions = DlpackProducer(a["positions"] + 1)
        np.testing.assert_array_equal(moved.positions, a["positions"] + 1)

    def test_device_tensors_are_copied_to_the_host_or_refused(self):
        a = self.arrays()
        np.testing.assert_array_equal(splatforge.Cloud(positions=DeviceTensor(a["positions"])).positions, a["positions"])
        stuck = DlpackProducer(a["positions"], device=(2, 0))  # no .cpu()
        with self.assertRaisesRegex(ValueError, r"positions: a tensor on DLPack device type 2 that has no \.cpu\(\)"):
            splatforge.Cloud(positions=stuck)

    def test_torch_tensors_when_torch_is_installed(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed (the DLPack path itself is tested without it)")
        a = self.arrays()
        t = {k: torch.from_numpy(v.copy()) for k, v in a.items()}
        t["positions"].requires_grad_(True)  # a tensor in a training graph: detached, not refused
        t["scales"] = t["scales"].double()
        cloud = splatforge.Cloud(**t)
        np.testing.assert_array_equal(cloud.positions, a["positions"])
        np.testing.assert_array_equal(cloud.scales, a["scales"])
        with self.assertRaisesRegex(ValueError, "opacities: "):
            splatforge.Cloud(positions=t["positions"], opacities=t["opacities"].bfloat16())


class DeviceLostTest(unittest.TestCase):
    """A lost Vulkan device (injected with SPLATFORGE_FAULT_DEVICE_LOST=1: the process's first device fails its
    first submit as a lost device does) raises DeviceLostError naming what failed; the renderer has made a new
    device, and rendering again gives the image a healthy process gives."""

    def test_render_again_after_a_lost_device(self):
        if not splatforge.vulkan_available():
            skip_or_fail(self, "no Vulkan device (install mesa-vulkan-drivers)")
        script = (
            "import numpy as np, splatforge\n"
            "rng = np.random.default_rng(3)\n"
            "cloud = splatforge.Cloud((rng.normal(size=(500, 3)) * 0.3 + [0, 0, 3]).astype(np.float32), "
            "scales=np.full((500, 3), 0.05, np.float32))\n"
            "cam = {'width': 64, 'height': 48, 'fx': 60, 'fy': 60, 'cx': 32, 'cy': 24, "
            "'world_to_camera': [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]}\n"
            "try:\n"
            "    splatforge.render(cloud, cam, backend='vulkan')\n"
            "    print('NO ERROR')\n"
            "except splatforge.DeviceLostError as e:\n"
            "    assert isinstance(e, splatforge.Error)\n"
            "    print('LOST:', e)\n"
            "np.save(__import__('sys').argv[1], splatforge.render(cloud, cam, backend='vulkan'))\n")
        with tempfile.TemporaryDirectory() as d:
            out = {}
            for name, fault in (("faulted", "1"), ("healthy", None)):
                env = dict(os.environ)
                env.pop("SPLATFORGE_FAULT_DEVICE_LOST", None)
                if fault:
                    env["SPLATFORGE_FAULT_DEVICE_LOST"] = fault
                path = os.path.join(d, name + ".npy")
                run = subprocess.run([sys.executable, "-c", script, path], env=env, capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                out[name] = (run.stdout, np.load(path))
            self.assertIn("LOST:", out["faulted"][0])
            self.assertIn("VK_ERROR_DEVICE_LOST", out["faulted"][0])
            self.assertIn("render again", out["faulted"][0])
            self.assertIn("NO ERROR", out["healthy"][0])
            np.testing.assert_array_equal(out["faulted"][1], out["healthy"][1])


class SaveImageTest(unittest.TestCase):
    def test_png_and_npy(self):
        rng = np.random.default_rng(4)
        image = rng.uniform(-0.2, 1.2, (9, 13, 4)).astype(np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            splatforge.save_image(image, os.path.join(tmp, "a.png"))
            splatforge.save_image(image, pathlib.Path(tmp, "a.npy"))
            png = read_png_rgb8(pathlib.Path(tmp, "a.png").read_bytes())
            npy = np.load(os.path.join(tmp, "a.npy"))
            splatforge.save_image((np.clip(image[..., :3], 0, 1) * 255 + 0.5).astype(np.uint8), os.path.join(tmp, "b.png"))
            png8 = read_png_rgb8(pathlib.Path(tmp, "b.png").read_bytes())
            with self.assertRaisesRegex(ValueError, "path"):
                splatforge.save_image(image, os.path.join(tmp, "a.jpg"))
            with self.assertRaisesRegex(ValueError, "image"):
                splatforge.save_image(image[..., :2], os.path.join(tmp, "c.png"))
        expected = np.round(np.clip(image[..., :3], 0, 1) * 255).astype(np.uint8)
        np.testing.assert_array_equal(png, expected)
        np.testing.assert_array_equal(png8, expected)
        np.testing.assert_array_equal(npy, image)


class ThreadTest(unittest.TestCase):
    def test_renders_from_several_threads(self):
        # render() releases the GIL; renders are serialised inside the module and give the serial images.
        import concurrent.futures
        cloud = random_cloud(300, 1, seed=41)
        cam = splatforge.auto_camera(cloud, 48, 32)
        backends = ["cpu", "vulkan"] if splatforge.vulkan_available() else ["cpu"]
        serial = {b: splatforge.render(cloud, cam, backend=b) for b in backends}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            jobs = [(b, pool.submit(splatforge.render, cloud, cam, backend=b)) for b in backends * 4]
            for b, job in jobs:
                np.testing.assert_array_equal(job.result(), serial[b])

    def test_loads_run_in_parallel_each_with_its_own_limits(self):
        # load() releases the GIL and applies its max_gaussians to its own thread: a load with a limit below
        # the file's count fails while loads of the same file on other threads, with the default limits, pass.
        import concurrent.futures
        cloud = random_cloud(400, 1, seed=43)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.ply")
            splatforge.save(cloud, path)

            def load(limited):
                try:
                    return splatforge.load(path, max_gaussians=10 if limited else None).count
                except splatforge.Error as e:
                    return str(e)

            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                results = list(pool.map(load, [i % 2 == 0 for i in range(24)]))
            self.assertEqual(splatforge.load(path).count, 400)  # this thread's limits: untouched
        for i, r in enumerate(results):
            if i % 2 == 0:
                self.assertIsInstance(r, str)
                self.assertIn("400", r)
            else:
                self.assertEqual(r, 400)

    def test_copies_share_the_gaussians(self):
        import copy
        cloud = random_cloud(5, 0, seed=2)
        dup = copy.deepcopy(cloud)
        self.assertTrue(np.shares_memory(dup.positions, cloud.positions))
        dup.opacities = np.zeros(5, np.float32)  # replaces dup's storage only
        np.testing.assert_array_equal(cloud.opacities, random_cloud(5, 0, seed=2).opacities)


class SoakTest(unittest.TestCase):
    """A notebook's loop: render() on clouds that change size and content every call. The GPU memory the
    renderer holds settles at its high-water mark and stays there; the process's resident memory stays flat
    (checked where no sanitizer runtime keeps freed memory in quarantine)."""

    def test_render_loop_on_changing_clouds_stays_flat(self):
        sizes = [300, 3000, 800, 6000, 150]
        clouds = [random_cloud(n, i % 4, seed=100 + i) for i, n in enumerate(sizes)]
        backends = ["cpu", "vulkan"] if splatforge.vulkan_available() else ["cpu"]
        sanitized = "asan" in os.environ.get("LD_PRELOAD", "")

        def resident():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        for backend in backends:
            rss, gpu = {}, {}
            for i in range(120):
                cloud = clouds[i % len(clouds)]
                if i % 7 == 3:  # a fresh cloud object now and then, as a notebook cell makes
                    cloud = random_cloud(sizes[i % len(sizes)], 1, seed=i)
                cam = splatforge.auto_camera(cloud, 48 + 8 * (i % 3), 32)
                image = splatforge.render(cloud, cam, backend=backend)
                self.assertTrue(np.isfinite(image).all())
                if i in (40, 119):
                    rss[i] = resident()
                    if backend == "vulkan":
                        gpu[i] = splatforge.vulkan_device()
            if backend == "vulkan":
                # Every size has come by before frame 40: the buffers are at their high-water mark.
                self.assertEqual(gpu[119]["peak_allocated_bytes"], gpu[40]["peak_allocated_bytes"])
                self.assertLessEqual(gpu[119]["allocated_bytes"], gpu[40]["peak_allocated_bytes"])
            if not sanitized:
                self.assertLess(rss[119] - rss[40], 16 << 20, f"{backend}: resident memory grew {rss[119] - rss[40]} bytes")


class RoundTripTest(unittest.TestCase):
    """(c) save() then load() gives back the arrays saved, exactly for PLY, within quantization for SPZ."""

    def test_ply(self):
        cloud = random_cloud(200, 2, seed=11)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cloud.ply")
            splatforge.save(cloud, path)
            back = splatforge.load(path)
            # And what the file holds, read by the numpy parser (log-scales, logits).
            raw = expected_from_ply(read_ply_vertices(pathlib.Path(path).read_bytes()))
        self.assertEqual((back.count, back.sh_degree, back.format), (200, 2, "ply"))
        np.testing.assert_array_equal(back.positions, cloud.positions)
        np.testing.assert_allclose(back.scales, cloud.scales, rtol=2e-6)
        np.testing.assert_allclose(raw["scales"], cloud.scales, rtol=2e-6)
        assert_rotations_close(self, back.rotations, cloud.rotations, 1e-6)
        np.testing.assert_allclose(back.opacities, cloud.opacities, atol=1e-6)
        np.testing.assert_allclose(raw["opacities"], cloud.opacities, atol=1e-6)
        np.testing.assert_array_equal(back.sh, cloud.sh)
        np.testing.assert_array_equal(raw["sh"].astype(np.float32), cloud.sh)

    def test_spz(self):
        cloud = random_cloud(300, 1, seed=12)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cloud.spz")
            splatforge.save(cloud, path)
            back = splatforge.load(path)
        self.assertEqual((back.count, back.sh_degree, back.format), (300, 1, "spz"))
        self.assertIn(back.version, (3, 4))
        # Steps (docs/formats/spz.md): positions 1/4096, log-scales 1/16, opacity 1/255, DC 1/(0.15 * 255),
        # band-1 coefficients 5 bits (buckets of 8/128).
        np.testing.assert_allclose(back.positions, cloud.positions, atol=0.5 / 4096 + 1e-6)
        np.testing.assert_allclose(np.log(back.scales), np.log(cloud.scales), atol=0.5 / 16 + 1e-5)
        np.testing.assert_allclose(back.opacities, cloud.opacities, atol=0.5 / 255 + 1e-6)
        np.testing.assert_allclose(back.sh[:, 0], cloud.sh[:, 0], atol=0.5 / (0.15 * 255) + 1e-5)
        np.testing.assert_allclose(back.sh[:, 1:], cloud.sh[:, 1:], atol=4 / 128 + 1 / 128)
        assert_rotations_close(self, back.rotations, cloud.rotations, 2e-3)

    def test_unknown_extension_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(splatforge.Error, r"\.xyz"):
                splatforge.save(random_cloud(3, 0, seed=1), os.path.join(tmp, "cloud.xyz"))
            self.assertEqual(os.listdir(tmp), [])


class VulkanTest(unittest.TestCase):
    """(d) The Vulkan renderer against the CPU reference on a real capture."""

    def test_real_capture_matches_cpu(self):
        path = require_asset(self, "splats/biker.spz")
        require_vulkan(self)
        cloud = splatforge.load(path)
        camera = splatforge.auto_camera(cloud, 320, 180)
        cpu = splatforge.render(cloud, camera, backend="cpu")
        gpu = splatforge.render(cloud, camera, backend="vulkan")
        self.assertGreater(psnr(cpu, gpu), 40.0)
        self.assertGreater(np.mean(cpu[..., 3] > 0.5), 0.05, "the capture covers part of the frame")
        # The renderer is kept: the same cloud again gives the same image, and from a path too.
        np.testing.assert_array_equal(splatforge.render(cloud, camera, backend="vulkan"), gpu)
        self.assertGreater(psnr(splatforge.render(path, camera, backend="vulkan"), gpu), 60.0)

    def test_a_new_cloud_of_the_same_size_is_uploaded(self):
        # The renderer keeps clouds on the GPU while their address and size stay the same; a cloud freed and
        # replaced by another of the same size must not be drawn from the stale upload. (AddressSanitizer
        # quarantines freed memory, so the address reuse this guards against happens in release builds.)
        require_vulkan(self)
        cam = splatforge.auto_camera(random_cloud(500, 0, seed=21), 96, 64)
        for seed in (21, 22, 23):
            cloud = random_cloud(500, 0, seed=seed)
            gpu = splatforge.render(cloud, cam, backend="vulkan")
            cpu = splatforge.render(cloud, cam, backend="cpu")
            self.assertGreater(psnr(cpu, gpu), 40.0, f"seed {seed}")
            del cloud
        # Changing a property gives a new cloud too.
        cloud = random_cloud(500, 0, seed=24)
        splatforge.render(cloud, cam, backend="vulkan")
        cloud.colors = np.ones((500, 3), np.float32) - cloud.colors
        self.assertGreater(psnr(splatforge.render(cloud, cam, backend="cpu"), splatforge.render(cloud, cam, backend="vulkan")), 40.0)

    def test_sh_degree_limit_matches_cpu(self):
        require_vulkan(self)
        cloud = random_cloud(400, 3, seed=31)
        cam = splatforge.auto_camera(cloud, 80, 60)
        for degree in (0, 1, 3):
            gpu = splatforge.render(cloud, cam, backend="vulkan", sh_degree=degree)
            cpu = splatforge.render(cloud.with_sh_degree(degree), cam, backend="cpu")
            self.assertGreater(psnr(cpu, gpu), 40.0, f"degree {degree}")

    def test_half_sh_is_numpys_float16_of_the_higher_bands(self):
        cloud = random_cloud(400, 3, seed=33)
        cam = splatforge.auto_camera(cloud, 80, 60)
        half = splatforge.render(cloud, cam, backend="cpu")  # the default
        full = splatforge.render(cloud, cam, backend="cpu", sh_precision="full")
        self.assertFalse(np.array_equal(half, full))
        self.assertGreater(psnr(half, full), 60.0)
        # The same rounding by numpy (IEEE binary16, nearest even; half subnormals to zero), drawn at full
        # precision: the same image.
        rounded = random_cloud(400, 3, seed=33)
        sh = rounded.sh.copy()
        bands = sh[:, 1:, :].astype(np.float16).astype(np.float32)
        bands[np.abs(bands) < 2.0 ** -14] = 0.0
        sh[:, 1:, :] = bands
        rounded.sh = sh
        self.assertTrue(np.array_equal(half, splatforge.render(rounded, cam, backend="cpu", sh_precision="full")))
        with self.assertRaisesRegex(ValueError, "sh_precision"):
            splatforge.render(cloud, cam, backend="cpu", sh_precision="quarter")
        require_vulkan(self)
        self.assertGreater(psnr(half, splatforge.render(cloud, cam, backend="vulkan")), 60.0)
        self.assertGreater(psnr(full, splatforge.render(cloud, cam, backend="vulkan", sh_precision="full")), 60.0)

    def test_raster_precision_picks_the_vulkan_blend(self):
        require_vulkan(self)
        cloud = random_cloud(600, 3, seed=35)
        cam = splatforge.auto_camera(cloud, 96, 64)
        cpu = splatforge.render(cloud, cam, backend="cpu")
        full = splatforge.render(cloud, cam, backend="vulkan")  # the default
        half = splatforge.render(cloud, cam, backend="vulkan", raster_precision="half")
        self.assertGreater(psnr(cpu, full), 80.0)
        self.assertGreater(psnr(cpu, half), 60.0)  # 16-bit blending (or fp32 where the device lacks it)
        if splatforge.vulkan_device()["shader_float16"]:
            self.assertFalse(np.array_equal(half, full), "the half raster did not run")
        with self.assertRaisesRegex(ValueError, "raster_precision"):
            splatforge.render(cloud, cam, backend="vulkan", raster_precision="quarter")


def moving_quad_gltf():
    """A glTF with one quad (0.5 x 0.5, facing +z) whose node moves x from -1 to +1 over 2 s (LINEAR)."""
    s = 0.25
    positions = np.array([[-s, -s, 0], [s, -s, 0], [s, s, 0], [-s, s, 0]], "<f4")
    normals = np.array([[0, 0, 1]] * 4, "<f4")
    indices = np.array([0, 1, 2, 0, 2, 3], "<u2")
    times = np.array([0, 2], "<f4")
    moves = np.array([[-1, 0, 0], [1, 0, 0]], "<f4")
    chunks, views, offset = [], [], 0
    for array in (positions, normals, indices, times, moves):
        data = array.tobytes()
        data += b"\0" * (-len(data) % 4)
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": array.nbytes})
        chunks.append(data)
        offset += len(data)
    blob = b"".join(chunks)
    return {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "quad", "mesh": 0, "translation": [-1, 0, 0]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2}]}],
        "buffers": [{"byteLength": len(blob), "uri": "data:application/octet-stream;base64," + base64.b64encode(blob).decode()}],
        "bufferViews": views,
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [-s, -s, 0], "max": [s, s, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 2, "componentType": 5123, "count": 6, "type": "SCALAR"},
            {"bufferView": 3, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [2]},
            {"bufferView": 4, "componentType": 5126, "count": 2, "type": "VEC3"},
        ],
        "animations": [{"name": "slide", "samplers": [{"input": 3, "output": 4, "interpolation": "LINEAR"}],
                        "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}]}],
    }


class SceneTest(unittest.TestCase):
    """(e) A scene whose object moves, rendered over time."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = pathlib.Path(cls.tmp.name)
        (d / "mover.gltf").write_text(json.dumps(moving_quad_gltf()))
        # A still splat cloud beside the quad, saved with the module.
        splatforge.save(splatforge.Cloud(positions=[[0, 0.8, 0]], scales=[[0.15] * 3], opacities=[0.9],
                                         colors=[[0.1, 0.9, 0.2]]), str(d / "still.ply"))
        cls.scene_path = d / "scene.json"
        cls.scene_path.write_text(json.dumps({
            "objects": [{"gltf": "mover.gltf"}, {"file": "still.ply"}],
            "camera": {"eye": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 96, "height": 64},
            "background": [0, 0, 0],
        }))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def quad_column(self, image):
        """Mean column of the quad's pixels (the lower half of the frame: the splat sits above)."""
        mask = image[32:, :, 3] > 0.5
        self.assertTrue(mask.any(), "the quad is in view")
        return float(np.mean(np.nonzero(mask)[1]))

    def test_frames_move_and_repeat(self):
        scene = splatforge.Scene(self.scene_path)
        self.assertEqual(scene.duration, 2.0)
        self.assertEqual([o["kind"] for o in scene.objects], ["gltf", "splats"])
        self.assertEqual(scene.objects[0]["clip"], "slide")
        self.assertEqual(scene.camera["width"], 96)
        a = scene.render(0.0, backend="cpu")
        b = scene.render(1.0, backend="cpu")
        self.assertEqual(a.shape, (64, 96, 4))
        self.assertGreater(np.abs(a - b).max(), 0.5)
        np.testing.assert_array_equal(scene.render(1.0, backend="cpu"), b)
        np.testing.assert_array_equal(scene.render(0.0, backend="cpu"), a)  # earlier times render again
        # The translation is the clip's: x = -1 at t = 0, 0 at t = 1; on screen the quad moves right by
        # fx * 1 / 5 pixels, fx = 32 / tan(22.5 deg).
        shift = self.quad_column(b) - self.quad_column(a)
        self.assertAlmostEqual(shift, 32 / math.tan(math.radians(22.5)) / 5, delta=1.0)
        # The still splat does not move.
        np.testing.assert_array_equal(a[:20], b[:20])

    def test_frames_iterator(self):
        scene = splatforge.Scene(str(self.scene_path))
        frames = scene.frames(fps=2, duration=1.5, backend="cpu")
        self.assertEqual(len(frames), 3)
        got = list(frames)
        self.assertEqual([t for t, _ in got], [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(got[2][1], scene.render(1.0, backend="cpu"))
        self.assertEqual(len(scene.frames(fps=10)), 20)  # duration defaults to Scene.duration

    def test_render_a_scene_path_at_a_time(self):
        scene = splatforge.Scene(self.scene_path)
        np.testing.assert_array_equal(splatforge.render(str(self.scene_path), time=1.0, backend="cpu"),
                                      scene.render(1.0, backend="cpu"))

    def test_vulkan_frames_match_cpu(self):
        require_vulkan(self)
        scene = splatforge.Scene(self.scene_path)
        for t in (0.0, 1.0, 0.5):
            self.assertGreater(psnr(scene.render(t, backend="cpu"), scene.render(t, backend="vulkan")), 40.0, f"t = {t}")


def closed_form_events(objects, t0, t1, include_start=True):
    """Every crossing of (name, time, speed, loop, duration, events) objects' clip events by their playheads
    p(t) = time + speed * t over scene times [t0, t1] (t0 only with include_start): at t = (e + k D - time) / speed,
    in scene-time order, ties in object order."""
    out = []
    for index, (name, time, speed, loop, duration, events) in enumerate(objects):
        p0, p1 = time + speed * t0, time + speed * t1
        lo, hi = min(p0, p1), max(p0, p1)
        for k in range(-50, 51) if loop else (0,):
            for event, e in events:
                p = e + k * duration
                start = p == p0
                if lo <= p <= hi and (include_start or not start):
                    out.append((round((p - time) / speed, 9), index, name, event, e))
    out.sort(key=lambda x: (x[0], x[1]))
    return [(name, event, e, t) for t, _, name, event, e in out]


class AnimationEventsTest(unittest.TestCase):
    """Animation events (docs/python.md, Scene.take_events / advance / events_between): a 2 s clip whose glTF extras
    carry events "step" (0.5 s) and "turn" (1.5 s), played at time 0.25 + 2 t, and the same file with events declared
    in the scene JSON, played backwards; against the closed form."""

    OBJECTS = [("mover", 0.25, 2.0, True, 2.0, [("step", 0.5), ("turn", 1.5)]),
               ("back", 0.0, -1.0, True, 2.0, [("tick", 1.0)])]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = pathlib.Path(cls.tmp.name)
        gltf = moving_quad_gltf()
        gltf["animations"][0]["extras"] = {"events": [{"name": "turn", "time": 1.5}, {"name": "step", "time": 0.5}]}
        (d / "mover.gltf").write_text(json.dumps(gltf))
        cls.scene_path = d / "scene.json"
        cls.scene_path.write_text(json.dumps({
            "objects": [{"name": "mover", "gltf": "mover.gltf", "time": 0.25, "speed": 2},
                        {"name": "back", "gltf": "mover.gltf", "speed": -1, "events": [{"name": "tick", "time": 1.0}]}],
            "camera": {"eye": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 24, "height": 16},
        }))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def as_tuples(self, events):
        for e in events:
            self.assertEqual(set(e), {"object", "event", "clip_time", "scene_time"})
        return [(e["object"], e["event"], e["clip_time"], round(e["scene_time"], 9)) for e in events]

    def test_objects_list_their_events(self):
        scene = splatforge.Scene(self.scene_path)
        self.assertEqual(scene.objects[0]["events"], [{"name": "step", "time": 0.5}, {"name": "turn", "time": 1.5}])
        self.assertEqual(scene.objects[1]["events"], [{"name": "tick", "time": 1.0}])  # the scene's replace the file's

    def test_frames_fire_each_crossing_once(self):
        scene = splatforge.Scene(self.scene_path)
        for t, _ in scene.frames(fps=8, duration=2.5, backend="cpu"):
            pass
        got = self.as_tuples(scene.take_events())
        want = closed_form_events(self.OBJECTS, 0.0, 2.375)  # the last frame is at 19 / 8
        self.assertEqual(len(want), 6)
        self.assertEqual(got, want)
        self.assertEqual(scene.take_events(), [])

    def test_advance_and_seek_back(self):
        scene = splatforge.Scene(self.scene_path)
        self.assertEqual(scene.advance(0.0), [])
        self.assertEqual(self.as_tuples(scene.advance(1.0)), closed_form_events(self.OBJECTS, 0.0, 1.0, include_start=False))
        self.assertEqual(scene.advance(0.2), [])  # back in time: none
        self.assertEqual(self.as_tuples(scene.advance(0.7)), [("mover", "turn", 1.5, 0.625)])
        scene.render(0.7, backend="cpu")  # the clock is there already: nothing more
        self.assertEqual(scene.take_events(), [])
        scene.render(1.2, backend="cpu")
        self.assertEqual(self.as_tuples(scene.take_events()), [("back", "tick", 1.0, 1.0), ("mover", "step", 0.5, 1.125)])
        with self.assertRaisesRegex(ValueError, "t: expected a finite"):
            scene.advance(float("nan"))

    def test_events_between_is_the_closed_form(self):
        scene = splatforge.Scene(self.scene_path)
        for t0, t1 in ((0.0, 0.125), (0.0, 3.9), (0.125, 1.0), (1.0, 1.0), (2.5, 7.25)):
            self.assertEqual(self.as_tuples(scene.events_between(t0, t1)), closed_form_events(self.OBJECTS, t0, t1, False))
            self.assertEqual(self.as_tuples(scene.events_between(t0, t1, include_start=True)),
                             closed_form_events(self.OBJECTS, t0, t1, True))
        with self.assertRaisesRegex(ValueError, "t1"):
            scene.events_between(2.0, 1.0)

    def test_bad_events_name_the_json_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "mover.gltf").write_text(json.dumps(moving_quad_gltf()))
            path = pathlib.Path(tmp) / "scene.json"
            path.write_text(json.dumps({"objects": [{"gltf": "mover.gltf", "events": [{"name": "late", "time": 2.5}]}]}))
            with self.assertRaisesRegex(splatforge.Error, r"objects\[0\]\.events\[0\]\.time: 2\.5 s is outside the clip 'slide' \[0, 2\] s"):
                splatforge.Scene(path)


class GeneratorTest(unittest.TestCase):
    """A neural generator (models/gaussians4d.onnx, docs/neural.md) as a Scene: it moves with time."""

    def test_generator_scene_moves_over_time(self):
        scene = splatforge.Scene(REPO / "models" / "gaussians4d.onnx")
        self.assertEqual(scene.objects[0]["kind"], "generator")
        camera = {"eye": [0, 0, -3], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 45, "width": 64, "height": 48}
        a = scene.render(0.0, camera=camera, backend="cpu")
        b = scene.render(0.8, camera=camera, backend="cpu")
        self.assertGreater(a[..., 3].mean(), 0.05, "the model's gaussians are in view")
        self.assertLess(psnr(a, b), 35.0, "time moves the gaussians")
        np.testing.assert_array_equal(scene.render(0.0, camera=camera, backend="cpu"), a)
        self.assertEqual(scene.objects[0]["gaussians"], 1500)
        self.assertEqual(scene.duration, 1.0)  # one pass of the model's normalised time


class BadInputTest(unittest.TestCase):
    """(f) Bad input raises the documented exceptions, with messages that say what was expected."""

    def test_missing_and_malformed_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "missing.ply")
            with self.assertRaisesRegex(splatforge.Error, "missing.ply"):
                splatforge.load(missing)
            # A missing input is also Python's FileNotFoundError, as open() raises.
            for call in (splatforge.load, splatforge.Scene, splatforge.render):
                with self.assertRaises(FileNotFoundError):
                    call(missing)
            self.assertTrue(issubclass(splatforge.MissingFileError, splatforge.Error))
            with self.assertRaisesRegex(splatforge.Error, "missing.ply"):
                splatforge.Scene(missing)
            with self.assertRaisesRegex(splatforge.Error, "missing.ply"):
                splatforge.render(missing)
            bad = pathlib.Path(tmp, "bad.ply")
            bad.write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 1000\nproperty float x\nend_header\n\0\0")
            with self.assertRaises(splatforge.FormatError) as caught:
                splatforge.load(bad)
            self.assertEqual(caught.exception.path, str(bad))
            self.assertIsInstance(caught.exception.offset, int)
            with self.assertRaisesRegex(splatforge.Error, "objects"):
                splatforge.Scene(self._json(tmp, '{"objects": 3}'))

    def _json(self, tmp, text):
        path = os.path.join(tmp, "scene.json")
        pathlib.Path(path).write_text(text)
        return path

    def test_load_limits(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cloud.ply")
            splatforge.save(random_cloud(100, 0, seed=5), path)
            with self.assertRaisesRegex(splatforge.Error, "100"):
                splatforge.load(path, max_gaussians=50)
            self.assertEqual(splatforge.load(path).count, 100)  # the limit applied to that load only
            with self.assertRaisesRegex(ValueError, "max_memory"):
                splatforge.load(path, max_memory="lots")
            with self.assertRaisesRegex(ValueError, "max_gaussians"):
                splatforge.load(path, max_gaussians=0)

    def test_non_finite_rows_are_dropped_with_a_warning_or_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "nan.ply")
            cols = {"x": [0, np.nan, 1], "y": [0, 0, 0], "z": [1, 1, 1], "f_dc_0": [0] * 3, "f_dc_1": [0] * 3,
                    "f_dc_2": [0] * 3, "opacity": [0] * 3, "scale_0": [0] * 3, "scale_1": [0] * 3, "scale_2": [0] * 3,
                    "rot_0": [1] * 3, "rot_1": [0] * 3, "rot_2": [0] * 3, "rot_3": [0] * 3}
            write_ply(path, cols, list(cols))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cloud = splatforge.load(path)
            self.assertEqual((cloud.count, cloud.dropped_non_finite), (2, 1))
            self.assertTrue(any("non-finite" in str(w.message) for w in caught), [str(w.message) for w in caught])
            with self.assertRaises(splatforge.Error):
                splatforge.load(path, strict=True)

    def test_cloud_arrays_are_checked(self):
        ok = np.zeros((5, 3), np.float32)
        cases = [
            (dict(positions=np.zeros((5, 3), np.int32)), r"positions: .*float32.*\(N, 3\).*int32"),
            (dict(positions=np.zeros((5, 2), np.float32)), r"positions: expected shape \(N, 3\), got \(5, 2\)"),
            (dict(positions=ok, scales=np.ones((4, 3), np.float32)), r"scales: expected shape \(N, 3\), got \(4, 3\)"),
            (dict(positions=ok, scales=-np.ones((5, 3), np.float32)), r"scales: .*log"),
            (dict(positions=ok, rotations=np.zeros((5, 4), np.float32)), r"rotations: row 0 is a zero quaternion"),
            (dict(positions=ok, opacities=np.full(5, 2.0, np.float32)), r"opacities: .*\[0, 1\]"),
            (dict(positions=ok, opacities=np.ones((5, 1), np.float32)), r"opacities: expected shape \(N,\)"),
            (dict(positions=ok, sh=np.zeros((5, 5, 3), np.float32)), r"sh: .*K = 1, 4, 9 or 16"),
            (dict(positions=ok, colors=np.zeros((5, 3), np.uint8)), r"colors: .*uint8"),
            (dict(positions=np.array([[0, 0, np.inf]] * 5, np.float32)), r"positions: row 0 holds a non-finite"),
            (dict(positions=ok, sh=np.zeros((5, 1, 3)), colors=np.zeros((5, 3))), r"sh or colors"),
            (dict(positions=ok, color_space="rgb"), r"color_space"),
        ]
        for kwargs, pattern in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(ValueError, pattern):
                    splatforge.Cloud(**kwargs)
        cloud = splatforge.Cloud(positions=ok.astype(np.float64))  # float64 is converted
        self.assertEqual(cloud.positions.dtype, np.float32)
        with self.assertRaisesRegex(ValueError, r"positions: expected shape \(N, 3\)"):
            cloud.positions = np.zeros((6, 3), np.float32)

    def test_render_arguments_are_checked(self):
        cloud = random_cloud(20, 0, seed=9)
        cam = splatforge.auto_camera(cloud, 32, 32)
        for kwargs, error, pattern in [
            (dict(backend="metal"), ValueError, "backend"),
            (dict(background=(0, 0)), ValueError, "background"),
            (dict(background=(0, 0, 2)), ValueError, "background"),
            (dict(sh_degree=4), ValueError, "sh_degree"),
            (dict(width=0), ValueError, "width"),
            (dict(dtype=np.int16), ValueError, "dtype"),
            (dict(time=math.nan), ValueError, "time"),
        ]:
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(error, pattern):
                    splatforge.render(cloud, cam, backend=kwargs.pop("backend", "cpu"), **kwargs)
        with self.assertRaisesRegex(TypeError, "source"):
            splatforge.render(42, cam)
        with self.assertRaisesRegex(TypeError, "camera"):
            splatforge.render(cloud, 42)
        with self.assertRaisesRegex(splatforge.Error, "camera"):
            splatforge.render(cloud, {"eye": [0, 0, -3], "target": [0, 0, 0]}, backend="cpu")
        with self.assertRaisesRegex(ValueError, "nothing|no gaussian"):
            splatforge.render(splatforge.Cloud(positions=np.zeros((0, 3), np.float32)), backend="cpu")


if __name__ == "__main__":
    unittest.main()
