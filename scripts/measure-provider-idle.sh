#!/usr/bin/env bash
# Measures an idle provider daemon with 8 simulated H100s: CPU (% of one
# core, from utime+stime in /proc/PID/stat over a fixed interval after a
# settling period) and memory (VmRSS and VmHWM from /proc/PID/status).
# Linux only. The numbers are in docs/benchmarks.md ("Trust").
#
# Usage: scripts/measure-provider-idle.sh [on|off|both]   (default both)
#   on:   the sampler runs at 1 Hz (attest.sample=1s, attest.window=1m, the
#         defaults)
#   off:  attest.sample=1h attest.window=1h: the sampler effectively off
#   both: on, then off, then the difference
# Environment: SETTLE (seconds, default 30), DURATION (seconds, default 120),
#   BIN (a built binary; default: go build ./cmd/idlegrid into a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-both}
SETTLE=${SETTLE:-30}
DURATION=${DURATION:-120}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -z "${BIN:-}" ]]; then
  BIN=$work/idlegrid
  go build -o "$BIN" ./cmd/idlegrid
fi
hz=$(getconf CLK_TCK)
gpus=h100-sxm-80gb$(printf ',h100-sxm-80gb%.0s' 1 2 3 4 5 6 7)

# cpu_ticks PID: utime + stime in clock ticks (fields 14 and 15 of stat,
# counted after the parenthesised command name).
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

# measure NAME SET...: runs one daemon and prints "NAME cpu% rss_kib hwm_kib".
measure() {
  local name=$1; shift
  local home=$work/$name
  "$BIN" init --role provider --region de --home "$home" >/dev/null
  "$BIN" daemon --home "$home" --listen /ip4/127.0.0.1/tcp/0 --api-listen 127.0.0.1:0 \
    --set gpu.backend=sim --set "gpu.sim.profiles=$gpus" --set provider.runtimes=wasm \
    "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  sleep "$SETTLE"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "$name: daemon exited; log:" >&2; cat "$work/$name.log" >&2; exit 1
  fi
  local t0 c0 t1 c1
  t0=$(date +%s.%N); c0=$(cpu_ticks "$pid")
  sleep "$DURATION"
  t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
  local rss hwm
  rss=$(status_kib "$pid" VmRSS); hwm=$(status_kib "$pid" VmHWM)
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  awk -v n="$name" -v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" -v rss="$rss" -v hwm="$hwm" \
    'BEGIN {printf "%s cpu_pct=%.3f cpu_s=%.2f over_s=%.1f rss_mib=%.1f hwm_mib=%.1f\n", n, 100*c/hz/(t1-t0), c/hz, t1-t0, rss/1024, hwm/1024}'
}

echo "# $(nproc) CPUs, $(uname -sr), settle ${SETTLE}s, measure ${DURATION}s, $(date -u +%FT%TZ)"
case $mode in
on) measure sampler-on --set attest.sample=1s ;;
off) measure sampler-off --set attest.sample=1h --set attest.window=1h ;;
both)
  on=$(measure sampler-on --set attest.sample=1s); echo "$on"
  off=$(measure sampler-off --set attest.sample=1h --set attest.window=1h); echo "$off"
  awk -v a="$on" -v b="$off" 'BEGIN {
    split(a, x, /cpu_pct=/); split(x[2], xa, " "); split(b, y, /cpu_pct=/); split(y[2], yb, " ")
    printf "sampler cpu_pct=%.3f (on - off)\n", xa[1] - yb[1] }'
  ;;
*) echo "usage: $0 [on|off|both]" >&2; exit 2 ;;
esac
