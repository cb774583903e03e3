#!/usr/bin/env bash
# Renders superfluid's icon, assets/icon.svg (the one source), to PNGs with rsvg-convert
# (Debian: librsvg2-bin; scripts/packaging/install.sh installs it).
#   packaging/icons.sh hicolor ROOT   writes ROOT/usr/share/icons/hicolor/NxN/apps/ID.png for each
#                                     size a desktop theme looks up, and scalable/apps/ID.svg
#   packaging/icons.sh assets         rewrites the committed PNGs: assets/icon.png (256×256: the
#                                     window icon the binary embeds, and the source fyne package
#                                     makes the Linux tarball's pixmap and the Windows .ico from;
#                                     fyne's .ico holds one image, and its header stores the width
#                                     in one byte, where 0 means 256) and assets/icon-1024.png
#                                     (the macOS .icns source: fyne package --icon)
# packaging/packaging_test.go checks that the committed PNGs match a fresh render.
set -euo pipefail
cd "$(dirname "$0")/.."
id=io.superfluid.app
svg=assets/icon.svg
sizes=(16 22 24 32 48 64 128 256 512)

if ! command -v rsvg-convert >/dev/null; then
  echo "icons: rsvg-convert is missing (apt-get install librsvg2-bin, or bash scripts/packaging/install.sh)" >&2
  exit 1
fi
render() { rsvg-convert --width "$1" --height "$1" --keep-aspect-ratio --format png "$svg" --output "$2"; }

case "${1:-}" in
hicolor)
  root=${2:?usage: packaging/icons.sh hicolor ROOT}
  for s in "${sizes[@]}"; do
    dir="$root/usr/share/icons/hicolor/${s}x${s}/apps"
    mkdir -p "$dir"
    render "$s" "$dir/$id.png"
  done
  mkdir -p "$root/usr/share/icons/hicolor/scalable/apps"
  # The installed SVG drops the source's comment (it names this script's paths).
  sed '/^<!--/,/-->$/d' "$svg" > "$root/usr/share/icons/hicolor/scalable/apps/$id.svg"
  ;;
assets)
  render 256 assets/icon.png
  render 1024 assets/icon-1024.png
  ;;
*)
  echo "usage: packaging/icons.sh hicolor ROOT | assets" >&2
  exit 2
  ;;
esac
