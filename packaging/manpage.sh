#!/usr/bin/env bash
# Writes superfluid(1), in man's roff, from the binary's own --help, so the page cannot fall
# behind the flags:   packaging/manpage.sh BINARY VERSION > superfluid.1
# deb.sh installs it gzipped as /usr/share/man/man1/superfluid.1.gz. The help runs with an
# empty environment and HOME=/nonexistent, so that defaults derived from the build machine's
# home read "~" in the page.
set -euo pipefail
bin=${1:?usage: packaging/manpage.sh BINARY VERSION}
version=${2:?usage: packaging/manpage.sh BINARY VERSION}
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)

printf '.TH SUPERFLUID 1 "%s" "superfluid %s" "User Commands"\n' "$date" "$version"
printf '.SH NAME\nsuperfluid \\- local LLM server with OpenAI, Anthropic and Ollama APIs\n'
env -i HOME=/nonexistent PATH=/usr/bin:/bin "$bin" --help | sed 's|/nonexistent|~|g' | awk '
  # roff: a backslash is \e, a leading dot or quote would be a request, a leading dash a hyphen.
  function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); sub(/^[.\047]/, "\\\\\\&&", s); return s }
  NR == 1 { print ".SH DESCRIPTION" }
  /^[A-Z][A-Za-z ]*:$/ { section = toupper(substr($0, 1, length($0) - 1)); print ".SH " section; next }
  /^$/ { if (!blank) print ".PP"; blank = 1; next }
  { blank = 0 }
  section == "USAGE" { sub(/^ +/, ""); print ".B " esc($0); print ".br"; next }
  /^ +[^ ].*[^ ]  +[^ ]/ && section != "" {
    line = $0; sub(/^ +/, "", line)
    match(line, /  +/)
    print ".TP"; print "\\fB" esc(substr(line, 1, RSTART - 1)) "\\fR"; print esc(substr(line, RSTART + RLENGTH))
    next
  }
  { print esc($0) }
'
printf '.SH SEE ALSO\n\\fBsuperfluid\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR for each command; https://github.com/superfluid/superfluid\n'
