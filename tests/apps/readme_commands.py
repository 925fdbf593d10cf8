#!/usr/bin/env python3
"""Runs every command of README.md's "Using the tool" block as written, so the README cannot drift.

The commands run one after another in a folder laid out as a user's: `../shared/assets` beside it (the
sample assets), `models/` and `scripts/` of the repository, and the files the block names without making
them (capture.ply, scene.json, cam.json, their.spz, ...) made first from the sample assets. Outputs of
earlier commands feed later ones, as they would for a reader going down the block. Sizes are made small:
a flag's value is replaced (--steps 6000 -> 20, --width 1920 -> 64, ...), and commands that would render at
the default 1280x720 or train for the default steps get small sizes added. Every command must exit 0.

Skipped, with the reason printed: `view` (a window; tests/view runs it under Xvfb) and `scripts/fuzz.sh`
(the test command's own fuzz phase runs it).

  readme_commands.py REPO_DIR SPLATFORGE_BINARY [--keep DIR]

The sample assets are found as the tests find them: SPLATFORGE_ASSETS, else REPO_DIR/../shared/assets; a
missing folder fails the test (as CI=true makes every test do).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# Flag values replaced by small ones (by flag; per command where one flag means different things).
SMALL = {
    "--steps": "20", "--budget": "200", "--splats": "1500", "--size": "32", "--width": "64", "--height": "48",
    "--copies": "2", "--synthetic": "20000", "--hulls": "3", "--back-to-back": "2", "--submissions": "2",
    "--duration": "0.2", "--fps": "5", "--count": "2",
}
REPEAT = {"50": "2", "1000": "3"}  # onnx run --repeat
SKIPPED = {
    "view": "opens a window; tests/view runs the viewer under Xvfb",
    "scripts/fuzz.sh": "the test command's fuzz phase runs the fuzz targets",
}


def block(readme):
    text = open(readme, encoding="utf-8").read()
    start = text.index("## Using the tool")
    fence = text.index("```sh\n", start) + len("```sh\n")
    end = text.index("```", fence)
    for line in text[fence:end].splitlines():
        line = re.sub(r"\s{2,}#.*$", "", line).strip()  # a trailing comment
        line = re.sub(r"\s*\[[^\]]*\]", "", line)       # an optional part, [--eyes ...]
        if line:
            yield line


def small(words):
    """The command's words with small sizes."""
    out = list(words)
    for i, w in enumerate(out[:-1]):
        if w in SMALL and re.fullmatch(r"[0-9.]+", out[i + 1]):  # a size (--splats also names a file elsewhere)
            out[i + 1] = SMALL[w]
        if w == "--repeat":
            out[i + 1] = REPEAT.get(out[i + 1], out[i + 1])
    command = out[1] if len(out) > 1 else ""
    sub = out[2] if len(out) > 2 else ""
    renders = command in ("render", "animate", "demo", "bench", "bench-characters") or (command == "hull" and sub in ("play", "bench"))
    if renders and "--width" not in out and "--camera" not in out:
        out += ["--width", "64", "--height", "48"]
    if (command == "animate" or (command == "hull" and sub == "play")) and "--duration" not in out:
        out += ["--duration", "0.2"]
    if command == "animate" and "--fps" not in out:
        out += ["--fps", "5"]
    if "--train" in out:
        out += ["--train-steps", "20", "--train-views", "4", "--train-size", "32"]
    if command == "train" and "--mesh" in out:
        out += ["--views", "4", "--size", "32"]
    if command == "views":
        out += ["--val", "1", "--test", "0", "--ao-rays", "4"]
    if command == "bench" and "--frames" not in out:
        out += ["--frames", "2"]
    return out


def run(line, work, binary, env):
    words = shlex.split(line)
    words = small(words)
    if words[0] == "splatforge":
        words[0] = binary
    # A command with a shell redirection (bench --json > out.json) runs through the shell.
    cmd = " ".join(shlex.quote(w) if w not in (">",) else w for w in words)
    t0 = time.time()
    p = subprocess.run(cmd, shell=True, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return p.returncode, p.stdout.decode(errors="replace"), time.time() - t0, cmd


def fixtures(root, binary, repo, assets, env):
    work = os.path.join(root, "work")
    shared = os.path.join(root, "shared")
    os.makedirs(work)
    os.makedirs(shared)
    os.symlink(os.path.abspath(assets), os.path.join(shared, "assets"))
    for name in ("models", "scripts"):
        os.symlink(os.path.join(repo, name), os.path.join(work, name))
    a = os.path.join(shared, "assets")
    shutil.copy(os.path.join(a, "splats", "biker.ply"), os.path.join(work, "capture.ply"))
    shutil.copy(os.path.join(a, "splats", "biker.spz"), os.path.join(work, "huge.spz"))
    for name in ("offset.ply", "skin.glb"):
        shutil.copy(os.path.join(a, "characters", "lam_avatar", name), os.path.join(work, name))
    shutil.copy(os.path.join(a, "gltf", "morph-stress-test.glb"), os.path.join(work, "drone.glb"))
    made = [
        [binary, "convert", "capture.ply", "-o", "their.spz", "--spz-version", "3", "--spz-axes", "raw"],
        [binary, "convert", "capture.ply", "-o", "drone_trained.ply"],
    ]
    for m in made:
        subprocess.run(m, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, "scene.json"), "w") as f:
        f.write('{"objects": [{"file": "capture.ply"}, {"file": "capture.ply", "transform": {"translation": [0.8, 0, 0]}}]}\n')
    with open(os.path.join(work, "cam.json"), "w") as f:
        f.write('{"eye": [0, -1, 3], "target": [0, -1, 0], "up": [0, -1, 0], "fov_y_deg": 50, "width": 64, "height": 48}\n')
    # `/shared/scene.json` of the block: a trusted scene naming a file outside its folder.
    with open(os.path.join(shared, "scene.json"), "w") as f:
        f.write('{"objects": [{"file": "../work/capture.ply"}]}\n')
    return work, os.path.join(shared, "scene.json")


def main():
    args = sys.argv[1:]
    keep = None
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
        del args[args.index("--keep"):args.index("--keep") + 2]
    repo, binary = (os.path.abspath(x) for x in args)
    readme = os.path.join(repo, "README.md")
    assets = os.path.abspath(os.environ.get("SPLATFORGE_ASSETS") or os.path.join(repo, "..", "shared", "assets"))
    if not os.path.isdir(os.path.join(assets, "splats")):
        print(f"sample assets not found at {assets}", file=sys.stderr)
        return 1
    root = keep or tempfile.mkdtemp(prefix="readme_commands_")
    env = dict(os.environ)
    work, outside_scene = fixtures(root, binary, repo, assets, env)
    failures, ran = [], 0
    for line in block(readme):
        first = line.split()[0] if line.split()[0] != "splatforge" else (line.split() + [""])[1]
        if first in SKIPPED or line.split()[0] in SKIPPED:
            print(f"skip  {line}\n      ({SKIPPED.get(first) or SKIPPED[line.split()[0]]})")
            continue
        line = line.replace("/shared/scene.json", outside_scene)
        code, out, seconds, cmd = run(line, work, binary, env)
        ran += 1
        print(f"{'ok  ' if code == 0 else 'FAIL'}  {seconds:6.1f} s  {line}")
        if code != 0:
            failures.append((line, cmd, code, out))
    for line, cmd, code, out in failures:
        print(f"\n--- {line}\n    ran: {cmd}\n    exit {code}\n{out[-3000:]}")
    print(f"\n{ran} commands run, {len(failures)} failed")
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
