#!/usr/bin/env bash
# make screenshots: runs the real desktop app (bin/superfluid, no command) under Xvfb inside a
# D-Bus session, opens each tab, streams a playground reply from the bundled model, starts a
# download from a local fake Hugging Face Hub (bin/fakehub, paused at 40% so the bar shows mid-way),
# attaches a picture for a model with a projector (scripts/screenshots_attach.sh), opens team mode's Lanes and Bookings (scripts/screenshots_team.sh), the first-run welcome (scripts/screenshots_firstrun.sh), writes PNGs to docs/screenshots/, then quits with SIGTERM and checks the exit code is 0, with and
# without a session D-Bus.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SCREENSHOTS_INNER:-}" ]; then
  . scripts/lib/apt.sh
  apt_install xvfb xauth dbus imagemagick xdotool xclip curl rofi sqlite3
  export SCREENSHOTS_INNER=1
  exec xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- "$0" "$@"
fi

out=docs/screenshots
mkdir -p "$out"
work=$(mktemp -d)
cleanup() {
  kill "${hub_pid:-}" "${watcher_pid:-}" 2>/dev/null || true
  kill -9 "${app_pid:-}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The window opens at the top left of the bare X server; these are its controls' positions.
. scripts/lib/shots.sh

# A stand-in tray host (bin/fakewatcher owns the StatusNotifierWatcher name and draws nothing),
# so the window has no "No system tray" banner moving the controls these clicks aim at; the
# real tray has its own run with a real host (scripts/screenshots_tray.sh).
bin/fakewatcher > "$work/watcher" &
watcher_pid=$!
for _ in $(seq 50); do [ -s "$work/watcher" ] && break; sleep 0.1; done

cp assets/stories260K.gguf "$work/stories-F32.gguf"
bin/fakehub -pause 0.4 "demo/stories-GGUF=$work/stories-F32.gguf" > "$work/hub" &
hub_pid=$!
for _ in $(seq 50); do [ -s "$work/hub" ] && break; sleep 0.1; done
port=$((20000 + RANDOM % 20000))
source scripts/screenshots_welcomed.sh
welcomed "$work/data"            # the welcome has its own shot (screenshots_firstrun.sh)
bin/superfluid --port "$port" --data-dir "$work/data" --hf-endpoint "$(head -1 "$work/hub")" > "$work/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
sleep 2

click 50 50                      # Models
shot models
click 748 152 1.5                # a model's settings (the gear)
shot model-settings
click 385 572                    # Cancel (the dialog is 600 tall)
click 350 558 0.3                # the reference box
xdotool type --delay 10 "hf.co/demo/stories-GGUF:F32"
click 710 558 3                  # Download: the fake Hub pauses at 40%
shot models-download
click 352 50                     # Playground
click 400 535 0.3
xdotool type --delay 10 "Once upon a time, there was a little dog"
click 818 597 3                  # Send
shot playground
click 245 50 1.5                 # Server
shot server
click 453 50 1.5                 # Keys
click 400 229 0.3                # the name box
xdotool type --delay 10 "laptop"
click 89 268 0.3                 # Admin
click 60 347 1.5                 # Create key: the key is shown once, with Copy
shot keys
click 430 381                    # Done

kill -TERM "$app_pid"
code=0
wait "$app_pid" || code=$?
echo "the app exited with code $code after SIGTERM"
[ "$code" -eq 0 ]

# Images and audio: models with projectors, and an image turn (scripts/screenshots_attach.sh).
source scripts/screenshots_attach.sh
attach_screenshots

# Team mode (superfluid --team): the Server tab's Lanes and Bookings (scripts/screenshots_team.sh).
source scripts/screenshots_team.sh
team_screenshots

# The .deb as a desktop sees it: its launcher entry and icons (scripts/screenshots_package.sh).
source scripts/screenshots_package.sh
package_screenshots
# The welcome on a fresh data dir (scripts/screenshots_firstrun.sh).
source scripts/screenshots_firstrun.sh
firstrun_screenshots
# The playground's markdown, code, table and folded thought (scripts/screenshots_chat.sh).
source scripts/screenshots_chat.sh
chat_screenshots

# Connect your apps: every app's setup for the address, model and key (scripts/screenshots_connect.sh).
source scripts/screenshots_connect.sh
connect_screenshots
source scripts/screenshots_discover.sh
discover_screenshots

# The real tray: its menu on xfce4-panel and the no-tray banner (scripts/screenshots_tray.sh).
source scripts/screenshots_tray.sh
tray_screenshots

# No session D-Bus (so no tray host): the app still runs and quits cleanly.
env -u DBUS_SESSION_BUS_ADDRESS bin/superfluid --port "$port" --data-dir "$work/data" > "$work/nodbus.log" 2>&1 &
app_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
kill -TERM "$app_pid"
code=0
wait "$app_pid" || code=$?
echo "without a session D-Bus the app exited with code $code after SIGTERM"
[ "$code" -eq 0 ]
