# The screenshot scripts' shared helpers (source it from the repository root; bash only).
#   shot NAME        writes the whole screen to $out/NAME.png
#   click X Y [S]    clicks at X,Y and waits S seconds (0.8) for the window to redraw
#   shots_alone      what a screenshots_*.sh run by itself needs: $out (OUT_DIR or
#                    docs/screenshots), a $work folder, and a trap that kills the app it
#                    started ($app_pid) and removes $work on exit

shot() { /usr/bin/import -window root "$out/$1.png"; echo "wrote $out/$1.png"; }
click() { xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.8}"; }

shots_alone() {
  out=${OUT_DIR:-docs/screenshots}
  work=$(mktemp -d)
  trap 'kill -9 "${app_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
}
