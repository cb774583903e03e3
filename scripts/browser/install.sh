#!/usr/bin/env bash
# Installs Debian's chromium package for the web pages' browser tests (app/browsertest drives
# /usr/bin/chromium). It never fails the build: without apt (or root/sudo, or a network) the
# browser tests skip and say why. A failed install is remembered for an hour, so that make test
# on a machine without a network does not wait on apt every time; remove the file to retry now.
set -u
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: apt-get is not available; the Chromium tests will skip (install chromium at /usr/bin/chromium to run them)"
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "browser: not root and no password-less sudo; the Chromium tests will skip (sudo apt-get install chromium to run them)"
    exit 0
  fi
  sudo_cmd="sudo -n"
fi
failed="${XDG_CACHE_HOME:-$HOME/.cache}/superfluid/chromium.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  echo "browser: installing chromium failed less than an hour ago (log: $failed); the Chromium tests will skip (rm $failed to retry now)"
  exit 0
fi
echo "browser: installing Debian's chromium for the web pages' tests (once)"
mkdir -p "${failed%/*}"
if { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends chromium; } >"$failed" 2>&1; then
  rm -f "$failed"
else
  echo "browser: apt-get install chromium failed (log: $failed); the Chromium tests will skip"
fi
exit 0
