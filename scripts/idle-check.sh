#!/usr/bin/env bash
# Idle detection and reclaim=when-waiting on a real NVIDIA GPU (issue 13),
# next to two PyTorch jobs on GPU 0: one that allocates memory and then
# sleeps, its booking holding most of the GPU, and a training loop. With the
# ladder shortened to a minute: the sleeper is warned, and kept past idle=
# while nobody waits; then a second user (nobody) asks with `create --wait`
# for more of GPU 0 than is free, the sleeper's booking is reclaimed (its
# process ended as at expiry, its `chronos run` exiting 124) and the waiter
# is granted it. The training loop is never flagged. About 4 minutes.
#
#   sudo scripts/idle-check.sh .gpu              # a directory holding chronos
#   sudo scripts/idle-check.sh /path/to/chronos
#   sudo CHRONOS_BACKEND=sim scripts/idle-check.sh bin   # a dry run, no GPU:
#        `sleep` for the jobs; the training loop's checks are skipped
#
# Self-contained: it builds nothing; it needs python3 with torch (not with
# sim) and root (to run the waiter as nobody). It uses its own ledger in a
# temporary directory and GPU 0, and changes no GPU setting. Output: the log
# on stdout (and in $OUT/idle-check.log when OUT is set); exit 0 when every
# check passed.
set -uo pipefail

ARG=${1:?usage: $0 DIR-WITH-chronos | /path/to/chronos}
[ -d "$ARG" ] && ARG=$ARG/chronos
WORK=$(mktemp -d /tmp/chronos-idle-check.XXXXXX)
# A copy any user may run, beside a ledger any user may write: the waiter
# is another user.
chmod 0777 "$WORK"
install -m 0755 "$(realpath "$ARG")" "$WORK/chronos"
CHRONOS=$WORK/chronos
BACKEND=${CHRONOS_BACKEND:-nvml}
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=$BACKEND
export PATH=$PATH:/usr/local/nvidia/bin
LOG=${OUT:-$WORK}/idle-check.log
exec > >(tee "$LOG") 2>&1

