#!/usr/bin/env bash
# What serving Prometheus metrics costs a headless monitor: its CPU (% of
# one core) with `--metrics` (and --metrics-compat dcgm) scraped every
# SCRAPE seconds, next to the same monitor without metrics, in turns, so
# that both see the same machine; and the scrape's time as curl sees it.
# 8 simulated GPUs, 100 live bookings (the case).
# Usage: scripts/metrics-cost.sh BIN [SECONDS] [ROUNDS] [SCRAPE]
set -euo pipefail
BIN=$(realpath "${1:?usage: $0 BIN [SECONDS] [ROUNDS] [SCRAPE]}")
SECS=${2:-120}
ROUNDS=${3:-2}
SCRAPE=${4:-15}
WORK=$(mktemp -d)
MON=
trap '[ -n "$MON" ] && kill $MON 2>/dev/null; rm -rf "$WORK"' EXIT
export CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=8
command -v curl >/dev/null || { echo "needs curl"; exit 1; }

# CPU time in nanoseconds, summed over the process's threads.
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }

measure() { # name [monitor flags...]
	local name=$1
	shift
	export CHRONOS_DB=$WORK/$name.db
	rm -f "$CHRONOS_DB"*
	for i in $(seq 0 99); do "$BIN" create $((i % 8)) 1% 8h >/dev/null; done
	"$BIN" --monitor "$@" 2>"$WORK/$name.log" &
	MON=$!
	sleep 3
	local url
	url=$(grep -o 'http://[^ "]*/metrics' "$WORK/$name.log" || true)
	local t0 c0 t1 c1 end
	t0=$(date +%s%N); c0=$(cpu_ns $MON)
	end=$((SECONDS + SECS))
	: >"$WORK/$name.times"
	while [ $SECONDS -lt $end ]; do
		if [ -n "$url" ]; then
			curl -s -o /dev/null -w '%{time_total}\n' "$url" >>"$WORK/$name.times"
		fi
		sleep "$SCRAPE"
	done
	t1=$(date +%s%N); c1=$(cpu_ns $MON)
	kill $MON; wait $MON 2>/dev/null || true
	MON=
	local scrape=""
	if [ -s "$WORK/$name.times" ]; then
		scrape=$(sort -n "$WORK/$name.times" | awk '{a[NR] = $1} END {printf ", scrape median %.1f ms, max %.1f ms (%d scrapes)", 1000 * a[int((NR + 1) / 2)], 1000 * a[NR], NR}')
	fi
	awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v name="$name" -v s="$scrape" \
		'BEGIN {printf "%-8s CPU %.3f%% of one core (%.0f ms in %.0f s)%s\n", name, 100 * c / t, c / 1e6, t / 1e9, s}'
}

for _ in $(seq "$ROUNDS"); do
	measure metrics --metrics 127.0.0.1:0 --metrics-compat dcgm
	measure plain
done
