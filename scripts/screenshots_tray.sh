#!/usr/bin/env bash
# The real tray part of make screenshots (scripts/screenshots.sh sources it, with $out set):
# runs scripts/tray_e2e.sh on its own Xvfb display with xfce4-panel as the tray host, which
# writes tray-menu.png (the icon's menu open on the panel) and no-tray.png (the window's banner
# once the panel is killed) into $out. Run alone: bash scripts/screenshots_tray.sh.

tray_screenshots() {
  TRAY_E2E_INNER='' TRAY_E2E_SHOTS="${out:-docs/screenshots}" bash scripts/tray_e2e.sh
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  bash scripts/tray/install.sh
  tray_screenshots
fi
