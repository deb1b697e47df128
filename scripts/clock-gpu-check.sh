#!/usr/bin/env bash
# After the one-clock change, on a real NVIDIA GPU: the binary still reads
# NVML, a booking still ends its command on time (chronos run exits 124
# at the deadline), a monitor still expires on time, and the app's cost
# beside nvtop is where it was (scripts/peer-bench.sh).
#
#   scripts/clock-gpu-check.sh BIN NVTOP      (SECS=20 by default here)
set -uo pipefail
BIN=$(realpath "$1") NVTOP=${2:-}
export CHRONOS_DB=$(mktemp -d)/chronos.db
say() { printf '\n## %s\n' "$*"; }
say "nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
say "chronos backends"; "$BIN" backends
say "chronos stats"; "$BIN" stats

say "chronos run 0 5% 5s -- sleep 60: ends at the deadline, exit 124"
start=$(date +%s.%N)
"$BIN" run 0 5% 5s -- sleep 60; rc=$?
echo "exit $rc after $(python3 -c "import time; print(round(time.time() - $start, 2))") s"

say "a monitor expires a 3 s booking on time"
"$BIN" --monitor >"$CHRONOS_DB.monitor.log" 2>&1 &
mon=$!
sleep 1
"$BIN" create 0 5% 3s
sleep 5
"$BIN" events -n 0 | tail -3
"$BIN" list --all --json | python3 -c 'import json,sys; b=json.load(sys.stdin)[-1]; print("booking", b["id"], b["state"], "expires", b["expires"], "ended", b.get("ended"))'
kill $mon; wait $mon 2>/dev/null
grep -E 'expired' "$CHRONOS_DB.monitor.log" | head -3

say "the app beside nvtop (scripts/peer-bench.sh, SECS=${SECS:-20})"
SECS=${SECS:-20} WARMUP=${WARMUP:-3} "$(dirname "$0")/peer-bench.sh" "$BIN" $NVTOP
