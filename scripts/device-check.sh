#!/usr/bin/env bash
# The checks a session runs when it is lent a GPU machine (16 cores, one
# H200; see docs/benchmarks.md): the real NVML path, one real lease on the
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
# GPU_CHECK=0 skips the GPU part.
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

[[ ${GPU_CHECK:-1} == 1 ]] && {
  echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB, open files $(ulimit -n), $(uname -sr)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.draw,power.limit,temperature.gpu --format=csv 2>&1
  echo "## doctor"
  "$bin/idlegrid" init --role provider --region de --home /tmp/doc >/dev/null 2>&1
  timeout 60 "$bin/idlegrid" doctor --home /tmp/doc 2>&1
  echo "## TestNVMLSmoke"
  IDLEGRID_NVML_SMOKE=1 timeout 60 "$bin/gpu.test" -test.run 'TestNVMLSmoke' -test.v 2>&1
  echo "## one lease on the real GPU"
  BIN=$bin/idlegrid BACKEND=nvml timeout 150 scripts/gpu-lease-check.sh "$out/lease" 2>&1
  echo "lease check exit $?"
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
