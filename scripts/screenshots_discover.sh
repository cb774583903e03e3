#!/usr/bin/env bash
# The Discover part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb and
# D-Bus session, with shot, click, $out and $work set; run alone it sets them up itself): the
# desktop app against bin/fakehub serving two repositories with search metadata, one with a
# hostile model card; a search, a repository opened (quantizations with fit badges), its card.

source "$(dirname "${BASH_SOURCE[0]}")/screenshots_welcomed.sh"

discover_screenshots() {
  local d="$work/discover" port=$((20000 + RANDOM % 20000))
  mkdir -p "$d"
  cp assets/stories260K.gguf "$d/stories-Q8_0.gguf"
  cp assets/stories260K.gguf "$d/stories-F32.gguf"
  printf '# Stories\n\nA tiny model trained on children stories. <script>alert(1)</script>\n\n![banner](https://example.com/banner.png)\n\n- [Paper](https://arxiv.org/abs/2305.07759)\n- [not a link](javascript:alert(1))\n' > "$d/README.md"
  bin/fakehub -card "demo/stories-GGUF=$d/README.md" -info "demo/stories-GGUF=123456,321,mit,260000" \
    -info "demo/stories-small-GGUF=9876,12,apache-2.0,260000" \
    "demo/stories-GGUF=$d/stories-Q8_0.gguf" "demo/stories-GGUF=$d/stories-F32.gguf" \
    "demo/stories-small-GGUF=$d/stories-F32.gguf" > "$d/hub" &
  local dhub=$!
  for _ in $(seq 50); do [ -s "$d/hub" ] && break; sleep 0.1; done
  welcomed "$d/data"  # past the first-run welcome (screenshots_welcomed.sh)
  bin/superfluid --port "$port" --data-dir "$d/data" --hf-endpoint "$(head -1 "$d/hub")" > "$work/discover.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  sleep 2
  click "${DISCOVER_TAB_X:-150}" 50 1   # Discover
  click 300 92 0.3                      # the search box
  xdotool type --delay 10 "stories"
  xdotool key Return; sleep 1.5
  click "${DISCOVER_OPEN_X:-431}" "${DISCOVER_OPEN_Y:-193}" 2   # Open on the first hit
  shot discover
  click "${DISCOVER_CARD_X:-640}" "${DISCOVER_CARD_Y:-598}" 2   # Model card
  shot model-card
  kill -TERM "$app_pid"; wait "$app_pid" || true
  kill "$dhub" 2>/dev/null || true
}

if [ -z "${SCREENSHOTS_INNER:-}" ] || [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  if [ -z "${SCREENSHOTS_INNER:-}" ]; then
    export SCREENSHOTS_INNER=1
    exec xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- "$0" "$@"
  fi
  out=docs/screenshots; mkdir -p "$out"; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  shot() { /usr/bin/import -window root "$out/$1.png"; echo "wrote $out/$1.png"; }
  click() { xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.8}"; }
  discover_screenshots
fi
