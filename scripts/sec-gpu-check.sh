#!/usr/bin/env bash
# Checks, on a real NVIDIA GPU with real NVML processes, what the tests check
# with the simulated backend: a forged booking id does not make a process
# count against someone else's booking, a fake MPS daemon switches nothing
# off, a real root multi-user MPS daemon is trusted, and other users' escape
# sequences never reach the terminal. Needs root, GPU 0, PyTorch importable
# by the user nobody (the check says so when it is not):
#
#   make build && mkdir -p .gpu && cp bin/chronos .gpu/
#   sudo scripts/sec-gpu-check.sh .gpu
#
# It uses GPU 0, never changes clocks, compute mode, MIG or persistence,
# starts its own MPS daemon with a private pipe directory and always stops
# it. Each step prints what to expect; the log is on stdout (and in
# $OUT/sec-gpu-check.log when OUT is set).
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/chronos-sec-check.XXXXXX)
chmod 0755 "$WORK"
cp "$HERE/gpu_workload.py" "$WORK/" && chmod 0644 "$WORK/gpu_workload.py"
LOAD="python3 $WORK/gpu_workload.py"
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=nvml
export PATH=$PATH:/usr/local/nvidia/bin
LOG=${OUT:-$WORK}/sec-gpu-check.log
exec > >(tee "$LOG") 2>&1

MPS_PIPE=$WORK/mps-pipe MPS_LOGS=$WORK/mps-log
mkdir -p "$MPS_PIPE" "$MPS_LOGS"
stop_mps() {
	if [ -e "$MPS_PIPE/control" ]; then
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE nvidia-cuda-mps-control
		for _ in $(seq 50); do pgrep -f "nvidia-cuda-mps-control -d" >/dev/null || break; sleep 0.2; done
	fi
}
cleanup() {
	stop_mps
	[ -n "${MON:-}" ] && kill "$MON" 2>/dev/null
	[ -n "${FAKE:-}" ] && kill "$FAKE" 2>/dev/null
	pkill -f "$WORK/gpu_workload.py" 2>/dev/null
}
trap cleanup EXIT

step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
as_nobody() { runuser -u nobody -- env CHRONOS_DB="$CHRONOS_DB" HOME=/tmp "$@"; }

step "machine"
date -u
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
if ! as_nobody python3 -c 'import torch; assert torch.cuda.is_available()'; then
	echo "nobody cannot run PyTorch on the GPU here: the forged-claim step needs it (skipping that step)"
	NOBODY_GPU=no
fi

