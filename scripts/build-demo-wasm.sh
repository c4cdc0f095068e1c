#!/usr/bin/env bash
# Assembles the devnet's demo workload, node/executor/wasm/demo/demo.wat,
# into demo.wasm (committed next to it and embedded in the binary) with the
# JS port of wabt, fetched by npx into npm's cache (nothing lands in the
# repository). Needs node and npm.
#
# Usage: scripts/build-demo-wasm.sh
#
# Afterwards update CID (and ExpectedResult if the output changed) in
# node/executor/wasm/demo/demo.go; `go test ./node/executor/wasm/demo`
# fails with the new values until they match.
set -euo pipefail
WABT_VERSION=1.0.39
cd "$(dirname "$0")/../node/executor/wasm/demo"
npx --yes --package="wabt@${WABT_VERSION}" -- \
  wat2wasm --debug-names demo.wat -o demo.wasm
echo "demo.wasm: $(wc -c <demo.wasm) bytes, sha256 $(sha256sum demo.wasm | cut -d' ' -f1)"
