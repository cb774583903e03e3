#!/usr/bin/env bash
# tray_e2e.sh: the real tray on a real (virtual) desktop. Under Xvfb in a D-Bus session it runs
# xfce4-panel holding only its notification area (a StatusNotifier host, Debian's own), starts
# bin/superfluid --hidden on a fresh data dir and a random port, finds its icon on the panel,
# opens its menu with a right click (docs/screenshots/tray-menu.png), loads and unloads the
# bundled model from it (checked on GET /api/ps), opens the window and the playground, ticks
# "Start superfluid when I log in" (the XDG entry checked; tray-start-at-login.png), kills
# the panel and checks the window now shows the no-tray banner (docs/screenshots/no-tray.png),
# then quits with SIGTERM and checks the exit code. Exits 0 when all of that held; prints
# "tray_e2e: skip: ..." and exits 3 when a tool it needs is missing (scripts/tray/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TRAY_E2E_INNER:-}" ]; then
  for tool in xvfb-run dbus-run-session xdotool import compare convert xfce4-panel curl; do
    command -v "$tool" >/dev/null || { echo "tray_e2e: skip: $tool is not installed (scripts/tray/install.sh)"; exit 3; }
  done
  [ -x /usr/lib/x86_64-linux-gnu/xfce4/xfconf/xfconfd ] || [ -n "$(command -v xfconfd)" ] ||
    { echo "tray_e2e: skip: xfconfd is not installed (apt-get install xfconf)"; exit 3; }
  [ -x bin/superfluid ] || { echo "tray_e2e: skip: no bin/superfluid (make build)"; exit 3; }
  export TRAY_E2E_INNER=1
  exec xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- "$0" "$@"
fi

out=${TRAY_E2E_SHOTS:-docs/screenshots}
mkdir -p "$out"
work=$(mktemp -d)
cleanup() {
  kill -9 "${app_pid:-}" "${panel_pid:-}" "${conf_pid:-}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tray_e2e: FAIL: $*"; echo "--- app log"; cat "$work/app.log" 2>/dev/null; exit 1; }