# A minute, not hours: the sleeper is warned after 30 idle seconds; at 1
# idle minute it would be released, but only once someone waits for GPU 0.
LADDER="reclaim=when-waiting idle=1m idle-warn=30s idle-sm=5% idle-start=0s expiry=terminate grace=10s"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; [ ${#PIDS[@]} -eq 0 ] || wait "${PIDS[@]}" 2>/dev/null; } # never a bare wait: it would wait for tee
trap cleanup EXIT
T0=$(date +%s)
ts() { printf '%s +%3ds' "$(date -u +%H:%M:%S)" $(($(date +%s) - T0)); }
step() { printf '\n===== %s  (%s)\n' "$*" "$(ts)"; }
FAILED=0
check() { # description, then a command that must succeed
	local what=$1
	shift
	if "$@"; then echo "PASS  $what"; else echo "FAIL  $what"; FAILED=1; fi
}
skip() { echo "SKIP  $*"; }
events_of() { "$CHRONOS" events -n 0 --json | python3 -c '
import json, sys
want = int(sys.argv[1])
print(" ".join(e["kind"] for e in json.load(sys.stdin) if e.get("partition") == want))' "$1"; }
idle_seconds() { "$CHRONOS" list --json | python3 -c '
import json, sys
want = int(sys.argv[1])
print(int(sum(p["idle_seconds"] for p in json.load(sys.stdin) if p["id"] == want)))' "$1"; }

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

if [ "$BACKEND" = sim ]; then
	SLEEPER_CMD=(sleep 3600)
	TRAINER_CMD=(sleep 3600)
	echo "sleeper: holding (sim)" > "$WORK/sleeper.out"
	echo "trainer: running (sim)" > "$WORK/trainer.out"
else
	SLEEPER_CMD=(python3 "$WORK/sleeper.py")
	TRAINER_CMD=(python3 "$WORK/trainer.py")
fi

step "machine"
date -u
if [ "$BACKEND" = sim ]; then
	echo "simulated GPUs (CHRONOS_BACKEND=sim): a dry run of the steps"
else
	nvidia-smi --query-gpu=index,name,driver_version,memory.total,utilization.gpu --format=csv
	python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
fi
"$CHRONOS" version

step "monitor, with the ladder: $LADDER"
"$CHRONOS" --monitor --policy "$LADDER" 2> "$WORK/monitor.log" &
PIDS+=($!)
sleep 2
chmod 0666 "$CHRONOS_DB"

step "two booked jobs on GPU 0: the sleeper holds 60%, the training loop 30%"
ids() { "$CHRONOS" list --json | python3 -c 'import json, sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))'; }
"$CHRONOS" run 0 60% 30m --warn-signal none -- "${SLEEPER_CMD[@]}" >> "$WORK/sleeper.out" 2>&1 &
SLEEPER_RUN=$!
PIDS+=($SLEEPER_RUN)
for _ in $(seq 100); do [ -n "$(ids)" ] && break; sleep 0.1; done
SLEEPER=$(ids)
"$CHRONOS" run 0 30% 30m --warn-signal none -- "${TRAINER_CMD[@]}" >> "$WORK/trainer.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ "$(ids)" != "$SLEEPER" ] && break; sleep 0.1; done
TRAINER=$(ids | tr ' ' '\n' | grep -vx "$SLEEPER")
for _ in $(seq 120); do grep -q holding "$WORK/sleeper.out" && grep -q running "$WORK/trainer.out" && break; sleep 0.5; done
cat "$WORK/sleeper.out" "$WORK/trainer.out"
"$CHRONOS" list
echo "sleeper is booking $SLEEPER, trainer is booking $TRAINER"
if [ "$BACKEND" = sim ]; then
	# Simulated GPUs see no work: the training loop would idle too.
	"$CHRONOS" hold "$TRAINER" 30m --reason "sim: stands for the training loop"
fi
sleep 5
"$CHRONOS" stats

step "nobody waits: the sleeper is warned, and kept past idle=1m (expect: idle >= 60 s, events 'created idle', no 'reclaimed'; up to 150 s)"
START=$(date +%s)
while [ $(($(date +%s) - START)) -lt 150 ]; do
	[ "$(idle_seconds "$SLEEPER")" -ge 60 ] && break
	sleep 5
done
S=" $(events_of "$SLEEPER") "
echo "$(ts): sleeper #$SLEEPER idle $(idle_seconds "$SLEEPER") s, events:$S"
check "the sleeper has been idle a minute (idle=) with nobody waiting" test "$(idle_seconds "$SLEEPER")" -ge 60
check "the sleeper was warned" grep -q " idle " <<< "$S"
check "with nobody waiting the sleeper was not reclaimed" bash -c "! grep -q ' reclaimed ' <<< '$S'"

step "nobody asks for 50% of GPU 0 with create --wait (10% free); expect: the sleeper reclaimed and nobody granted within about a minute"
runuser -u nobody -- env HOME=/nonexistent CHRONOS_DB="$CHRONOS_DB" CHRONOS_BACKEND="$BACKEND" \
	"$CHRONOS" create 0 50% 10m --wait > "$WORK/waiter.out" 2> "$WORK/waiter.err" &
WAITER=$!
PIDS+=($WAITER)
for _ in $(seq 100); do grep -q waits "$WORK/waiter.err" && break; sleep 0.1; done
echo "$(ts): $(cat "$WORK/waiter.err")"
"$CHRONOS" queue
START=$(date +%s)
while [ $(($(date +%s) - START)) -lt 120 ] && kill -0 $WAITER 2>/dev/null; do sleep 1; done
wait $WAITER
WAITER_EXIT=$?
echo "$(ts): nobody's create --wait exited $WAITER_EXIT after $(($(date +%s) - START)) s: $(cat "$WORK/waiter.out")"
"$CHRONOS" list --all
"$CHRONOS" events -n 0 | grep -E " #($SLEEPER|$TRAINER|$((TRAINER + 1))) " || true

step "the sleeper's chronos run"
for _ in $(seq 60); do kill -0 $SLEEPER_RUN 2>/dev/null || break; sleep 0.5; done
wait $SLEEPER_RUN
SLEEPER_EXIT=$?
cat "$WORK/sleeper.out"
echo "$(ts): chronos run exited $SLEEPER_EXIT"

step "checks"
S=" $(events_of "$SLEEPER") "
T=" $(events_of "$TRAINER") "
echo "sleeper #$SLEEPER events:$S"
echo "trainer #$TRAINER events:$T"
check "the sleeper was warned, then reclaimed for the waiter" grep -q " idle reclaimed " <<< "$S"
check "the reclaim says someone is waiting" bash -c "'$CHRONOS' events -n 0 | grep -q 'someone is waiting for it'"
check "nobody's create --wait exited 0, booked on GPU 0" bash -c "test $WAITER_EXIT = 0 && grep -q 'of GPU 0 for nobody' '$WORK/waiter.out'"
check "the sleeper's process was stopped and its run exited 124" test "$SLEEPER_EXIT" = 124
if [ "$BACKEND" = sim ]; then
	skip "the training loop was never flagged idle (sim: no GPU work to see)"
else
	check "the training loop was never flagged idle" bash -c "! grep -q ' idle ' <<< '$T'"
fi
check "the training loop is still booked" bash -c "'$CHRONOS' list --json | grep -q '\"id\": $TRAINER,'"
"$CHRONOS" list --all --json | python3 "$WORK/usage.py"

step "monitor log"
cat "$WORK/monitor.log"
echo "wall time: $(($(date +%s) - T0)) s"
[ "$FAILED" = 0 ] && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$FAILED"
