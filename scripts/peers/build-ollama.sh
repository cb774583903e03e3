#!/usr/bin/env bash
# Builds the real Ollama server the peer tests run (app/peertest) from the github.com/ollama/ollama
# module version this project pins, into DIR/ollama (make passes a cache folder named by that
# version, so a built binary costs nothing next time and a clone shares it). make exports its cgo
# flags, so the llama.cpp objects superfluid's own build compiled come from Go's build cache.
# It builds in a throwaway module that requires only github.com/ollama/ollama at that version (its
# dependencies at ollama's own versions): the project's go.mod need not carry the server's ~45
# extra dependencies, and the cache still hits, because the cgo packages (llama, ggml) import
# nothing outside the ollama module. It never fails the build: the peer tests skip and say why.
# A failed build is remembered for an hour (DIR.failed, holding the log), so that make test does
# not rebuild a broken peer every time; remove that file to try again at once.
# Usage: build-ollama.sh DIR VERSION [GO build flags...]
set -u
dir=$1 version=$2
shift 2
go=${GO:-go}
bin="$dir/ollama"
if [ -x "$bin" ] && timeout 20 "$bin" --version >/dev/null 2>&1 </dev/null; then
  exit 0
fi
failed="$dir.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  echo "peers: the ollama $version build failed less than an hour ago (log: $failed); the peer tests will skip (rm $failed to retry now)"
  exit 0
fi
echo "peers: building ollama $version into $dir (once; reuses the llama.cpp build cache)"
mkdir -p "${dir%/*}" || exit 0
tmp="$dir.partial.$$"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 0
start=$(date +%s)
mod="$tmp/module"
mkdir -p "$mod" && printf 'module superfluid.local/peers\n\ngo 1.24\n\nrequire github.com/ollama/ollama %s\n' "$version" >"$mod/go.mod"
# The version is stamped in so `ollama --version` and the server's /api/version say which one it is.
# -mod=mod lets go fill the throwaway go.sum (from the module proxy, checked against sum.golang.org).
if (cd "$mod" && timeout 3600 "$go" build -mod=mod "$@" \
      -ldflags "-X github.com/ollama/ollama/version.Version=${version#v}" \
      -o "$tmp/ollama" github.com/ollama/ollama) >"$tmp/build.log" 2>&1 \
  && timeout 20 "$tmp/ollama" --version >>"$tmp/build.log" 2>&1 </dev/null; then
  rm -rf "$mod" "$dir" && mv "$tmp" "$dir"
  rm -f "$failed"
  echo "peers: built ollama $version in $(( $(date +%s) - start ))s"
else
  echo "peers: the ollama $version build failed; the peer tests will skip. Last lines of its log:"
  tail -5 "$tmp/build.log"
  cp "$tmp/build.log" "$failed"
  rm -rf "$tmp"
fi
exit 0
