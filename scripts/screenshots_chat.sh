#!/usr/bin/env bash
# The chat part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb and
# D-Bus session, with shot, click, $out and $work set): the desktop app over a data directory
# holding one saved conversation whose reply has a heading, a list, a table, a Go code block
# and a thought. The bundled stories260K cannot write markdown, so the conversation is seeded
# by hand: the app runs once to create its database, sqlite3 inserts the row the playground
# would have saved (the same JSON messages), and the app starts again and opens it from the
# saved conversations. Everything on screen after that is the real app drawing it. The reply is
# taller than the usual 900x660 screen's transcript, so this part runs in an X server of its own
# (900x1100) with the window made taller (xdotool windowsize), to show the whole turn at once.

source "$(dirname "${BASH_SOURCE[0]}")/screenshots_welcomed.sh"

chat_screenshots() {
  OUT_DIR="$out" CHAT_INNER=1 xvfb-run -a -s "-screen 0 900x1100x24" dbus-run-session -- bash scripts/screenshots_chat.sh
}

chat_inner() {
  local d="$work/chat" port=$((20000 + RANDOM % 20000))
  mkdir -p "$d"
  welcomed "$d/data"  # past the first-run welcome (screenshots_welcomed.sh)
  bin/superfluid --port "$port" --data-dir "$d/data" > "$work/chat.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  kill -TERM "$app_pid"; wait "$app_pid" || true

  local reply messages now
  reply=$(cat <<'MD'
## Reading a file in Go

Three steps:

1. **Open** it with `os.Open`
2. Read it *line by line*
3. Close it when done

| Function | Returns | Buffered |
|----------|---------|----------|
| `os.ReadFile` | the whole file | no |
| `bufio.Scanner` | one line at a time | yes |

```go
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err // the caller says what to do next
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); n++ {
	}
	return n, nil
}
```

See [the bufio docs](https://pkg.go.dev/bufio) for more.
MD
)
  messages=$(jq -n --arg reply "$reply" '[
    {role: "user", content: "How do I count the lines of a file in Go?"},
    {role: "assistant", content: $reply, reasoning_tokens: 38,
     reasoning: "The user wants a line count. A bufio.Scanner reads line by line without loading the whole file; show a table comparing it with os.ReadFile."}]')
  now=$(date -u +%Y-%m-%dT%H:%M:%S.000000000Z)
  sqlite3 "$d/data/superfluid.db" "INSERT INTO conversations (id, title, model, system, messages, created_at, updated_at)
    VALUES ('conv-screenshot', 'How do I count the lines of a file in Go?', 'stories260K', '',
      '$(printf '%s' "$messages" | sed "s/'/''/g")', '$now', '$now')"

  bin/superfluid --port "$port" --data-dir "$d/data" > "$work/chat.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  sleep 2
  xdotool search --name '^superfluid$' windowsize 860 1060; sleep 1
  click 352 50 1                   # Playground
  click "${CHAT_SAVED_X:-200}" "${CHAT_SAVED_Y:-89}" 0.8  # the saved conversations
  click "${CHAT_SAVED_X:-200}" "${CHAT_FIRST_Y:-130}" 1.5  # the seeded one
  click "${CHAT_INPUT_X:-400}" "${CHAT_INPUT_Y:-970}" 0.3  # the input: the meter counts the draft
  xdotool type --delay 10 "Thanks"
  sleep 1.5
  shot playground-markdown

  kill -TERM "$app_pid"
  local code=0
  wait "$app_pid" || code=$?
  echo "the chat app exited with code $code after SIGTERM"
  [ "$code" -eq 0 ] || { tail -20 "$work/chat.log"; return 1; }
}

# Run alone: bash scripts/screenshots_chat.sh (it starts its own Xvfb and D-Bus session).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  out=${OUT_DIR:-docs/screenshots}
  if [ -z "${CHAT_INNER:-}" ]; then
    chat_screenshots
    exit
  fi
  work=$(mktemp -d)
  trap 'kill -9 "${app_pid:-}" "${watcher_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
  # A stand-in tray host, as in scripts/screenshots.sh: no no-tray banner to move the clicks.
  [ -x bin/fakewatcher ] || go build -o bin/fakewatcher ./scripts/fakewatcher
  bin/fakewatcher > "$work/watcher" &
  watcher_pid=$!
  for _ in $(seq 50); do [ -s "$work/watcher" ] && break; sleep 0.1; done
  . scripts/lib/shots.sh
  chat_inner
fi
