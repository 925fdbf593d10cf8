#!/usr/bin/env bash
# Installs every Debian package Splatforge needs to build, test and benchmark. Idempotent: packages that
# are already present are skipped, so a second run costs a few seconds.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  clang libclang-rt-14-dev clang-format
  libgtest-dev libgmock-dev
  zlib1g-dev libzstd-dev
  nlohmann-json3-dev libfmt-dev libstb-dev libcli11-dev libtinygltf-dev
  libvulkan-dev libvulkan-volk-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  python3 python3-dev python3-numpy pybind11-dev
  libwebp-dev
  libonnx-dev libprotobuf-dev libonnx-testdata
  libglfw3-dev libimgui-dev xvfb xauth
  ffmpeg
  slurm-wlm munge
  emscripten chromium
)

# Versions the tests were last run with, where the version matters: the Vulkan driver stack (lavapipe runs
# every GPU test; its leaks and subgroup size shape the sanitizer run) and the shader compiler. Another
# version is reported, not refused: Debian's security updates move these (docs/benchmarks.md, "Fresh machine").
expected=(
  "mesa-vulkan-drivers 22.3.6"
  "libvulkan1 1.3.239"
  "vulkan-validationlayers 1.3.239"
  "glslc 2023.2"
)

report_versions() {
  for e in "${expected[@]}"; do
    local name=${e% *} want=${e#* } have
    have=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || true)
    case "$have" in
      "$want"*) echo "setup: $name $have" ;;
      *) echo "setup: warning: $name is '${have:-not installed}'; tests were last run with $want (report failures with this line)" ;;
    esac
  done
}

# The peer tools of the interop tests (tools/interop/package.json, versions pinned by its lock file) come from
# the npm registry; Node.js comes from Debian when the machine has none.
install_npm_tools() {
  if [ -f tools/interop/node_modules/.package-lock.json ] &&
     cmp -s tools/interop/package-lock.json tools/interop/node_modules/.sf-installed-lock 2>/dev/null; then
    echo "setup: npm peer tools present"
    return
  fi
  echo "setup: installing the npm peer tools (tools/interop)"
  (cd tools/interop && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp tools/interop/package-lock.json tools/interop/node_modules/.sf-installed-lock
}

# The C sources of the compression libraries the web build compiles to WebAssembly (docs/web.md): zlib (gzip,
# ZIP) and zstd (SPZ version 4), taken from the npm registry as two packages that carry them, pinned by
# version and checksum, unpacked under web/third_party/ (only their C files are used; nothing of theirs runs).
# And onnxruntime-web, the ONNX runtime the page runs neural generators with (its dist/ files are copied into
# an exported page by splatforge export-web; nothing of it runs here), fetched the same way.
web_sources=(
  "zlib-sync 0.1.10 sha512-t7/pYg5tLBznL1RuhmbAt8rNp5tbhr+TSrJFnMkRtrGIaPJZ6Dc0uR4u3OoQI2d6cGlVI62E3Gy6gwkxyIqr/w=="
  "zstd-napi 0.0.13 sha512-ErGF+Ko1PsbooU6oC/sc/diiWKwVa0kd/5AkFSs7kg5kwcEuOtSzOy3xUOadXQlAVNab9TxsxaUk3hOq3cj/lA=="
  "onnxruntime-web 1.31.1 sha512-5GeH+bWQ+HxM10z7erGlsWqryrwMbSvm/1tkIsKTT48g0fI19VXVVC435t4t7VsPdSQeS7NmuZPXrQ73k82URw=="
)
install_web_sources() {
  local entry name version integrity dir tmp got
  for entry in "${web_sources[@]}"; do
    read -r name version integrity <<<"$entry"
    dir=web/third_party/$name-$version
    if [ -f "$dir/.sf-integrity" ] && [ "$(cat "$dir/.sf-integrity")" = "$integrity" ]; then continue; fi
    echo "setup: fetching the C sources of $name $version (web build)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
    got="sha512-$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/$name-$version.tgz")"
    if [ "$got" != "$integrity" ]; then
      echo "setup: error: $name-$version.tgz has checksum $got, expected $integrity" >&2
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$dir" && mkdir -p "$dir"
    tar -xzf "$tmp/$name-$version.tgz" -C "$dir" --strip-components=1
    echo "$integrity" >"$dir/.sf-integrity"
    rm -rf "$tmp"
  done
  echo "setup: web build sources present"
}

cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  report_versions
  install_npm_tools
  install_web_sources
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
report_versions
install_npm_tools
install_web_sources
echo "setup: done"
