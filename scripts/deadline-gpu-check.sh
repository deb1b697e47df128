#!/usr/bin/env bash
# Checks on a real NVIDIA GPU that a booking's job gets SIGTERM at its
# deadline from root's monitor, with the ledger quiet, and with another
# process holding it from before the deadline until after (the monitor's
# pass, writing the booking's warning, waits on it meanwhile) (#24).
# This build against the one before the deadline watch. Repeatable by
# anyone with a GPU, PyTorch and root:
#
#   make build && mkdir -p .gpu && cp bin/chronos .gpu/chronos
#   git worktree add /tmp/old 442e1d9 && (cd /tmp/old && go build -o "$OLDPWD/.gpu/chronos-old" .)
#   sudo scripts/deadline-gpu-check.sh .gpu
#
# It uses GPU 0, never changes clocks, compute mode, MIG or persistence,
# and starts no MPS daemon. Output: the log on stdout (and in
# $OUT/deadline-gpu-check.log when OUT is set).
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
WORK=$(mktemp -d /tmp/chronos-deadline-check.XXXXXX)
export CHRONOS_BACKEND=nvml
LOG=${OUT:-$WORK}/deadline-gpu-check.log
exec > >(tee "$LOG") 2>&1
cleanup() { pkill -f "chronos.* --monitor" 2>/dev/null; pkill -f "deadline-gpu-job" 2>/dev/null; }
trap cleanup EXIT
booking_fields() {
	python3 -c 'import json, sys, datetime; b = json.load(sys.stdin); print(b["id"], datetime.datetime.fromisoformat(b["expires"].replace("Z", "+00:00")).timestamp())'
}
step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

# job is a PyTorch process on GPU 0 holding 1 GiB under booking $1, which
# writes the time it got SIGTERM to $2 and exits.
job() {
	CHRONOS_BOOKING_ID=$1 python3 - "$2" deadline-gpu-job <<'PY' &
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
	for _ in $(seq 300); do [ -e "$2.ready" ] && return; sleep 0.05; done
	echo "the job never started"
}

# late prints how long after the deadline $2 the job's SIGTERM came ($1: its file).
late() {
	python3 - "$1" "$2" "$3" <<'PY'
import sys
try:
    print(f"{sys.argv[3]}: SIGTERM {1000 * (float(open(sys.argv[1]).read()) - float(sys.argv[2])):.0f} ms after the deadline")
except OSError:
    print(f"{sys.argv[3]}: no SIGTERM")
PY
}

step "machine"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__)'

for B in "$BIN_DIR/chronos" "$BIN_DIR/chronos-old"; do
	[ -x "$B" ] || { echo "no $B"; continue; }
	name=$(basename "$B")
	db=$WORK/$name.db
	export CHRONOS_DB=$db
	"$B" --monitor --sample-every 200ms >"$WORK/mon-$name.log" 2>&1 &
	mon=$!
	sleep 1
	step "$name: three bookings of 10 s on a quiet ledger"
	for i in 1 2 3; do
		read -r id expires < <("$B" create 0 10% 10s --json | booking_fields)
		got=$WORK/quiet-$name-$i
		job "$id" "$got"
		for _ in $(seq 300); do [ -e "$got" ] && break; sleep 0.05; done
		late "$got" "$expires" "$name quiet #$i"
		sleep 0.5
	done
	step "$name: a booking of 10 s; the ledger held from 5.5 s before its deadline (the warning's pass waits) to 3 s after"
	read -r id expires < <("$B" create 0 10% 10s --json | booking_fields)
	got=$WORK/held-$name
	job "$id" "$got"
	python3 - "$expires" <<'PY'
import sys, time
time.sleep(max(0, float(sys.argv[1]) - 5.5 - time.time()))
PY
	flock -x "$db" sleep 8.5 &
	holder=$!
	for _ in $(seq 300); do [ -e "$got" ] && break; sleep 0.05; done
	late "$got" "$expires" "$name held"
	wait "$holder"
	sleep 1.5
	"$B" events --booking "$id" | tail -4
	kill "$mon"; wait "$mon" 2>/dev/null
done
