#!/usr/bin/env bash
# Checks chronos on a real NVIDIA GPU, next to small PyTorch workloads.
# Repeatable by anyone with a GPU and PyTorch:
#
#   make build && go test -c -o .gpu/core.test ./core && go test -c -o .gpu/gpu.test ./gpu
#   cp bin/chronos .gpu/ && sudo scripts/gpu-check.sh .gpu
#
# It uses GPU 0, never changes clocks, compute mode, MIG or persistence,
# starts its own MPS daemon with a private pipe directory and always stops it.
# Output: the log on stdout (and in $OUT/gpu-check.log when OUT is set).
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
HERE=$(cd "$(dirname "$0")" && pwd)
LOAD="python3 $HERE/gpu_workload.py"
WORK=$(mktemp -d /tmp/chronos-gpu-check.XXXXXX)
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=nvml
export PATH=$PATH:/usr/local/nvidia/bin
LOG=${OUT:-$WORK}/gpu-check.log
exec > >(tee "$LOG") 2>&1

MPS_PIPE=$WORK/mps-pipe MPS_LOGS=$WORK/mps-log
mkdir -p "$MPS_PIPE" "$MPS_LOGS"
stop_mps() {
	if [ -e "$MPS_PIPE/control" ]; then
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE nvidia-cuda-mps-control
		for _ in $(seq 50); do pgrep -f "nvidia-cuda-mps-control -d" >/dev/null || break; sleep 0.2; done
		echo "MPS daemon stopped: $(pgrep -fa nvidia-cuda-mps || echo none left)"
	fi
}
cleanup() { stop_mps; pkill -f "$CHRONOS --monitor" 2>/dev/null; pkill -f gpu_workload.py 2>/dev/null; }
trap cleanup EXIT

step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
ms_now() { date +%s%N; }
median_ms() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1e6}'; }

step "machine"
date -u
nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_mode,mig.mode.current --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())'
uname -r

step "backends, no MPS (expect time-sliced)"
"$CHRONOS" backends

step "a booked PyTorch job holding 4 GiB; chronos stats"
"$CHRONOS" run 0 0.1 10m --warn-signal none -- $LOAD hold --gib 4 --seconds 40 &
RUN1=$!
for _ in $(seq 60); do pgrep -f "gpu_workload.py hold" >/dev/null && nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 0.5; done
sleep 3
"$CHRONOS" stats
"$CHRONOS" stats --json > "$WORK/stats.json"
python3 - "$WORK/stats.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
d = st["sample"]["devices"][0]
print(f"stats --json: GPU 0 util {d['util_percent']}%, used {d['memory_used_bytes']/2**30:.1f} GiB, mode {st['mode']}")
for p in st["processes"]:
    print(f"  pid {p['pid']} user {p['user']} uid {p['uid']} mem {p['memory_used_bytes']/2**30:.2f} GiB SM {p['sm_percent']}% "
          f"partition {p.get('partition')} verdict {p['verdict']} cmd {p['command'][:60]}")
PY
WPID=$(pgrep -f "^python3 .*gpu_workload.py hold" | head -1)

step "NVML costs on this GPU, with the job running (pid $WPID)"
CHRONOS_HARDWARE_PID=$WPID CHRONOS_HARDWARE_PARTITION=1 "$BIN_DIR/gpu.test" -test.run 'TestHardwareNVMLWorkload' -test.v 2>&1 | grep -E "device|PASS|FAIL|ok" | head -12
"$BIN_DIR/gpu.test" -test.run '^$' -test.bench 'Real' -test.benchtime 200x 2>&1 | grep -E "^Benchmark|ok|FAIL"

step "whole-process wall time: chronos stats vs chronos version (20 runs each)"
for i in $(seq 20); do s=$(ms_now); "$CHRONOS" version >/dev/null; echo $(( $(ms_now) - s )); done | median_ms | xargs printf 'version median %s ms\n'
for i in $(seq 20); do s=$(ms_now); "$CHRONOS" stats >/dev/null; echo $(( $(ms_now) - s )); done | median_ms | xargs printf 'stats   median %s ms\n'
for i in $(seq 20); do s=$(ms_now); "$CHRONOS" backends >/dev/null; echo $(( $(ms_now) - s )); done | median_ms | xargs printf 'backends median %s ms (one NVML init)\n'
kill -INT $RUN1 2>/dev/null; wait $RUN1; echo "chronos run after SIGINT exited $?"

step "MPS: start a multi-user daemon (private pipe dir), backends (expect concurrent, multi-user)"
export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOGS
nvidia-cuda-mps-control -d -M
sleep 1
"$CHRONOS" backends

