#!/usr/bin/env bash
# Installs the Debian tools `make package` and packaging/deb_test.go use: dpkg-dev
# (dpkg-shlibdeps), librsvg2-bin (rsvg-convert, for the icons), appstream (appstreamcli, for the
# metainfo), desktop-file-utils (desktop-file-validate) and lintian. Never fails the build:
# without them the packaging tests skip and say why, and make package names the missing tool.
set -u
. "$(dirname "$0")/../lib/apt.sh"
apt_install_optional packaging-tools "the packaging tests" dpkg-dev librsvg2-bin appstream desktop-file-utils lintian
exit 0
