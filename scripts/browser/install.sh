#!/usr/bin/env bash
# Installs Debian's chromium package for the web pages' browser tests (app/browsertest drives
# /usr/bin/chromium). Never fails the build: without it the browser tests skip and say why.
set -u
. "$(dirname "$0")/../lib/apt.sh"
[ -x /usr/bin/chromium ] || apt_install_optional chromium "the Chromium tests" chromium
exit 0
