#!/usr/bin/env bash
# Idle detection and reclaim on a real NVIDIA GPU (issue 13), next to two
# PyTorch jobs on GPU 0: one that allocates memory and then sleeps, and a
# training loop. With the ladder shortened to minutes, the sleeper must be
# warned, then reclaimed (its process ended as at expiry, its `chronos run`
# exiting 124), and the training loop never flagged.
#
#   sudo scripts/idle-check.sh /path/to/chronos
#
# Self-contained: it builds nothing; it needs python3 with torch. It uses its
# own ledger in a temporary directory and GPU 0, and changes no GPU setting.
# Output: the log on stdout (and in $OUT/idle-check.log when OUT is set);
# exit 0 when every check passed.
set -uo pipefail

CHRONOS=$(realpath "${1:?usage: $0 /path/to/chronos}")
WORK=$(mktemp -d /tmp/chronos-idle-check.XXXXXX)
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=nvml
export PATH=$PATH:/usr/local/nvidia/bin
LOG=${OUT:-$WORK}/idle-check.log
exec > >(tee "$LOG") 2>&1

# Minutes, not hours: idle minutes are counted whole, so the sleeper is
# warned after 1 and 2 idle minutes and reclaimed after 3.
LADDER="reclaim=always idle=3m idle-warn=1m,2m idle-sm=5% idle-start=1m expiry=terminate grace=10s"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
FAILED=0
check() { # description, then a command that must succeed
	local what=$1
	shift
	if "$@"; then echo "PASS  $what"; else echo "FAIL  $what"; FAILED=1; fi
}
events_of() { "$CHRONOS" events -n 0 --json | python3 -c '
import json, sys
want = int(sys.argv[1])
print(" ".join(e["kind"] for e in json.load(sys.stdin) if e.get("partition") == want))' "$1"; }

cat > "$WORK/sleeper.py" <<'PY'
# Allocates 8 GiB, touches it once, then does no GPU work at all.
import time, torch
x = torch.ones(2 * 1024**3, dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
print("sleeper: holding", x.numel() * 4 // 2**30, "GiB", flush=True)
while True:
    time.sleep(3600)
PY
cat > "$WORK/trainer.py" <<'PY'
# A training-like loop: matmuls back to back, forever.
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
print("trainer: running", flush=True)
while True:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
PY

cat > "$WORK/usage.py" <<'PY'
import json, sys
for p in json.load(sys.stdin):
    u = p.get("usage") or {}
    print("#%d %s: idle now %s, idle %.0f s in all, GPU time %.0f s, memory peak %.1f GiB" % (
        p["id"], p["state"], p["idle"], u.get("idle_seconds", 0), u.get("gpu_seconds", 0), u.get("memory_peak_bytes", 0) / 2**30))
PY

step "machine"
date -u
nvidia-smi --query-gpu=index,name,driver_version,memory.total,utilization.gpu --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
"$CHRONOS" version

step "monitor, with the ladder: $LADDER"
"$CHRONOS" --monitor --policy "$LADDER" 2> "$WORK/monitor.log" &
PIDS+=($!)
sleep 2

step "two booked jobs on GPU 0"
ids() { "$CHRONOS" list --json | python3 -c 'import json, sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))'; }
"$CHRONOS" run 0 40% 30m --warn-signal none -- python3 "$WORK/sleeper.py" > "$WORK/sleeper.out" 2>&1 &
SLEEPER_RUN=$!
PIDS+=($SLEEPER_RUN)
for _ in $(seq 100); do [ -n "$(ids)" ] && break; sleep 0.1; done
SLEEPER=$(ids)
"$CHRONOS" run 0 40% 30m --warn-signal none -- python3 "$WORK/trainer.py" > "$WORK/trainer.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ "$(ids)" != "$SLEEPER" ] && break; sleep 0.1; done
TRAINER=$(ids | tr ' ' '\n' | grep -vx "$SLEEPER")
for _ in $(seq 120); do grep -q holding "$WORK/sleeper.out" && grep -q running "$WORK/trainer.out" && break; sleep 0.5; done
cat "$WORK/sleeper.out" "$WORK/trainer.out"
"$CHRONOS" list
echo "sleeper is booking $SLEEPER, trainer is booking $TRAINER"
sleep 5
"$CHRONOS" stats

step "waiting for the ladder (a warning at 1 and 2 idle minutes, the reclaim at 3; up to 8 minutes)"
START=$(date +%s)
while [ $(($(date +%s) - START)) -lt 480 ]; do
	case " $(events_of "$SLEEPER") " in *" reclaimed "*) break ;; esac
	sleep 5
done
echo "after $(($(date +%s) - START)) s:"
"$CHRONOS" list --all
"$CHRONOS" events -n 0 | grep -E " #($SLEEPER|$TRAINER) " || true

step "the sleeper's chronos run"
for _ in $(seq 60); do kill -0 $SLEEPER_RUN 2>/dev/null || break; sleep 0.5; done
wait $SLEEPER_RUN
SLEEPER_EXIT=$?
cat "$WORK/sleeper.out"
echo "chronos run exited $SLEEPER_EXIT"

step "checks"
S=" $(events_of "$SLEEPER") "
T=" $(events_of "$TRAINER") "
echo "sleeper #$SLEEPER events:$S"
echo "trainer #$TRAINER events:$T"
check "the sleeper was warned twice, then reclaimed" grep -q " idle idle reclaimed " <<< "$S"
check "the sleeper's process was stopped and its run exited 124" test "$SLEEPER_EXIT" = 124
check "the training loop was never flagged idle" bash -c "! grep -q ' idle ' <<< '$T'"
check "the training loop is still booked" bash -c "'$CHRONOS' list --json | grep -q '\"id\": $TRAINER,'"
"$CHRONOS" list --all --json | python3 "$WORK/usage.py"

step "monitor log"
cat "$WORK/monitor.log"
[ "$FAILED" = 0 ] && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$FAILED"