step() { echo "tray_e2e: $*"; }
owned() { dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"; }
wait_for() { # seconds, what, command...
  local n=$(($1 * 10)) what=$2; shift 2
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  fail "never: $what"
}

# The panel: xfconfd started here (not bus-activated) so that it reads our XDG_CONFIG_HOME.
export XDG_CONFIG_HOME="$work/config"
mkdir -p "$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml"
cp scripts/tray/xfce4-panel.xml "$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml/"
start_panel() {
  "$(command -v xfconfd || echo /usr/lib/x86_64-linux-gnu/xfce4/xfconf/xfconfd)" >/dev/null 2>&1 &
  conf_pid=$!
  sleep 0.3
  xfce4-panel --disable-wm-check >"$work/panel.log" 2>&1 &
  panel_pid=$!
  wait_for 15 "a StatusNotifierWatcher on the bus" owned org.kde.StatusNotifierWatcher
  sleep 1.5 # the panel draws itself
}
start_panel
/usr/bin/import -window root "$work/before.png"

port=$((20000 + RANDOM % 20000))
api="http://127.0.0.1:$port"
bin/superfluid --hidden --port "$port" --data-dir "$work/data" >"$work/app.log" 2>&1 &
app_pid=$!
wait_for 30 "the server on $api" curl -sf "$api/health" -o /dev/null
visible() { xdotool search --onlyvisible --name '^superfluid$' >/dev/null 2>&1; }
sleep 2
visible && fail "the window opened despite --hidden with a tray"

# The icon is what changed on the panel since the app started.
/usr/bin/import -window root "$work/after.png"
compare -metric AE -fuzz 5% "$work/before.png" "$work/after.png" "$work/diff.png" 2>/dev/null || true
box=$(convert "$work/before.png" "$work/after.png" -compose difference -composite -crop 900x40+0+0 +repage \
  -threshold 10% -trim -format '%w %h %X %Y' info: 2>/dev/null || true)
read -r w h x y <<<"$box"
[ -n "${w:-}" ] && [ "$w" -lt 100 ] || fail "no icon appeared on the panel (diff box: $box)"
ix=$((${x#+} + w / 2)) iy=$((${y#+} + h / 2))
step "icon at $ix,$iy (${w}x$h)"

menu() { xdotool mousemove "$ix" "$iy" click 3; sleep 1; }
keys() { for k in "$@"; do xdotool key "$k"; sleep 0.25; done; }
models_loaded() { curl -sf "$api/api/ps" | grep -q '"stories260K'; }
models_none() { curl -sf "$api/api/ps" | grep -q '"models":\[\]'; }

menu
/usr/bin/import -window root "$out/tray-menu.png"
step "wrote $out/tray-menu.png"
# The menu: Running on..., Stop server, No model loaded, Load model >, Open window, Open
# playground, Copy API URL, Quit (the disabled lines are skipped by the arrow keys).
keys Down Down Right Return
wait_for 30 "stories260K loaded (GET /api/ps)" models_loaded
step "loaded from the tray menu: $(curl -sf "$api/api/ps" | head -c 120)"
menu
# Now: Running on..., Stop server, stories260K > Unload, Load model >, ...
keys Down Down Right Return
wait_for 30 "stories260K unloaded (GET /api/ps)" models_none
step "unloaded from the tray menu"

menu
keys Down Down Down Return # Open window
wait_for 10 "the window after Open window" visible
# With no window manager it opens at 0,0, over the panel: move it below.
xdotool search --onlyvisible --name '^superfluid$' windowmove 0 34
sleep 1
/usr/bin/import -window root "$work/window.png"
menu
keys Down Down Down Down Return # Open playground
sleep 1.5
visible || fail "the window closed on Open playground"
/usr/bin/import -window root "$work/playground.png"
changed=$(compare -metric AE -fuzz 2% "$work/window.png" "$work/playground.png" /dev/null 2>&1 || true)
[ "${changed%% *}" -gt 5000 ] 2>/dev/null || fail "Open playground did not change the window ($changed pixels)"
step "window and playground opened from the tray menu"

# The Server tab's start-at-login checkbox writes the XDG autostart entry.
xdotool mousemove 245 90 click 1 # Server
sleep 1
xdotool mousemove 144 442 click 1 # Start superfluid when I log in
entry="$XDG_CONFIG_HOME/autostart/io.superfluid.app.desktop"
wait_for 5 "the autostart entry $entry" test -s "$entry"
grep -qx "Exec=$(readlink -f bin/superfluid) --hidden --data-dir=$work/data --port=$port" "$entry" || fail "autostart entry (the flags the app was started with carried): $(cat "$entry")"
sleep 0.5
/usr/bin/import -window root "$out/tray-start-at-login.png"
step "start at login wrote $entry"

# The panel dies: the window stays shown and gains the banner.
geom=$(xdotool search --onlyvisible --name '^superfluid$' getwindowgeometry | awk '/Geometry/{print $2}')
/usr/bin/import -window root "$work/with-tray.png"
kill -9 "$panel_pid" "$conf_pid"
wait_for 10 "the watcher gone" sh -c '! dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner string:org.kde.StatusNotifierWatcher | grep -q "boolean true"'
sleep 1.5
visible || fail "no window after the tray host went away"
/usr/bin/import -window root "$out/no-tray.png"
changed=$(compare -metric AE "$work/with-tray.png" "$out/no-tray.png" /dev/null 2>&1 || true)
[ "${changed%% *}" -gt 1000 ] 2>/dev/null || fail "the window did not change when the tray went away ($changed pixels)"
step "wrote $out/no-tray.png (window $geom; $changed pixels changed)"

kill -TERM "$app_pid"
code=0
wait "$app_pid" || code=$?
app_pid=
[ "$code" -eq 0 ] || fail "exit code $code after SIGTERM"
step "ok"