step "MPS: a 5% booking (~7 GiB) — allocate 9 GiB (expect out-of-memory), then 4 GiB (expect OK)"
"$CHRONOS" run 0 0.05 60s --warn-signal none -- $LOAD alloc --gib 9; echo "exit $? (3 = out of memory)"
"$CHRONOS" run 0 0.05 60s --warn-signal none -- $LOAD alloc --gib 4; echo "exit $? (0 = fits)"
"$CHRONOS" run 0 0.05 60s --compute 25% --warn-signal none -- sh -c 'env | grep ^CUDA_ | sort'
stop_mps
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
"$CHRONOS" backends | grep -E "MPS|mode"

step "time-sliced: monitor with overbudget=terminate; a 2% booking (~2.8 GiB) whose job holds 6 GiB"
"$CHRONOS" --monitor --policy "overbudget=terminate unbooked=off grace=5s" 2> "$WORK/monitor.log" &
MON=$!
sleep 1
s=$(ms_now)
"$CHRONOS" run 0 0.02 5m --warn-signal none -- $LOAD hold --gib 6 --seconds 120; echo "exit $? after $(( ($(ms_now) - s) / 1000000 )) ms (143 = SIGTERM)"

step "expiry: a 20 s booking whose job would run 120 s, --signal USR1@5s (expect warning 5 s before, SIGTERM at the deadline, exit 124)"
"$CHRONOS" run 0 0.05 20s --grace 5s --signal USR1@5s -- $LOAD hold --gib 1 --seconds 120; echo "exit $?"

step "defaults: a plain PyTorch job with no SIGUSR1 handler, 20 s booking (expect it alive to the deadline: exit 124 after ~20 s, not 138 at 18 s)"
s=$(ms_now)
"$CHRONOS" run 0 0.05 20s --grace 5s -- python3 -c 'import time, torch; x = torch.ones(1 << 28, device="cuda"); time.sleep(120)'
echo "exit $? after $(( ($(ms_now) - s) / 1000000 )) ms"
sleep 1
kill -TERM $MON; wait $MON
echo "--- monitor log"
cat "$WORK/monitor.log"
echo "--- audit trail"
"$CHRONOS" events -n 30

step "memory in use: an unbooked job holds 20 GiB, stats stores a reading (expect create 100% to warn, naming its user and pid; admit=physical to refuse)"
$LOAD hold --gib 20 --seconds 60 &
HOG=$!
# Wait until it holds the 20 GiB, not merely until its CUDA context shows.
for _ in $(seq 120); do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$HOG" '$1==p && $2>=19000 {f=1} END {exit !f}' && break; sleep 0.5; done
"$CHRONOS" stats > /dev/null
"$CHRONOS" create 0 100% 10m --json > "$WORK/physical.json"; echo "exit $? (0: admitted on booked shares)"
"$CHRONOS" release "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/physical.json")"
"$CHRONOS" policy set admit=physical
"$CHRONOS" create 0 100% 10m; echo "exit $? (1: refused, 20 GiB is in use)"
"$CHRONOS" create 0 10% 10m; echo "exit $? (0: fits what is physically free)"
"$CHRONOS" policy set admit=booked
kill $HOG; wait $HOG 2>/dev/null

step "a killed chronos run: SIGKILL to the wrapper while its job runs (expect orphaned), the job ends after 20 s (expect released within ~1 s, with the event)"
"$CHRONOS" --monitor 2> "$WORK/monitor-orphan.log" &
MON=$!
"$CHRONOS" run 0 0.1 10m -- $LOAD hold --gib 2 --seconds 20 &
RUN2=$!
sleep 8
kill -KILL $RUN2
sleep 2
"$CHRONOS" list
for _ in $(seq 40); do "$CHRONOS" list --json | grep -q '"state"' || break; sleep 1; done
"$CHRONOS" list --all | tail -2
"$CHRONOS" events -n 4
kill -TERM $MON; wait $MON
pkill -f "gpu_workload.py hold" 2>/dev/null

step "overhead: bf16 matmul throughput with and without chronos --monitor, interleaved windows"
$LOAD bench --windows 12 --seconds 5 --monitor "$CHRONOS --monitor --sample-every 1s"

step "ledger benchmarks on this machine's disk"
"$BIN_DIR/core.test" -test.run '^$' -test.bench 'LedgerOps|List' -test.benchtime 1000x 2>&1 | grep -E "^Benchmark|ok|FAIL"
"$BIN_DIR/core.test" -test.run '^$' -test.bench 'ExpiryAccuracy' -test.benchtime 1x 2>&1 | grep -E "^Benchmark|ok|FAIL"

step "done"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
pgrep -fa nvidia-cuda-mps || echo "no MPS processes left"
