#!/usr/bin/env bash
# welcomed DATA_DIR: marks a fresh data directory as past the first-run welcome (the row Don't
# show again stores), so that a screenshot script's window is not covered by it. Sourced by the
# screenshot scripts; only scripts/screenshots_firstrun.sh shows the welcome itself.
welcomed() {
  bin/superfluid keys list --data-dir "$1" > /dev/null # creates the database on a fresh folder
  sqlite3 "$1/superfluid.db" "INSERT OR REPLACE INTO app_settings (key, value) VALUES ('welcomed', 'true')"
}
