#!/usr/bin/env bash
# The Connect part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb and
# D-Bus session, with shot, click, $out and $work set): the desktop app with the bundled model
# loaded and an API key created with `superfluid keys`, so the Connect tab shows every app's
# setup for the server's address, the loaded model and the key read from $SUPERFLUID_API_KEY.

source "$(dirname "${BASH_SOURCE[0]}")/screenshots_welcomed.sh"

connect_screenshots() {
  local d="$work/connect" port=$((20000 + RANDOM % 20000))
  mkdir -p "$d"
  local key
  key=$(bin/superfluid keys create --data-dir "$d/data" laptop | grep -o 'sk-sf-[A-Za-z0-9_-]*' | head -1)
  welcomed "$d/data"  # past the first-run welcome (screenshots_welcomed.sh)
  bin/superfluid --port "$port" --data-dir "$d/data" > "$work/connect.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -s "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  # A reply loads the bundled model, which the tab then lists first.
  curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"model": "stories260K", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}' > /dev/null
  sleep 2
  click "${CONNECT_TAB_X:-540}" 50 1.5   # Connect (the last tab)
  shot connect
  # The scroll bar dragged to the bottom: Open WebUI and curl.
  xdotool mousemove 854 280 mousedown 1 mousemove 854 400 mousemove 854 620 mouseup 1; sleep 0.8
  shot connect-end

  kill -TERM "$app_pid"
  local code=0
  wait "$app_pid" || code=$?
  echo "the connect app exited with code $code after SIGTERM"
  [ "$code" -eq 0 ] || { tail -20 "$work/connect.log"; return 1; }
}

# Run alone: xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- bash scripts/screenshots_connect.sh
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  . scripts/lib/shots.sh
  shots_alone
  connect_screenshots
fi
