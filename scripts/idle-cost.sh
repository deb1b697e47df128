#!/usr/bin/env bash
# Measures what an idle headless monitor and an idle app cost, with 8
# simulated GPUs and 100 bookings: CPU (% of one core), memory (RSS), bytes
# the app writes to its terminal per second, and the app's time to its first
# full frame. Usage: scripts/idle-cost.sh [bin/chronos] [seconds] [WIDTHxHEIGHT]
set -euo pipefail
BIN=$(realpath "${1:-bin/chronos}")
SECS=${2:-60}
SIZE=${3:-120x40}
WORK=$(mktemp -d)
SOCK=$WORK/tmux.sock
trap 'tmux -S "$SOCK" kill-server 2>/dev/null; kill $MON 2>/dev/null; rm -rf "$WORK"' EXIT
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=8
TICKS=$(getconf CLK_TCK)

for i in $(seq 0 99); do "$BIN" create $((i % 8)) 1% 4h >/dev/null; done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
measure() { # name pid: CPU over SECS seconds after a 3 s settle
	sleep 3
	local t0 c0 t1 c1
	t0=$(date +%s%N); c0=$(cpu_ticks "$2")
	sleep "$SECS"
	t1=$(date +%s%N); c1=$(cpu_ticks "$2")
	awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$TICKS" -v name="$1" -v rss="$(rss_mib "$2")" \
		'BEGIN {printf "%-8s CPU %.2f%% of one core over %.0f s, RSS %s MiB\n", name, 100 * c / hz / (t / 1e9), t / 1e9, rss}'
}

"$BIN" --monitor 2>/dev/null &
MON=$!
measure monitor $MON
kill $MON; wait $MON 2>/dev/null || true

tmux -S "$SOCK" new-session -d -s app -x "${SIZE%x*}" -y "${SIZE#*x}" sh
OUTF=$WORK/pane.out
tmux -S "$SOCK" pipe-pane -t app -o "cat >> $OUTF"
: > "$OUTF"
start=$(date +%s%N)
tmux -S "$SOCK" send-keys -t app "exec $BIN" Enter
# A full frame: the bookings are loaded and drawn (escapes stripped).
until sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$OUTF" 2>/dev/null | grep -q "Bookings (100)"; do sleep 0.002; done
echo "app      first full frame $(( ($(date +%s%N) - start) / 1000000 )) ms after the command was typed (shell start included)"
APP=$(pgrep -f "^$BIN\$" | head -1)
sleep 3
# Bytes over the time they took: measure's window is its settle plus SECS.
b0=$(stat -c %s "$OUTF"); w0=$(date +%s%N)
measure app "$APP"
b1=$(stat -c %s "$OUTF"); w1=$(date +%s%N)
echo "app      wrote $(( (b1 - b0) * 1000000000 / (w1 - w0) )) bytes/s to the terminal (measured over $(( (w1 - w0) / 1000000000 )) s, idle)"
