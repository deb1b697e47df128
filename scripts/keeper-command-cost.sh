#!/usr/bin/env bash
# The whole `chronos create` command of a member (nobody, in group gpu),
# through root's keeper on a guarded ledger against the same command
# writing an open ledger directly, alternated, in the same run: issue 21's
# "≤ 1.3× the open-mode command". Each create is released before the next
# (not timed). Needs root, the group gpu with nobody in it, and a built
# binary:
#
#   make build && sudo scripts/keeper-command-cost.sh bin/chronos [ROUNDS] [EACH]
#
# Prints each round's medians and the ratio; nothing is left behind.
set -euo pipefail
bin=$(realpath "${1:-bin/chronos}")
rounds=${2:-3}
each=${3:-20}
work=$(mktemp -d /tmp/chronos-keeper-cost.XXXXXX)
chmod 755 "$work"
trap 'kill "${keeper:-0}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/guarded" "$work/open"
CHRONOS_DB=$work/guarded/chronos.db "$bin" init --shared --guarded --group gpu >/dev/null
CHRONOS_DB=$work/open/chronos.db "$bin" init --shared --group gpu >/dev/null
CHRONOS_DB=$work/open/chronos.db "$bin" stats >/dev/null 2>&1 # records the GPUs, as the keeper does for its ledger
sock=$work/run/chronos.sock
CHRONOS_DB=$work/guarded/chronos.db CHRONOS_SOCKET=$sock "$bin" --monitor >"$work/keeper.log" 2>&1 &
keeper=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { echo "the keeper did not start:"; cat "$work/keeper.log"; exit 1; }

# median_ms DB: the median of $each creates' whole-command times, as nobody.
median_ms() {
	local db=$1 times=() t0 t1 id out
	for _ in $(seq "$each"); do
		t0=$(date +%s%N)
		out=$(runuser -u nobody -- env CHRONOS_DB="$db" CHRONOS_SOCKET="$sock" "$bin" create 0 1MiB 1m --json 2>&1) ||
			{ echo "create failed: $out" >&2; exit 1; }
		t1=$(date +%s%N)
		id=$(echo "$out" | sed -n 's/^  "id": \([0-9]*\),$/\1/p')
		times+=($(((t1 - t0) / 1000)))
		runuser -u nobody -- env CHRONOS_DB="$db" CHRONOS_SOCKET="$sock" "$bin" release "$id" >/dev/null
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	g=$(median_ms "$work/guarded/chronos.db")
	o=$(median_ms "$work/open/chronos.db")
	echo "round $r: through the keeper ${g} ms, open ledger ${o} ms: $(awk -v g="$g" -v o="$o" 'BEGIN {printf "%.2fx", g/o}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
