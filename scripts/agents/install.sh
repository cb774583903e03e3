#!/usr/bin/env bash
# Installs the coding agents the end-to-end tests run (Claude Code, Codex CLI) at the versions
# pinned in package.json/package-lock.json into DIR (make passes a cache folder named by the
# hash of those two files, so a change of pins installs afresh and an unchanged one costs
# nothing). It never fails the build: without npm or a network the agent tests skip and say why.
set -u
dir=$1
here=$(cd "${0%/*}" && pwd)
if [ -x "$dir/node_modules/.bin/claude" ] && [ -x "$dir/node_modules/.bin/codex" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "agents: npm is not installed; the coding-agent tests will skip (install Node.js and npm to run them)"
  exit 0
fi
echo "agents: installing Claude Code and Codex CLI into $dir (about 800 MB, once)"
tmp="$dir.partial.$$"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 0
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
# Claude Code's install script places its native binary; package.json's allowScripts lets npm 11 run it.
if (cd "$tmp" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
  rm -rf "$dir" && mv "$tmp" "$dir"
  echo "agents: installed"
else
  echo "agents: npm ci failed (no network?); the coding-agent tests will skip. Last lines of its log:"
  tail -5 "$tmp/npm.log"
  rm -rf "$tmp"
fi
exit 0
