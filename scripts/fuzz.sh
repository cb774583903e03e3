#!/usr/bin/env bash
# Runs every Go fuzz target in the repository (func FuzzXxx(f *testing.F) in a _test.go file) for
# FUZZTIME each, one after another, and fails at the end when any target failed. make fuzz calls
# it with make's build flags in the environment; make test runs only the targets' seed corpora.
#
#   FUZZTIME      how long each target runs (go test -fuzztime: 10m, 30s, 5000x)
#   FUZZPARALLEL  fuzzing processes per target (go test -parallel)
#   FUZZMINIMIZE  how long the fuzzer may minimize a new input (go test -fuzzminimizetime);
#                 Go's 60s default stalls a target for a minute on every large input
#   FUZZ          a regular expression on target names: only those run
#   TAGS          the build tags (make's: amx on CPUs with AMX)
#   SUPERFLUID_WORKER_BIN  a superfluid binary: FuzzTokenize drives its real llama.cpp worker
#
# A failing target leaves its input in the package's testdata/fuzz/FuzzXxx/ (Go's layout):
# fix the defect, keep the file as a regression case, run the target again.
set -uo pipefail

FUZZTIME=${FUZZTIME:-10m}
FUZZPARALLEL=${FUZZPARALLEL:-$(nproc 2>/dev/null || echo 1)}
FUZZMINIMIZE=${FUZZMINIMIZE:-10s}
FUZZ=${FUZZ:-.}
GO=${GO:-go}

cd "$(dirname "$0")/.."
targets=$(find . -name '*_test.go' -not -path './.*' -not -path '*/testdata/*' -print0 |
  xargs -0 grep -H -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' |
  sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*|\1 \2|' | sort -u |
  awk -v re="$FUZZ" '$2 ~ re')
if [ -z "$targets" ]; then
  echo "fuzz: no target matches FUZZ=$FUZZ" >&2
  exit 1
fi

failed=()
while read -r dir name; do
  echo "== fuzz $name in $dir for $FUZZTIME (parallel $FUZZPARALLEL)"
  # -run '^$' skips the package's other tests; the target's seeds run first anyway.
  if ! $GO test -tags "${TAGS:-}" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" \
    -fuzzminimizetime "$FUZZMINIMIZE" -parallel "$FUZZPARALLEL" "$dir"; then
    failed+=("$name ($dir)")
  fi
done <<<"$targets"

if ((${#failed[@]})); then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: every target ran for $FUZZTIME without a failure"
