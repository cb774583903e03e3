#!/usr/bin/env bash
# The team mode part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb and
# D-Bus session, with shot, click, $out and $work set): the desktop app started with --team over
# a data directory with two lanes (a local one serving the bundled model, an openai one whose
# upstream refuses) and bookings (this machine's admin's, running; alice's, waiting for
# approval), its Server tab's Lanes and Bookings sub-tabs, the Add lane dialog, and the Book
# dialog refusing a taken window (409 booking_conflict) inline.

source "$(dirname "${BASH_SOURCE[0]}")/screenshots_welcomed.sh"

team_screenshots() {
  local d="$work/team" port=$((20000 + RANDOM % 20000))
  local sf=(bin/superfluid --data-dir "$d")
  bin/superfluid users add alice --data-dir "$d" > /dev/null
  local key
  key=$(bin/superfluid keys create alice-key --user alice --data-dir "$d")
  bin/superfluid lanes add big --device cpu --engine local --model stories260K --data-dir "$d" > /dev/null
  bin/superfluid lanes add vllm --engine openai --url http://127.0.0.1:9/v1 --model Qwen3-32B --data-dir "$d" > /dev/null
  bin/superfluid bookings add --lane big --from now --to +2h --model stories260K --data-dir "$d" > /dev/null
  welcomed "$d"  # past the first-run welcome (screenshots_welcomed.sh)
  "${sf[@]}" --team --booking-approval --port "$port" > "$work/team.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  for body in '{"lane": "vllm", "start": "+3h", "end": "+5h"}' '{"device": "cpu", "start": "+6h", "end": "+8h"}'; do
    curl -sf -H "Authorization: Bearer $key" -H "Content-Type: application/json" -d "$body" "http://127.0.0.1:$port/v1/bookings" > /dev/null
  done
  sleep 2

  click 245 50 1                   # Server
  click "${TEAM_LANES_X:-160}" "${TEAM_SUB_Y:-92}" 2.5   # its Lanes sub-tab: the local lane loads, the openai one fails
  shot server-lanes
  click "${TEAM_ADD_X:-820}" "${TEAM_ADD_Y:-132}" 1     # Add lane
  shot server-lane-add
  click "${TEAM_CANCEL_X:-385}" "${TEAM_CANCEL_Y:-462}" 0.5  # Cancel
  click "${TEAM_BOOKINGS_X:-260}" "${TEAM_SUB_Y:-92}" 1.5  # Bookings
  shot server-bookings
  click "${TEAM_BOOK_X:-840}" "${TEAM_ADD_Y:-132}" 1    # Book
  click 464 182 0.8                # what to book: the list of lanes and devices
  click 464 222 0.5                # lane big, which this machine's admin holds now
  click 475 472 1.5                # Book: refused inline, 409 booking_conflict's message
  shot server-book-conflict

  kill -TERM "$app_pid"
  local code=0
  wait "$app_pid" || code=$?
  echo "the team mode app exited with code $code after SIGTERM"
  [ "$code" -eq 0 ] || { tail -20 "$work/team.log"; return 1; }
}

# Run alone (while arranging the clicks): xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- bash scripts/screenshots_team.sh
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  . scripts/lib/shots.sh
  shots_alone
  team_screenshots
fi
