#!/usr/bin/env bash
# Installs every Debian package Splatforge needs to build, test and benchmark. Idempotent: packages that
# are already present are skipped, so a second run costs a few seconds.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev
  zlib1g-dev libzstd-dev
  nlohmann-json3-dev libfmt-dev libstb-dev libcli11-dev libtinygltf-dev
  libvulkan-dev libvulkan-volk-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
