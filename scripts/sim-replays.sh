#!/usr/bin/env bash
# Market replays (docs/benchmarks.md, "Market replays"): six windows of
# the shared traces, five seeds each, 10% flaky providers. W1 was used to
# tune the defaults, and T2 too for ExcludeBelowPrior (issue 11 follow-up);
# W2-W5 never were. Prints one table per window; pass
# --json to get JSON instead. Outputs are not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
traces=${TRACES:-../shared/data/traces}
bin=$(mktemp -d)/idlegrid
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/idlegrid
common=(--traces "$traces" --flaky 0.1 --seeds 1,2,3,4,5 "$@")
echo "## W1 (tuned): Philly jobs 20000-22999, 100 openb providers, arrivals x6"
"$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset 20000 --limit 3000 --providers 100 --time-scale 6
echo "## T2 (tuned): Philly jobs 40000-42999, 100 openb providers, arrivals x6"
"$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset 40000 --limit 3000 --providers 100 --time-scale 6
echo "## W2 (check): Philly jobs 60000-62999, 100 openb providers, arrivals x6"
"$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset 60000 --limit 3000 --providers 100 --time-scale 6
echo "## W3 (check): openb gpuspec33 pods 0-2999, 60 openb providers, arrivals x50"
"$bin" sim "${common[@]}" --format openb --jobs alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv --offset 0 --limit 3000 --providers 60 --time-scale 50
echo "## W4 (check): Philly jobs 70000-72999, 100 openb providers, arrivals x6"
"$bin" sim "${common[@]}" --format philly --jobs philly/philly.csv --offset 70000 --limit 3000 --providers 100 --time-scale 6
echo "## W5 (check): openb gpuspec33 pods 3000-5999, 60 openb providers, arrivals x50"
"$bin" sim "${common[@]}" --format openb --jobs alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv --offset 3000 --limit 3000 --providers 60 --time-scale 50
