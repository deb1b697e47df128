#!/usr/bin/env bash
# What accounting and the idle ladder cost a headless monitor: CPU (% of one
# core) and ledger write transactions per hour, with 8 simulated GPUs and 100
# bookings, the ladder on (reclaim=always, the default durations). Given a
# second binary (chronos before accounting, say), it measures that one too,
# in turns with the first, so that both see the same machine.
# Usage: scripts/ladder-cost.sh NEW_BIN [BASE_BIN] [SECONDS] [ROUNDS]
set -euo pipefail
NEW=$(realpath "${1:?usage: $0 NEW_BIN [BASE_BIN] [SECONDS] [ROUNDS]}")
BASE=${2:+$(realpath "$2")}
SECS=${3:-300}
ROUNDS=${4:-2}
WORK=$(mktemp -d)
MON=
trap '[ -n "$MON" ] && kill $MON 2>/dev/null; rm -rf "$WORK"' EXIT
export CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=8
PAGE=$(getconf PAGESIZE)

# bbolt's transaction id (the larger of its two meta pages) counts the
# ledger's committed write transactions.
txid() {
	local a b
	a=$(od -An -tu8 -j 64 -N8 "$1" | tr -d ' ')
	b=$(od -An -tu8 -j $((PAGE + 64)) -N8 "$1" | tr -d ' ')
	echo $((a > b ? a : b))
}
# CPU time in nanoseconds, summed over the process's threads (schedstat is
# finer than /proc/PID/stat's clock ticks, which would round a monitor's
# few hundred milliseconds a minute to tenths of a percent).
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }

measure() { # name binary [monitor flags...]
	local name=$1 bin=$2
	shift 2
	export CHRONOS_DB=$WORK/$name.db
	rm -f "$CHRONOS_DB"*
	for i in $(seq 0 99); do "$bin" create $((i % 8)) 1% 8h >/dev/null; done
	"$bin" --monitor "$@" 2>"$WORK/$name.log" &
	MON=$!
	sleep 5
	local t0 c0 x0 t1 c1 x1
	t0=$(date +%s%N); c0=$(cpu_ns $MON); x0=$(txid "$CHRONOS_DB")
	sleep "$SECS"
	t1=$(date +%s%N); c1=$(cpu_ns $MON); x1=$(txid "$CHRONOS_DB")
	kill $MON; wait $MON 2>/dev/null || true
	MON=
	awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v w=$((x1 - x0)) -v name="$name" \
		'BEGIN {printf "%-6s CPU %.3f%% of one core (%.0f ms in %.0f s), %d writes = %.0f writes/hour\n", name, 100 * c / t, c / 1e6, t / 1e9, w, w * 3600 / (t / 1e9)}'
}

for _ in $(seq "$ROUNDS"); do
	measure ladder "$NEW" --policy "reclaim=always"
	[ -n "$BASE" ] && measure base "$BASE"
done
