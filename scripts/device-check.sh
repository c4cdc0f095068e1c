#!/usr/bin/env bash
# The checks a session runs when it is lent a GPU machine (16 cores, one
# H100 or H200; see docs/benchmarks.md): the real NVML path, one real lease on the
# GPU, and the network's formation at sizes this project's 2-core machines
# cannot hold. The machine has no Go toolchain, so the binaries are built
# here and carried compressed:
#
#   mkdir -p .devx && for p in ./node/nodetest ./node/gpu; do
#     go test -c -trimpath -ldflags='-s -w' -o .devx/$(basename $p).test $p; done
#   go build -trimpath -ldflags='-s -w' -o .devx/idlegrid ./cmd/idlegrid
#   xz -T2 .devx/*            # under the 64 MiB a call carries
#
# then, on the machine (carry .devx):  scripts/device-check.sh "$OUT" [SIZES]
# SIZES are BenchmarkAuction cluster sizes, run one process each, in order
# (default "200 500"); each gets BENCH_S seconds (default 200) before it is
# stopped, and what it printed so far is kept; BENCH_ARGS are added to each
# (-auctionbench.transport=quic: the machine caps open files at 20,000,
# which TCP exceeds at 200 nodes; -auctionbench.transport=memnet: no
# descriptors and no handshakes, the protocols' own cost alone).
# GPU_CHECK=0 skips the GPU part. GPU_LOAD=1 (the default where python3
# has torch) keeps the GPU busy through the smoke test and the lease, so the
# readings and the attestation's energy and load-power checks see a real
# load: bf16 matrix products, steady for LOAD_STEADY_S seconds (default 45: through the smoke
# test and the lease's first half),
# then in bursts of 0.8 to 2.5 s on and off, the shape of inference traffic
# that power readings averaged over a second catch badly.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/device-check.sh OUTDIR [SIZES]}
sizes=${2:-200 500}
BENCH_S=${BENCH_S:-200}
bin=/tmp/devbin
mkdir -p "$out" "$bin"
for f in .devx/*.xz; do
  t=$bin/$(basename "$f" .xz)
  xz -dc "$f" >"$t" 2>/dev/null || python3 -c 'import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$f" >"$t"
  chmod +x "$t"
done
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || true

gpu_load() { # SECONDS: the load described above, until SECONDS have passed
  exec python3 - "$1" "${LOAD_STEADY_S:-45}" <<'PY'
import random, sys, time
import torch
dur, steady = float(sys.argv[1]), float(sys.argv[2])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t0 = time.time(); rng = random.Random(1); on_until = t0 + steady; off_until = 0.0
while time.time() < t0 + dur:
    now = time.time()
    if now >= on_until and now >= off_until:  # a burst ended: rest, then the next
        off_until = now + rng.uniform(0.8, 2.5); on_until = off_until + rng.uniform(0.8, 2.5)
    if now < off_until:
        time.sleep(0.02); continue
    for _ in range(4): a @ b
    torch.cuda.synchronize()
PY
}

[[ ${GPU_CHECK:-1} == 1 ]] && {
  echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB, open files $(ulimit -n), $(uname -sr)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.draw,power.limit,temperature.gpu --format=csv 2>&1
  echo "## doctor"
  "$bin/idlegrid" init --role provider --region de --home /tmp/doc >/dev/null 2>&1
  timeout 60 "$bin/idlegrid" doctor --home /tmp/doc 2>&1
  load=0
  [[ ${GPU_LOAD:-1} == 1 ]] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && load=1
  echo "## TestNVMLSmoke, idle"
  IDLEGRID_NVML_SMOKE=1 timeout 60 "$bin/gpu.test" -test.run 'TestNVMLSmoke' -test.v 2>&1
  if [[ $load == 1 ]]; then
    gpu_load 200 & lp=$!
    sleep 5 # past the steady load's first seconds, when clocks and power still climb
    echo "## TestNVMLSmoke, under load"
    IDLEGRID_NVML_SMOKE=1 timeout 60 "$bin/gpu.test" -test.run 'TestNVMLSmoke' -test.v 2>&1
  fi
  echo "## one lease on the real GPU (load: $load)"
  BIN=$bin/idlegrid BACKEND=nvml timeout 150 scripts/gpu-lease-check.sh "$out/lease" 2>&1
  echo "lease check exit $?"
  [[ $load == 1 ]] && kill "$lp" 2>/dev/null
  nvidia-smi --query-gpu=power.draw,temperature.gpu,clocks.sm --format=csv 2>&1
} >"$out/gpu.txt" 2>&1
# The lease's daemon logs stay behind; the verdict and evidence come back.
tar -C "$out" -czf "$out/lease.tgz" lease 2>/dev/null && rm -rf "$out/lease"

tm=()
[[ -x /usr/bin/time ]] && tm=(/usr/bin/time -v)
cd node/nodetest
for n in $sizes; do
  echo "# $(date -u +%T) BenchmarkAuction nodes=$n, at most ${BENCH_S}s" >"$out/bench-$n.txt"
  timeout -s INT "$BENCH_S" "${tm[@]}" "$bin/nodetest.test" -test.run '^$' -test.bench 'BenchmarkAuction$' \
    -test.benchtime=1x -test.timeout 20m -test.v -auctionbench.nodes="$n" \
    -auctionbench.formwait="$((BENCH_S * 2 / 3))s" ${BENCH_ARGS:-} >>"$out/bench-$n.txt" 2>&1
  echo "# exit $?" >>"$out/bench-$n.txt"
done
