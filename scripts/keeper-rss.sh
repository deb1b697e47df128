#!/usr/bin/env bash
# keeper-rss.sh [N] — the keeper's memory with N (200) members waiting.
#
# As root: builds chronos, makes a guarded ledger of the group daemon in a
# directory of its own (sim GPUs, never the host's ledger or socket),
# starts root's keeper (`chronos --monitor`), books GPU 0 whole as root,
# then starts N `chronos create 0 1MiB 1m --wait` as nobody in the group
# daemon (real processes, each with its connection to the keeper open).
# Prints the keeper's VmRSS and VmHWM before and with the N waiting, then
# releases root's booking and says how long until every waiter was booked.
# CHRONOS_BIN names a binary to measure instead of building this tree.
set -euo pipefail
N=${1:-200}
[ "$(id -u)" = 0 ] || { echo "keeper-rss.sh: run as root (the keeper is root's)" >&2; exit 2; }

dir=$(mktemp -d /tmp/chronos-rss-XXXXXX)
keeper=
cleanup() {
	# The waiters, then the keeper: the processes this script started.
	for job in $(jobs -p); do [ "$job" = "$keeper" ] || kill "$job" 2>/dev/null || true; done
	[ -n "$keeper" ] && kill "$keeper" 2>/dev/null && wait "$keeper" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
chmod 0755 "$dir"
mkdir -m 0777 "$dir/home"
mkdir -m 0755 "$dir/run"
if [ -n "${CHRONOS_BIN:-}" ]; then # another build, to compare
	cp "$CHRONOS_BIN" "$dir/chronos"
else
	go build -o "$dir/chronos" "$(dirname "$0")/.."
fi

export CHRONOS_DB="$dir/home/lab/chronos.db" CHRONOS_SOCKET="$dir/run/chronos/chronos.sock" \
	CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=2 CHRONOS_SIM_MEMORY=80GiB CHRONOS_NOTIFY_FILE="$dir/notify"
chronos=("$dir/chronos")
"${chronos[@]}" init --shared --guarded --group daemon >/dev/null
"${chronos[@]}" --monitor >"$dir/keeper.log" 2>&1 &
keeper=$!
for _ in $(seq 100); do [ -S "$CHRONOS_SOCKET" ] && break; sleep 0.1; done
[ -S "$CHRONOS_SOCKET" ] || { echo "the keeper did not start:" >&2; cat "$dir/keeper.log" >&2; exit 1; }
"${chronos[@]}" create 0 1.0 1h >/dev/null 2>&1
id=$("${chronos[@]}" list --json | sed -n 's/.*"id": *\([0-9]*\).*/\1/p' | head -1)

mem() { awk '/^(VmRSS|VmHWM)/ {printf "%s %.1f MiB  ", $1, $2/1024}' "/proc/$keeper/status"; }
echo "keeper pid $keeper, before: $(mem)  (load $(cut -d' ' -f1-3 /proc/loadavg))"

for _ in $(seq "$N"); do
	setpriv --reuid=65534 --regid=65534 --groups=1 -- env HOME=/nonexistent \
		"${chronos[@]}" create 0 1MiB 1m --wait >/dev/null 2>>"$dir/waiters.err" &
done
for _ in $(seq 600); do
	waiting=$("${chronos[@]}" queue --json | { grep -o '"position"' || true; } | wc -l)
	[ "$waiting" -ge "$N" ] && break
	sleep 0.1
done
echo "$waiting waiting; with them: $(mem)  threads $(awk '/^Threads/ {print $2}' "/proc/$keeper/status")  (load $(cut -d' ' -f1-3 /proc/loadavg))"

start=$(date +%s.%N)
"${chronos[@]}" release "$id" >/dev/null
for job in $(jobs -p); do [ "$job" = "$keeper" ] || wait "$job"; done
end=$(date +%s.%N)
booked=$("${chronos[@]}" list --json | grep -c '"owner": *"nobody"' || true)
echo "released: $booked of nobody's bookings live $(echo "$end - $start" | bc) s later; after: $(mem)"
[ -s "$dir/waiters.err" ] && { echo "waiters said:"; sort "$dir/waiters.err" | uniq -c | head; }
exit 0
