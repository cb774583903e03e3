#!/usr/bin/env bash
# Installs what scripts/tray_e2e.sh (the real tray test) needs from Debian: Xvfb, a D-Bus
# session, xdotool and ImageMagick to drive and look at the screen, and xfce4-panel with
# xfconf as the StatusNotifier host. Never fails the build: without them the tray test skips
# and says why.
set -u
. "$(dirname "$0")/../lib/apt.sh"
apt_install_optional tray "the real tray test" xvfb xauth dbus imagemagick xdotool curl xfce4-panel xfconf
exit 0
