#!/usr/bin/env bash
# Installs the Debian tools `make package` and packaging/deb_test.go use: dpkg-dev
# (dpkg-shlibdeps), librsvg2-bin (rsvg-convert, for the icons), appstream (appstreamcli, for the
# metainfo), desktop-file-utils (desktop-file-validate) and lintian. It never fails the build:
# without apt (or root/sudo, or a network) the packaging tests skip and say why, and make package
# names the missing tool. A failed install is remembered for an hour, so that make test on a
# machine without a network does not wait on apt every time; remove the file to retry now.
set -u
want=(dpkg-dev librsvg2-bin appstream desktop-file-utils lintian)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "packaging: apt-get is not available; the packaging tests will skip (install ${missing[*]} to run them)"
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "packaging: not root and no password-less sudo; the packaging tests will skip (sudo apt-get install ${missing[*]})"
    exit 0
  fi
  sudo_cmd="sudo -n"
fi
failed="${XDG_CACHE_HOME:-$HOME/.cache}/superfluid/packaging-tools.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  echo "packaging: installing ${missing[*]} failed less than an hour ago (log: $failed); the packaging tests will skip (rm $failed to retry now)"
  exit 0
fi
echo "packaging: installing ${missing[*]} for make package and its tests (once)"
mkdir -p "${failed%/*}"
if { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$failed" 2>&1; then
  rm -f "$failed"
else
  echo "packaging: apt-get install ${missing[*]} failed (log: $failed); the packaging tests will skip"
fi
exit 0
