#!/usr/bin/env bash
# Checks /metrics on a real NVIDIA GPU: the headless monitor with NVML,
# --metrics and --metrics-compat dcgm, a booking and a PyTorch process
# holding memory in it. Prints the DCGM-compatible readings next to
# nvidia-smi's and chronos's own series for the booking; then the scrape's
# time over 20 scrapes as curl sees it.
#
#   make build && mkdir -p .gpu && cp bin/chronos .gpu/
#   scripts/metrics-gpu-check.sh .gpu
#
# Uses GPU 0 and port 9400 on loopback; changes nothing on the card. The log
# is on stdout (and in $OUT/metrics-gpu-check.log when OUT is set).
set -uo pipefail
BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/chronos-metrics-check.XXXXXX)
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=nvml
LOG=${OUT:-$WORK}/metrics-gpu-check.log
exec > >(tee "$LOG") 2>&1
MON= JOB=
trap '[ -n "$JOB" ] && kill $JOB 2>/dev/null; [ -n "$MON" ] && kill $MON 2>/dev/null; wait $JOB $MON 2>/dev/null; rm -rf "$WORK"' EXIT

"$CHRONOS" --monitor --metrics 127.0.0.1:9400 --metrics-compat dcgm 2>"$WORK/monitor.log" &
MON=$!
"$CHRONOS" run 0 10% 10m -- python3 "$HERE/gpu_workload.py" hold --gib 4 --seconds 60 &
JOB=$!
for _ in $(seq 60); do
	nvidia-smi --query-compute-apps=pid,used_gpu_memory --format=csv,noheader | grep -q . && break
	sleep 0.5
done
sleep 12 # a monitor pass or two with the process in it

echo "== nvidia-smi"
nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu --format=csv
echo "== DCGM-compatible series"
curl -fsS http://127.0.0.1:9400/metrics | grep '^DCGM_FI_DEV' | grep -v '^#'
echo "== chronos series for the booking and GPU"
curl -fsS http://127.0.0.1:9400/metrics | grep -E '^chronos_(gpu|booking|user|enforcement)' | head -30
echo "== 20 scrapes"
for _ in $(seq 20); do curl -o /dev/null -fsS -w '%{time_total}\n' http://127.0.0.1:9400/metrics; done |
	sort -n | awk '{a[NR]=$1} END {printf "scrape seconds: min %s median %s max %s\n", a[1], a[int((NR+1)/2)], a[NR]}'
echo "== monitor log"
tail -5 "$WORK/monitor.log"
