#!/usr/bin/env bash
# Installs the coding agents the end-to-end tests run (Claude Code, Codex CLI) at the versions
# pinned in package.json/package-lock.json into DIR (make passes a cache folder named by the
# hash of those two files, so a change of pins installs afresh and an unchanged one costs
# nothing). It never fails the build: without npm or a network the agent tests skip and say why.
# A failed install is remembered for an hour (DIR.failed), so that make test on a machine
# without a network does not wait on npm every time; remove that file to try again at once.
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
failed="$dir.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  echo "agents: the install failed less than an hour ago (log: $failed); the coding-agent tests will skip (rm $failed to retry now)"
  exit 0
fi
echo "agents: installing Claude Code and Codex CLI into $dir (about 800 MB, once)"
tmp="$dir.partial.$$"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 0
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
# Claude Code's install script places its native binary; package.json's allowScripts lets npm 11 run it.
# Few retries and a short fetch timeout: without a network npm would otherwise wait minutes.
if (cd "$tmp" && timeout 300 npm ci --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=30000 >npm.log 2>&1); then
  # Both must run: with install scripts off (ignore-scripts) or optional packages omitted,
  # claude is the package's placeholder stub, which only prints how to install.
  for bin in claude codex; do
    if ! (cd "$tmp" && timeout 60 "node_modules/.bin/$bin" --version >>npm.log 2>&1 </dev/null); then
      echo "agents: $bin --version failed after npm ci (install scripts off, or its native package missing?); the coding-agent tests will skip. Last lines of the log:"
      tail -5 "$tmp/npm.log"
      mkdir -p "${dir%/*}" && cp "$tmp/npm.log" "$failed"
      rm -rf "$tmp"
      exit 0
    fi
  done
  rm -rf "$dir" && mv "$tmp" "$dir"
  rm -f "$failed"
  echo "agents: installed"
else
  echo "agents: npm ci failed (no network?); the coding-agent tests will skip. Last lines of its log:"
  tail -5 "$tmp/npm.log"
  mkdir -p "${dir%/*}" && cp "$tmp/npm.log" "$failed"
  rm -rf "$tmp"
fi
exit 0
