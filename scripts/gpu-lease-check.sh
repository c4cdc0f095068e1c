#!/usr/bin/env bash
# One real lease on this host's GPUs, end to end: a bootstrap peer, a
# provider reading its GPUs through NVML and a renter, on 127.0.0.1, each
# its own daemon and home. The renter posts the embedded demo WASM job for
# one GPU of this host's family; the script waits for it to finish, then
# exports the lease's signed telemetry and verifies it offline (envelopes,
# chain, energy against power x time, coverage), and prints the provider's
# GPUs and its earnings, with the energy its meter read.
# It is what a provider runs on a new GPU host before joining the market,
# and how the NVML path is checked where a GPU machine is lent (CI has none).
#
# Usage: scripts/gpu-lease-check.sh [OUTDIR]
# Environment:
#   BIN      a built idlegrid (default: go build ./cmd/idlegrid into a temp dir)
#   BACKEND  the provider's gpu.backend: nvml (default) or sim, to try the
#            script on a machine without a GPU
#   GPU      the job's GPU models or families (default: the first GPU's family
#            as the provider reports it; sim: a10)
#   SECONDS_OF_WORK  the job's declared duration (default 60)
#   DEMO_N   the demo's matrix size, 1..2048 (default 1024: about 10 s of work)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
work=$(mktemp -d)
BACKEND=${BACKEND:-nvml}
WORK_S=${SECONDS_OF_WORK:-60}
DEMO_N=${DEMO_N:-1024}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if [[ -z "${BIN:-}" ]]; then
  BIN=$work/idlegrid
  go build -o "$BIN" ./cmd/idlegrid
fi

# start NAME ROLE FLAGS...: init a home and run its daemon in the background.
start() {
  local name=$1 role=$2; shift 2
  local home=$work/$name
  local init=(init --role "$role" --home "$home")
  [[ $role == provider ]] && init+=(--region de)
  "$BIN" "${init[@]}" >/dev/null
  "$BIN" daemon --home "$home" --listen /ip4/127.0.0.1/tcp/0 --api-listen 127.0.0.1:0 \
    --set p2p.nat=false --set attest.sample=250ms --set attest.window=2s \
    --set attest.voucher_interval=2s --set p2p.telemetry_gossip_every=2s "$@" \
    >"$out/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 120); do
    if "$BIN" id --home "$home" --json >"$work/$name.id" 2>/dev/null; then return 0; fi
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "$name: daemon exited:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "$name: API not up after 60 s" >&2; exit 1
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, backend $BACKEND, $("$BIN" version 2>&1 | head -1)"
start bootstrap bootstrap
boot=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(next(a for a in d["addrs"] if "/tcp/" in a))' "$work/bootstrap.id")
gpuflags=(--set gpu.backend="$BACKEND")
[[ $BACKEND == sim ]] && gpuflags+=(--set gpu.sim.profiles=a10)
start provider provider --bootstrap "$boot" "${gpuflags[@]}" --set provider.runtimes=wasm
start renter renter --bootstrap "$boot"

echo "## provider status"
"$BIN" status --home "$work/provider" | tee "$out/provider-status.txt"
if [[ -z "${GPU:-}" ]]; then
  if [[ $BACKEND == sim ]]; then GPU=a10; else
    GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
  fi
fi
module=$("$BIN" artifact add --home "$work/renter" node/executor/wasm/demo/demo.wasm | grep -o 'b[a-z2-7]\{58\}' | head -1)
echo "## job: 1 x $GPU, module $module, ${WORK_S}s"
t0=$(date +%s.%N)
"$BIN" job submit --home "$work/renter" --module "$module" --gpus 1 --gpu "$GPU" --tier bronze \
  --max-price 20 --duration "${WORK_S}s" --max-duration "$((WORK_S * 3))s" --bid-window 2s --max-wait 2m \
  --json -- "$DEMO_N" >"$work/submit.json"
job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/submit.json")
state=""
for _ in $(seq 1 $((WORK_S * 4 + 240))); do
  "$BIN" job status --home "$work/renter" --json "$job" >"$work/job.json"
  state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$work/job.json")
  case $state in completed|failed|unfilled|cancelled|expired|unverified) break ;; esac
  sleep 0.5
done
cp "$work/job.json" "$out/job.json"
echo "job $job: $state after $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
"$BIN" job logs --home "$work/renter" "$job" 2>&1 | tail -5 || true

lease=$("$BIN" leases --home "$work/renter" -q | head -1)
echo "## lease $lease: signed telemetry, verified offline"
"$BIN" attest export --home "$work/renter" -o "$out/attest.json" "$lease"
set +e
"$BIN" attest verify "$out/attest.json" | tee "$out/attest-verify.txt"
verified=${PIPESTATUS[0]}
set -e
echo "## provider earnings"
"$BIN" earnings --home "$work/provider" --days 1 | tee "$out/earnings.txt" || true
echo "## result: job $state, attest verify exit $verified"
[[ $verified == 0 ]]
