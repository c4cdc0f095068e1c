#!/usr/bin/env bash
# Lots on the market replays (docs/benchmarks.md; docs/protocol.md §3.6,
# planned): idlegrid-bounded against idlegrid-lots, where every shard is
# split into lots by peer-ID hash and each RFQ goes to the lots with its
# cheapest fitting offers, so a provider hears only its lot. The same
# windows and 500 openb providers as scripts/sim-bounded.sh, five seeds,
# no flaky providers. Extra flags go to idlegrid sim: --lots 8
# --lots-per-rfq 1, --json. Outputs are not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
traces=${TRACES:-../shared/data/traces}
bin=$(mktemp -d)/idlegrid
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/idlegrid
common=(--traces "$traces" --seeds 1,2,3,4,5 --policies idlegrid-bounded,idlegrid-lots --providers 500 --per-seed "$@")
for off in 20000 40000 60000; do
  echo "## Philly jobs $off-$((off + 2999)), 500 openb providers, arrivals x100"
  "$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset "$off" --limit 3000 --time-scale 100
done
echo "## openb gpuspec33 pods 3000-5999, 500 openb providers, arrivals x200"
"$bin" sim "${common[@]}" --format openb --jobs alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv --offset 3000 --limit 3000 --time-scale 200
