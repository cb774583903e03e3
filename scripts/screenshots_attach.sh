#!/usr/bin/env bash
# The attachments part of make screenshots (scripts/screenshots.sh sources it, inside its Xvfb
# and D-Bus session, with shot, click, $out and $work set): the desktop app over a data
# directory with two copies of the bundled model, one with a random vision projector beside it
# and one with an audio projector (bin/fakeproj), so their rows say vision and audio; in the
# Playground a picture's path pasted into the input (fyne's clipboard holds text: a copied
# file's path attaches the file) goes with a question, and the reply streams back.

source "$(dirname "${BASH_SOURCE[0]}")/screenshots_welcomed.sh"

attach_screenshots() {
  local d="$work/attach" port=$((20000 + RANDOM % 20000))
  for kind in vision audio; do
    mkdir -p "$d/$kind"
    cp assets/stories260K.gguf "$d/$kind/stories-$kind.gguf"
    bin/fakeproj -embd 64 -kind "$kind" "$d/$kind/mmproj-stories-$kind.gguf"
    bin/superfluid add --data-dir "$d/data" --mmproj "$d/$kind/mmproj-stories-$kind.gguf" "$d/$kind/stories-$kind.gguf" > /dev/null
  done
  # A picture to attach: sky, sun and grass.
  convert -size 320x170 gradient:'#5a96eb-#a8ccf2' \( -size 320x70 xc:'#3c8c3c' \) -append \
    -fill '#fad228' -draw 'circle 260,50 284,50' "$d/meadow.png"
  welcomed "$d/data"  # past the first-run welcome (screenshots_welcomed.sh)
  bin/superfluid --port "$port" --data-dir "$d/data" > "$work/attach.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  sleep 2

  click 50 50 1                    # Models: the projectors' models say what they take
  shot models-vision
  click 352 50 1                   # Playground: the first model (stories-audio) is chosen
  click 480 128 0.8                # the model picker
  click 480 "${ATTACH_VISION_Y:-193}" 0.8  # stories-vision
  click 200 168 0.8                # Options (folded)
  click 720 265 0.3                # Max tokens: a short reply, so the picture stays in view
  xdotool key ctrl+a; xdotool type --delay 10 "24"
  click 200 168 0.8                # fold the options again: the transcript keeps the height
  printf '%s' "$d/meadow.png" | xclip -selection clipboard
  click 400 540 0.3                # the input
  xdotool key ctrl+v; sleep 1      # the pasted path attaches the picture
  xdotool type --delay 10 "Once upon a time"
  click 818 597 4                  # Send
  shot playground-attach

  kill -TERM "$app_pid"
  local code=0
  wait "$app_pid" || code=$?
  echo "the attachments app exited with code $code after SIGTERM"
  [ "$code" -eq 0 ] || { tail -20 "$work/attach.log"; return 1; }
}

# Run alone (while arranging the clicks): xvfb-run -a -s "-screen 0 900x660x24" dbus-run-session -- bash scripts/screenshots_attach.sh
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  . scripts/lib/shots.sh
  shots_alone
  attach_screenshots
fi
