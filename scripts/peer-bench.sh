#!/usr/bin/env bash
# The app next to its peers, each alone in the same pseudo-terminal
# (scripts/ptybench.py): chronos with an empty ledger and with 100 bookings,
# the headless monitor with those 100 bookings (the engine the app runs
# inside it, for reference), and nvtop and nvitop when given. Prints one
# Markdown table.
#
#   scripts/peer-bench.sh CHRONOS [NVTOP] [NVITOP_SOURCE_DIR]
#   scripts/peer-bench.sh bin/chronos ../shared/peers/nvtop ../shared/peers/nvitop-src
#
# SIZE (120x40), SECS (60) and WARMUP (5) change the run. The GPUs are the
# ones CHRONOS_BACKEND finds (auto: NVML where there is a driver); on a
# machine without one: CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=8.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,13p' "$0"; exit 2; }
CHRONOS=$(realpath "$1")
NVTOP=${2:-}
NVITOP=${3:-}
SIZE=${SIZE:-120x40} SECS=${SECS:-60} WARMUP=${WARMUP:-5}
BENCH=$(dirname "$(realpath "$0")")/ptybench.py
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
IDLE=$WORK/idle.db BUSY=$WORK/busy.db

# 100 bookings of 1% each over the GPUs there are, ending between one and
# five hours from now at different seconds, as in a busy lab.
CHRONOS_DB=$IDLE "$CHRONOS" available >/dev/null
GPUS=$(CHRONOS_DB=$BUSY "$CHRONOS" available | grep -c 'GPU [0-9]')
for i in $(seq 0 99); do
	CHRONOS_DB=$BUSY "$CHRONOS" create $((i % GPUS)) 1% $((3600 + i * 137))s >/dev/null
done

programs=(
	"chronos=env CHRONOS_DB=$IDLE $CHRONOS"
	"chronos-100=env CHRONOS_DB=$BUSY $CHRONOS"
	"monitor-100=env CHRONOS_DB=$BUSY $CHRONOS --monitor"
)
[ -n "$NVTOP" ] && programs+=("nvtop=$(realpath "$NVTOP")")
[ -n "$NVITOP" ] && programs+=("nvitop=env PYTHONPATH=$(realpath "$NVITOP") python3 -m nvitop")

echo "$GPUS GPU(s), $("$CHRONOS" version 2>/dev/null | head -1), $(date -u +%FT%TZ), ${SECS} s after ${WARMUP} s"
python3 "$BENCH" --size "$SIZE" --seconds "$SECS" --warmup "$WARMUP" \
	--ready 'chronos=Bookings (0)' --ready 'chronos-100=Bookings (100)' --ready 'nvtop=Device' --ready 'nvitop=NVITOP' \
	"${programs[@]}"
