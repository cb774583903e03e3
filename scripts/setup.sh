#!/usr/bin/env bash
# Installs what building superfluid needs on Debian 12 and prepares the C include directory
# that the llama.cpp cgo build expects (the module zip lacks llama.cpp's vendor/ headers).
# Idempotent: a second run installs nothing and only checks.
set -euo pipefail

include_dir="${1:?usage: setup.sh INCLUDE_DIR}"
packages=(gcc g++ make pkg-config nlohmann-json3-dev libstb-dev
  libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev)

. "$(dirname "$0")/lib/apt.sh"
if [ -n "$(apt_missing "${packages[@]}")" ]; then
  echo "setup: installing $(apt_missing "${packages[@]}")"
  apt_install "${packages[@]}"
fi

# miniaudio.h ships inside the malgo Go module; llama.cpp includes it as "miniaudio/miniaudio.h".
if [ ! -f "$include_dir/miniaudio/miniaudio.h" ]; then
  malgo_dir=$(go mod download -json github.com/gen2brain/malgo@v0.11.24 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$include_dir/miniaudio"
  cp "$malgo_dir/miniaudio.h" "$include_dir/miniaudio/miniaudio.h"
fi
