#!/usr/bin/env bash
# Installs what scripts/tray_e2e.sh (the real tray test) needs from Debian: Xvfb, a D-Bus
# session, xdotool and ImageMagick to drive and look at the screen, and xfce4-panel with
# xfconf as the StatusNotifier host. It never fails the build: without apt (or root/sudo, or a
# network) the tray test skips and says why. A failed install is remembered for an hour so
# that make test offline does not wait on apt each time; remove the file to retry now.
set -u
pkgs=(xvfb xauth dbus imagemagick xdotool curl xfce4-panel xfconf)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "tray: apt-get is not available; the real tray test will skip (install ${missing[*]} to run it)"
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "tray: not root and no password-less sudo; the real tray test will skip (sudo apt-get install ${missing[*]})"
    exit 0
  fi
  sudo_cmd="sudo -n"
fi
failed="${XDG_CACHE_HOME:-$HOME/.cache}/superfluid/tray.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  echo "tray: installing ${missing[*]} failed less than an hour ago (log: $failed); the real tray test will skip (rm $failed to retry now)"
  exit 0
fi
echo "tray: installing ${missing[*]} for the real tray test (once)"
mkdir -p "${failed%/*}"
if { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$failed" 2>&1; then
  rm -f "$failed"
else
  echo "tray: apt-get install failed (log: $failed); the real tray test will skip"
fi
exit 0
