#!/usr/bin/env bash
# Bounded bidding on the market replays (docs/benchmarks.md, "Market at
# scale"): idlegrid with everyone bidding against idlegrid-bounded, where
# providers bid only when auction.ShouldBid picks them over their shard's
# digests (want_bids 16). 500 openb providers (g2 and t4 shards of over 150),
# five seeds, no flaky providers. Pass --json for JSON. Outputs are not
# committed. Later flags win, so the same windows compare lots (planned,
# docs/protocol.md §3.6) with:
#   scripts/sim-bounded.sh --policies idlegrid-bounded,idlegrid-lots --per-seed [--lots 8 --lots-per-rfq 1]
set -euo pipefail
cd "$(dirname "$0")/.."
traces=${TRACES:-../shared/data/traces}
bin=$(mktemp -d)/idlegrid
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/idlegrid
common=(--traces "$traces" --seeds 1,2,3,4,5 --policies idlegrid,idlegrid-bounded --providers 500 "$@")
for off in 20000 40000 60000; do
  echo "## Philly jobs $off-$((off + 2999)), 500 openb providers, arrivals x100"
  "$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset "$off" --limit 3000 --time-scale 100
done
echo "## openb gpuspec33 pods 3000-5999, 500 openb providers, arrivals x200"
"$bin" sim "${common[@]}" --format openb --jobs alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv --offset 3000 --limit 3000 --time-scale 200
