#!/usr/bin/env bash
# Runs every native fuzz target in the module for the given time each.
# Usage: scripts/fuzz.sh [duration]   (default 30s)
set -euo pipefail
dur=${1:-30s}
cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "== $pkg $target ($dur)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$dur" "$pkg"
  done
done
