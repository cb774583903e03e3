#!/usr/bin/env bash
# The first-run part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb
# and D-Bus session, with shot, click, $out and $work set): the desktop app on a fresh data
# directory opens on the welcome (the bundled model ready to chat, a suggested download, the
# models folder with Change…, the API URL with Copy); Don't show again closes it for good, and
# the next start over the same data directory opens on the Models tab without it.

firstrun_screenshots() {
  local d="$work/firstrun" port=$((20000 + RANDOM % 20000))
  bin/superfluid --port "$port" --data-dir "$d/data" > "$work/firstrun.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  sleep 3                          # the suggestion's look-up
  shot welcome
  click "${WELCOME_DONT_SHOW_X:-359}" "${WELCOME_DONT_SHOW_Y:-531}" 1  # Don't show again
  [ -z "${WELCOME_DEBUG:-}" ] || shot welcome-after
  kill -TERM "$app_pid"
  local code=0
  wait "$app_pid" || code=$?
  echo "the first-run app exited with code $code after SIGTERM"
  [ "$code" -eq 0 ] || { tail -20 "$work/firstrun.log"; return 1; }
  if command -v sqlite3 > /dev/null &&
    [ "$(sqlite3 "$d/data/superfluid.db" "SELECT value FROM app_settings WHERE key = 'welcomed'")" != "true" ]; then
    echo "Don't show again was not remembered"
    return 1
  fi
}

# Run alone (while arranging the clicks): xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- bash scripts/screenshots_firstrun.sh
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  . scripts/lib/shots.sh
  shots_alone
  firstrun_screenshots
fi
