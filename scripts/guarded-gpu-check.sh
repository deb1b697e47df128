#!/usr/bin/env bash
# Checks issue 21 on a real NVIDIA GPU: on a guarded ledger a member (nobody)
# books through root's keeper, cannot write the ledger, has their job ended
# at its deadline by the keeper, and cannot switch the over-budget check
# off with a fake MPS daemon of their own. Needs root, GPU 0, and PyTorch
# importable by nobody:
#
#   make build && mkdir -p .gpu && cp bin/chronos .gpu/
#   sudo scripts/guarded-gpu-check.sh .gpu
#
# It uses GPU 0, never changes clocks, compute mode, MIG or persistence,
# and starts no real MPS daemon (the fake one is a python3 named like it).
# Output: the log on stdout (and in $OUT/guarded-gpu-check.log when OUT is
# set); each check prints ok or FAIL.
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/chronos-guarded-check.XXXXXX)
chmod 0755 "$WORK"
cp "$HERE/gpu_workload.py" "$WORK/" && chmod 0644 "$WORK/gpu_workload.py"
export CHRONOS_BACKEND=nvml PATH=$PATH:/usr/local/nvidia/bin
G=$WORK/guarded/chronos.db SOCK=$WORK/run/chronos.sock
LOG=${OUT:-$WORK}/guarded-gpu-check.log
exec > >(tee "$LOG") 2>&1
cleanup() {
	[ -n "${KEEPER:-}" ] && kill "$KEEPER" 2>/dev/null && wait "$KEEPER" 2>/dev/null
	[ -n "${FAKE:-}" ] && kill "$FAKE" 2>/dev/null
	pkill -f "$WORK/gpu_workload.py" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
GROUP=$(id -gn nobody)
as_nobody() { setpriv --reuid=65534 --regid=65534 --init-groups env HOME=/nonexistent CHRONOS_DB="$G" CHRONOS_SOCKET="$SOCK" CHRONOS_BACKEND=nvml "$@"; }
# deadline reads create --json: the booking's id and deadline (epoch seconds).
deadline() {
	python3 -c 'import json, sys, datetime; b = json.load(sys.stdin); print(b["id"], datetime.datetime.fromisoformat(b["expires"].replace("Z", "+00:00")).timestamp())'
}

step "machine"
date -u
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
"$CHRONOS" --version

step "a guarded ledger of nobody's group ($GROUP), and root's keeper with overbudget=terminate"
CHRONOS_DB=$G "$CHRONOS" init --shared --guarded --group "$GROUP" | head -1
CHRONOS_DB=$G "$CHRONOS" policy set overbudget=terminate grace=5s >/dev/null
ls -l "$G"
mkdir -p "$WORK/run" && chmod 755 "$WORK/run"
CHRONOS_DB=$G CHRONOS_SOCKET=$SOCK "$CHRONOS" --monitor --sample-every 200ms >"$WORK/keeper.log" 2>&1 &
KEEPER=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
ls -l "$SOCK"
as_nobody sh -c "echo x >> $G" 2>/dev/null && echo "FAIL: nobody wrote the ledger" || echo "ok: nobody cannot write the ledger"

step "nobody books 10% for 8 s through the keeper and runs a PyTorch job in it: the keeper ends it at the deadline"
read -r id expires < <(as_nobody "$CHRONOS" create 0 10% 8s --json | deadline)
[ -n "${id:-}" ] && echo "ok: booked $id through the keeper" || echo "FAIL: no booking"
got=$WORK/term
chmod 777 "$WORK"
as_nobody env CHRONOS_BOOKING_ID="$id" python3 - "$got" guarded-gpu-job <<'PY' &
import signal, sys, time, torch
out = sys.argv[1]
x = torch.ones(1 << 28, device="cuda")  # 1 GiB, within 10% of the GPU
def term(*_):
    open(out, "w").write(repr(time.time()))
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
time.sleep(60)
PY
for _ in $(seq 400); do [ -e "$got" ] && break; sleep 0.05; done
python3 - "$expires" "$got" <<'PY'
import sys
expires, got = float(sys.argv[1]), sys.argv[2]
try:
    late = 1000 * (float(open(got).read()) - expires)
    print(f"{'ok' if 0 <= late < 1000 else 'FAIL'}: nobody's job got SIGTERM {late:.0f} ms after the deadline")
except OSError:
    print("FAIL: nobody's job got no SIGTERM")
PY
CHRONOS_DB=$G "$CHRONOS" events --booking "$id" | tail -3

step "nobody's own fake MPS daemon (a FIFO named control in nobody's directory, a python3 named like the daemon, -d), and nobody's over-budget job under it"
FAKE_DIR=$WORK/fake-mps
mkdir -p "$FAKE_DIR" && chown nobody "$FAKE_DIR"
setpriv --reuid=65534 --regid=65534 --init-groups mkfifo "$FAKE_DIR/control"
cp "$(command -v python3)" "$WORK/nvidia-cuda-mps-control" && chmod 0755 "$WORK/nvidia-cuda-mps-control"
setpriv --reuid=65534 --regid=65534 --init-groups "$WORK/nvidia-cuda-mps-control" -c 'import time; time.sleep(600)' -d &
FAKE=$!
sleep 1
pgrep -a nvidia-cuda-mps
as_nobody env CUDA_MPS_PIPE_DIRECTORY="$FAKE_DIR" "$CHRONOS" run 0 2% 5m -- python3 "$WORK/gpu_workload.py" hold --gib 6 --seconds 60
rc=$?
[ "$rc" = 143 ] && echo "ok: the over-budget job was terminated (exit 143): nobody's daemon switched nothing off" ||
	echo "FAIL or inconclusive: exit $rc (expect 143; CUDA refusing the fake pipe directory says so above)"
kill "$FAKE"; FAKE=
grep -E "overbudget|over budget|signalled" "$WORK/keeper.log" | tail -4

step "done"
kill "$KEEPER"; wait "$KEEPER" 2>/dev/null; KEEPER=
[ -e "$SOCK" ] && echo "FAIL: the keeper left its socket" || echo "ok: socket removed"
