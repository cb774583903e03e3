#!/usr/bin/env bash
# Installs what building superfluid needs on Debian 12 and prepares the C include directory
# that the llama.cpp cgo build expects (the module zip lacks llama.cpp's vendor/ headers).
# Idempotent: a second run installs nothing and only checks.
set -euo pipefail

include_dir="${1:?usage: setup.sh INCLUDE_DIR}"
packages=(gcc g++ make pkg-config nlohmann-json3-dev libstb-dev
  libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# miniaudio.h ships inside the malgo Go module; llama.cpp includes it as "miniaudio/miniaudio.h".
if [ ! -f "$include_dir/miniaudio/miniaudio.h" ]; then
  malgo_dir=$(go mod download -json github.com/gen2brain/malgo@v0.11.24 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$include_dir/miniaudio"
  cp "$malgo_dir/miniaudio.h" "$include_dir/miniaudio/miniaudio.h"
fi
