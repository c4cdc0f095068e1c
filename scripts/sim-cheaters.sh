#!/usr/bin/env bash
# Cheating providers against canary runs (docs/benchmarks.md, "Cheaters
# and canary runs"): 10% of providers return a wrong result for 20% of
# their leases, and the renter re-runs 0, 5% and 20% of its jobs on a
# second provider (auction.CanaryDue, as market.canary_rate). W1 was
# looked at first; W2 and W3 only checked. One table per window and rate;
# pass --json to get JSON (per seed) instead. Outputs are not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
traces=${TRACES:-../shared/data/traces}
bin=$(mktemp -d)/idlegrid
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/idlegrid
common=(--traces "$traces" --flaky 0.1 --cheaters 0.1 --cheat-rate 0.2 --seeds 1,2,3,4,5 --policies idlegrid,greedy "$@")
w1=(--format philly --jobs philly/philly.csv --offset 20000 --limit 3000 --providers 100 --time-scale 6)
w2=(--format philly --jobs philly/philly.csv --offset 60000 --limit 3000 --providers 100 --time-scale 6)
w3=(--format openb --jobs alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv --offset 0 --limit 3000 --providers 60 --time-scale 50)
for rate in 0 0.05 0.2; do
	echo "## W1: Philly jobs 20000-22999, 100 openb providers, arrivals x6; canary rate $rate"
	"$bin" sim "${common[@]}" --canary-rate "$rate" "${w1[@]}"
	echo "## W2: Philly jobs 60000-62999, 100 openb providers, arrivals x6; canary rate $rate"
	"$bin" sim "${common[@]}" --canary-rate "$rate" "${w2[@]}"
	echo "## W3: openb gpuspec33 pods 0-2999, 60 openb providers, arrivals x50; canary rate $rate"
	"$bin" sim "${common[@]}" --canary-rate "$rate" "${w3[@]}"
done