step "root books 10% of GPU 0 and holds 2 GiB in it"
"$CHRONOS" run 0 0.1 10m -- $LOAD hold --gib 2 --seconds 120 &
RUN=$!
for _ in $(seq 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 0.5; done
ID=$("$CHRONOS" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
echo "booking $ID"

if [ "${NOBODY_GPU:-yes}" = yes ]; then
	step "nobody claims booking $ID in their environment and holds 20 GiB, with escapes in argv"
	as_nobody env CHRONOS_BOOKING_ID="$ID" python3 "$WORK/gpu_workload.py" hold --gib 20 --seconds 120 --tag $'\e]2;pwned\a' &
	for _ in $(seq 60); do [ "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)" -ge 2 ] && break; sleep 0.5; done
	sleep 2
	echo "expect: nobody's process FALSE CLAIM #$ID, root's job #$ID, no title change, \\x1b]2;pwned shown"
	"$CHRONOS" stats
	"$CHRONOS" stats | grep -q $'\e' && echo "FAIL: an escape reached the terminal" || echo "ok: no escape on the terminal"
	pgrep -u nobody -f gpu_workload.py >/dev/null && echo "ok: nobody's process runs" || echo "FAIL: nobody's process never ran (the rest of this step proves nothing)"
	"$CHRONOS" stats | grep -q "FALSE CLAIM #$ID" && echo "ok: shown as FALSE CLAIM #$ID" || echo "FAIL: no FALSE CLAIM #$ID"

	step "root monitor, overbudget=terminate unbooked=terminate: expect nobody's process SIGTERMed, root's job untouched"
	"$CHRONOS" --monitor --policy "overbudget=terminate unbooked=terminate grace=5s" 2> "$WORK/monitor.log" &
	MON=$!
	sleep 4
	kill "$MON"; wait "$MON"; MON=
	cat "$WORK/monitor.log"
	pgrep -u nobody -f gpu_workload.py >/dev/null && echo "FAIL: nobody's process still runs" || echo "ok: nobody's process was stopped"
	kill -0 "$RUN" 2>/dev/null && echo "ok: root's job still runs" || echo "FAIL: root's job was stopped"
fi
kill -INT "$RUN" 2>/dev/null; wait "$RUN"

step "nobody's own fake MPS daemon (a FIFO named control in nobody's directory, python named like the daemon, -d) and nobody's own booking: root's monitor with overbudget=terminate checks trust at every sample"
FAKE_DIR=$WORK/fake-mps
mkdir -p "$FAKE_DIR" && chown nobody "$FAKE_DIR"
runuser -u nobody -- mkfifo "$FAKE_DIR/control"
cp "$(command -v python3)" "$WORK/nvidia-cuda-mps-control" && chmod 0755 "$WORK/nvidia-cuda-mps-control"
runuser -u nobody -- "$WORK/nvidia-cuda-mps-control" -c 'import time; time.sleep(600)' -d &
FAKE=$!
sleep 1
pgrep -a nvidia-cuda-mps
if [ "${NOBODY_GPU:-yes}" = yes ]; then
	# A ledger nobody may write too: a shared one, of nobody's group.
	LAB=$WORK/lab/chronos.db
	"$CHRONOS" --db "$LAB" init --shared --group "$(id -gn nobody)" >/dev/null
	"$CHRONOS" --db "$LAB" --monitor --policy "overbudget=terminate unbooked=off grace=5s" 2> "$WORK/monitor-fake-lab.log" &
	MON=$!
	sleep 1
	runuser -u nobody -- env CHRONOS_DB="$LAB" HOME=/tmp CUDA_MPS_PIPE_DIRECTORY="$FAKE_DIR" "$CHRONOS" run 0 0.02 5m -- python3 "$WORK/gpu_workload.py" hold --gib 6 --seconds 60
	echo "nobody's over-budget job under nobody's fake daemon: exit $? (expect 143: a member's daemon is not trusted; or CUDA refusing the fake pipe directory, which its output says)"
	kill "$MON"; wait "$MON"; MON=
	cat "$WORK/monitor-fake-lab.log"
fi
"$CHRONOS" --monitor --policy "overbudget=terminate unbooked=off grace=5s" 2> "$WORK/monitor-fake.log" &
MON=$!
sleep 1
"$CHRONOS" create 0 0.02 5m
ID=$("$CHRONOS" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
CHRONOS_BOOKING_ID=$ID $LOAD hold --gib 6 --seconds 60; echo "root's over-budget job in booking $ID exit $? (expect 143: the fake daemon switches nothing off)"
kill "$MON"; wait "$MON"; MON=
cat "$WORK/monitor-fake.log"
kill "$FAKE"; FAKE=

step "root's monitor started before any MPS daemon (MPS is checked at every sample, not once)"
"$CHRONOS" --monitor --policy "overbudget=terminate unbooked=off grace=5s" 2> "$WORK/monitor-mps.log" &
MON=$!
sleep 1

step "a real multi-user MPS daemon of root's: expect running, multi-user, trusted"
export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOGS
nvidia-cuda-mps-control -d -M
sleep 1
"$CHRONOS" backends
ls -l "$MPS_PIPE/control"

step "under MPS (daemon started after the monitor), overbudget=terminate: a job chronos run started with its limit is MPS's; one started without it is ours"
"$CHRONOS" run 0 0.05 5m -- $LOAD hold --gib 4 --seconds 20; echo "chronos run job exit $? (expect 0: MPS holds it to its limit, the monitor leaves it)"
"$CHRONOS" create 0 0.02 5m
ID=$("$CHRONOS" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
CHRONOS_BOOKING_ID=$ID $LOAD hold --gib 6 --seconds 60; echo "plain job in booking $ID exit $? (expect 143: no MPS limit of chronos's, over budget, SIGTERM)"
kill "$MON"; wait "$MON"; MON=
cat "$WORK/monitor-mps.log"
stop_mps

step "done"
"$CHRONOS" events -n 20
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
