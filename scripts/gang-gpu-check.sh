#!/usr/bin/env bash
# Checks on a real NVIDIA GPU what landed for bookings of several GPUs
# (#23), the SIGTERM at the deadline while the ledger is busy (#24), and a
# guarded ledger's keeper (#21). Repeatable by anyone with a GPU, PyTorch
# and root:
#
#   make build && cp bin/chronos .gpu/chronos
#   git worktree add /tmp/old be53d83^ && (cd /tmp/old && go build -o "$OLDPWD/.gpu/chronos-old" .)
#   sudo scripts/gang-gpu-check.sh .gpu
#
# It uses GPU 0, never changes clocks, compute mode, MIG or persistence,
# and starts no MPS daemon. Output: the log on stdout (and in
# $OUT/gang-gpu-check.log when OUT is set).
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
OLD=$BIN_DIR/chronos-old
WORK=$(mktemp -d /tmp/chronos-gang-check.XXXXXX)
chmod 755 "$WORK"
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=nvml
LOG=${OUT:-$WORK}/gang-gpu-check.log
exec > >(tee "$LOG") 2>&1
cleanup() { pkill -f "chronos.* --monitor" 2>/dev/null; pkill -f "gang-gpu-job" 2>/dev/null; }
trap cleanup EXIT
# booking_fields reads create --json: the booking's id and deadline (epoch seconds).
booking_fields() {
	python3 -c 'import json, sys, datetime; b = json.load(sys.stdin); print(b["id"], datetime.datetime.fromisoformat(b["expires"].replace("Z", "+00:00")).timestamp())'
}
step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

# job is a PyTorch process on GPU 0 holding 1 GiB under booking $1, which
# writes the time it got SIGTERM to $2 and exits.
job() {
	CHRONOS_BOOKING_ID=$1 python3 - "$2" gang-gpu-job <<'PY' &
import signal, sys, time, torch
out = sys.argv[1]
x = torch.ones(1 << 28, device="cuda")
def term(*_):
    open(out, "w").write(repr(time.time()))
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
open(out + ".ready", "w").write("ready")
time.sleep(120)
PY
	for _ in $(seq 200); do [ -e "$2.ready" ] && return; sleep 0.05; done
	echo "the job never started"
}

step "machine"
nvidia-smi -L
nvidia-smi topo -m
python3 -c 'import torch; print("torch", torch.__version__, "devices", torch.cuda.device_count())'

step "stats caches the inventory (and the links, where NVML reports them)"
"$CHRONOS" stats >/dev/null && echo "stats: ok"

step "several GPUs on a host of one: refused with what is wrong"
"$CHRONOS" create any 50% 5m --gpus 2; echo "exit $?"
"$CHRONOS" create 0,1 50% 5m; echo "exit $?"
"$CHRONOS" create 0 50% 5m --gpus 2; echo "exit $?"

step "run any --gpus 1: the job sees exactly its GPU"
"$CHRONOS" run any 30% 2m --gpus 1 -- python3 -c 'import os, torch; x = torch.ones(1 << 28, device="cuda"); print("CUDA_VISIBLE_DEVICES", os.environ["CUDA_VISIBLE_DEVICES"], "devices", torch.cuda.device_count(), "allocated", x.numel() * 4 >> 20, "MiB")'
echo "exit $?"
"$CHRONOS" list --all | tail -2

step "SIGTERM at the deadline while another process holds the ledger: this build, then the one before"
for B in "$CHRONOS" "$OLD"; do
	[ -x "$B" ] || { echo "no $B"; continue; }
	db=$WORK/term-$(basename "$B").db
	CHRONOS_DB=$db "$B" --monitor --sample-every 200ms >"$WORK/mon-$(basename "$B").log" 2>&1 &
	mon=$!
	sleep 1
	read -r id expires < <(CHRONOS_DB=$db "$B" create 0 10% 8s --json | booking_fields)
	got=$WORK/term-$(basename "$B")
	job "$id" "$got"
	# Hold the ledger (bbolt's flock) from 0.2 s before the deadline to 5.8 s after.
	python3 - "$expires" <<'PY'
import sys, time
time.sleep(max(0, float(sys.argv[1]) - 0.2 - time.time()))
PY
	flock -x "$db" sleep 6 &
	holder=$!
	for _ in $(seq 200); do [ -e "$got" ] && break; sleep 0.05; done
	wait "$holder"
	python3 - "$expires" "$got" "$(basename "$B")" <<'PY'
import sys
expires, got = float(sys.argv[1]), sys.argv[2]
try:
    at = float(open(got).read())
    print(f"{sys.argv[3]}: SIGTERM {1000 * (at - expires):.0f} ms after the deadline (the ledger held from -200 ms to +5800 ms)")
except OSError:
    print(f"{sys.argv[3]}: no SIGTERM within 10 s")
PY
	sleep 1
	CHRONOS_DB=$db "$B" events --booking "$id" | tail -4
	kill "$mon"; wait "$mon" 2>/dev/null
done

step "a guarded ledger: nobody books through root's keeper, and the keeper ends nobody's job on time"
g=$WORK/guarded/chronos.db
sock=$WORK/run/chronos.sock
mkdir -p "$WORK/run" && chmod 755 "$WORK/run"
CHRONOS_DB=$g "$CHRONOS" init --shared --guarded --group nogroup | head -1
ls -l "$g"
CHRONOS_DB=$g CHRONOS_SOCKET=$sock "$CHRONOS" --monitor --sample-every 200ms >"$WORK/keeper.log" 2>&1 &
keeper=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
ls -l "$sock"
as_nobody() { CHRONOS_DB=$g CHRONOS_SOCKET=$sock setpriv --reuid=65534 --regid=65534 --init-groups env HOME=/nonexistent "$@"; }
as_nobody sh -c "echo x >> $g" 2>&1 | tail -1
read -r id expires < <(as_nobody "$CHRONOS" create 0 20% 6s --json | booking_fields)
as_nobody "$CHRONOS" list
got=$WORK/term-guarded
chmod 777 "$WORK"
CHRONOS_BOOKING_ID=$id setpriv --reuid=65534 --regid=65534 --init-groups env HOME=/nonexistent python3 - "$got" gang-gpu-job <<'PY' &
import signal, sys, time, torch
out = sys.argv[1]
x = torch.ones(1 << 28, device="cuda")
def term(*_):
    open(out, "w").write(repr(time.time()))
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
time.sleep(60)
PY
for _ in $(seq 300); do [ -e "$got" ] && break; sleep 0.05; done
python3 - "$expires" "$got" <<'PY'
import sys
expires, got = float(sys.argv[1]), sys.argv[2]
try:
    print(f"nobody's job: SIGTERM {1000 * (float(open(got).read()) - expires):.0f} ms after the deadline")
except OSError:
    print("nobody's job: no SIGTERM")
PY
CHRONOS_DB=$g "$CHRONOS" events --booking "$id" | tail -4
kill "$keeper"; wait "$keeper" 2>/dev/null
[ -e "$sock" ] && echo "the keeper left its socket" || echo "socket removed"
rm -rf "$WORK"
