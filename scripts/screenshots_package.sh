#!/usr/bin/env bash
# The packaging part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb and
# D-Bus session, with $out and $work set): builds the .deb from bin/superfluid with
# packaging/deb.sh, unpacks it (dpkg-deb -x, nothing is installed on this machine) and shows
# what a desktop makes of it:
#   package-launcher.png  rofi's application launcher (Debian's rofi), reading only the unpacked
#                         tree's .desktop file and hicolor icons, searched for "llm" (a Keyword)
#   package-icons.png     every icon size the .deb installs, at its own size, on a light and on a
#                         dark background
# Needs rofi, xdotool and ImageMagick (run alone, it installs them when missing).

package_screenshots() {
  local d="$work/package" rofi_pid
  mkdir -p "$d/home"
  DEB_COMPRESSION=none bash packaging/deb.sh bin/superfluid "$d" > "$d/deb"
  dpkg-deb -x "$(cat "$d/deb")" "$d/root"

  # The unpacked share/ first; /usr/share after it only for hicolor's index.theme (the theme's
  # folder list), which every desktop has from hicolor-icon-theme. A fresh XDG home: no
  # launcher history or cache from this machine.
  XDG_DATA_DIRS="$d/root/usr/share:/usr/share" XDG_DATA_HOME="$d/home/data" \
    XDG_CONFIG_HOME="$d/home/config" XDG_CACHE_HOME="$d/home/cache" \
    rofi -show drun -show-icons -icon-theme hicolor -theme Arc \
    -theme-str 'window {width: 560px; location: center; anchor: center;} listview {lines: 3;} element-icon {size: 48px;} element {padding: 6px;}' \
    > "$d/rofi.log" 2>&1 &
  rofi_pid=$!
  sleep 3
  xdotool type --delay 20 llm
  sleep 1
  # The bare X root is black around rofi's window; -trim keeps the window.
  /usr/bin/import -window root png:- | /usr/bin/convert png:- -trim +repage "$out/package-launcher.png"
  echo "wrote $out/package-launcher.png"
  kill "$rofi_pid"
  wait "$rofi_pid" 2>/dev/null || true
  if grep -q 'Failed to load image' "$d/rofi.log"; then
    cat "$d/rofi.log"
    return 1
  fi

  local sizes=(16 22 24 32 48 64 128 256) bg row=()
  for bg in '#f6f6f6' '#2b2b2b'; do
    local args=()
    for s in "${sizes[@]}"; do
      args+=(\( -size "$((s + 32))x288" "xc:$bg" "$d/root/usr/share/icons/hicolor/${s}x${s}/apps/io.superfluid.app.png" -gravity center -composite \))
    done
    /usr/bin/convert "${args[@]}" +append "$d/row-${bg#\#}.png"
    row+=("$d/row-${bg#\#}.png")
  done
  /usr/bin/convert "${row[@]}" -append "$out/package-icons.png"
  echo "wrote $out/package-icons.png"
}

# Run alone: bash scripts/screenshots_package.sh (after make build)
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  if [ -z "${SCREENSHOTS_INNER:-}" ]; then
    . scripts/lib/apt.sh
    apt_install xvfb xauth imagemagick xdotool rofi
    bash scripts/packaging/install.sh
    export SCREENSHOTS_INNER=1
    exec xvfb-run -a -s "-screen 0 900x660x24" bash "$0" "$@"
  fi
  out=${OUT_DIR:-docs/screenshots}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  package_screenshots
fi
