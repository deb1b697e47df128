#!/usr/bin/env bash
# Checks chronos's DRM backend on real AMD or Intel GPUs. Until someone runs
# this on one, that backend has been tested on fixture trees only
# (gpu/testdata/drm). Repeatable by anyone with such a GPU:
#
#   make build && go test -c -o .gpu/gpu.test ./gpu && cp bin/chronos .gpu/
#   sudo scripts/drm-check.sh .gpu
#
# With PyTorch for ROCm (AMD) or XPU (Intel) it also runs a small job in a
# booking. It changes nothing on the machine: its ledger is a temporary file.
# Output: the log on stdout (and in $OUT/drm-check.log when OUT is set).
# Send it back, with what each "compare" line says.
set -uo pipefail

BIN_DIR=$(cd "${1:-.gpu}" && pwd)
CHRONOS=$BIN_DIR/chronos
HERE=$(cd "$(dirname "$0")" && pwd)
LOAD="python3 $HERE/gpu_workload.py"
WORK=$(mktemp -d /tmp/chronos-drm-check.XXXXXX)
export CHRONOS_DB=$WORK/chronos.db CHRONOS_BACKEND=drm
LOG=${OUT:-$WORK}/drm-check.log
exec > >(tee "$LOG") 2>&1

RUN_PID=
cleanup() { [ -n "$RUN_PID" ] && kill -INT "$RUN_PID" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
step() { printf '\n===== %s  (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
have() { command -v "$1" >/dev/null; }

step "machine"
date -u; uname -r; id
for c in /sys/class/drm/card[0-9]*; do
	[ -e "$c/device/uevent" ] || continue
	grep -E '^(DRIVER|PCI_ID|PCI_SLOT_NAME)=' "$c/device/uevent" | tr '\n' ' '
	echo "$(basename "$c")"
	for f in product_name unique_id mem_info_vram_total mem_info_vram_used gpu_busy_percent mem_busy_percent; do
		[ -r "$c/device/$f" ] && printf '    %-20s %s\n' "$f" "$(head -c 80 "$c/device/$f")"
	done
	for h in "$c"/device/hwmon/hwmon*; do
		[ -d "$h" ] && printf '    %-20s %s\n' "$(basename "$h")" "$(cd "$h" && ls | grep -E '^(name|temp[0-9]_input|power[0-9]_(average|input)|energy[0-9]_input)$' | while read -r f; do printf '%s=%s ' "$f" "$(cat "$f")"; done)"
	done
done
have rocminfo && rocminfo 2>/dev/null | grep -E '^\s+(Marketing Name|Uuid|BDFID|Device Type)' | paste - - - - | grep -v CPU
have rocm-smi && rocm-smi --showproductname --showuniqueid --showbus --showmeminfo vram --showuse 2>/dev/null | grep -v '^$'
have amd-smi && amd-smi list 2>/dev/null
have xpu-smi && xpu-smi discovery 2>/dev/null
have sycl-ls && sycl-ls 2>/dev/null
python3 -c 'import torch; x = getattr(torch, "xpu", None); print("torch", torch.__version__, "hip", torch.version.hip, "cuda devices", torch.cuda.device_count(), "xpu devices", x.device_count() if x and x.is_available() else 0)' 2>/dev/null || echo "no PyTorch: the job steps are skipped"

step "backends (expect DRM available, active backend drm)"
"$CHRONOS" --backend auto backends

step "stats with nothing booked; compare memory and busy with the vendor tool above"
"$CHRONOS" stats
"$CHRONOS" stats --json > "$WORK/idle.json"

step "the DRM sample's cost on this machine"
"$BIN_DIR/gpu.test" -test.run '^$' -test.bench 'DRMSample' -test.benchtime 200x 2>&1 | grep -E '^Benchmark|ok|FAIL'

step "each GPU: what a command in a booking sees (expect exactly the booked GPU; compare its PCI address and uuid)"
GPUS=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["sample"]["devices"]))' "$WORK/idle.json")
for i in $(seq 0 $((GPUS - 1))); do
	echo "--- GPU $i: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["sample"]["devices"][int(sys.argv[2])]; print(d["uuid"], d["name"])' "$WORK/idle.json" "$i")"
	"$CHRONOS" run "$i" 0.01 1m -- env | grep -E '^(ROCR|HIP|CUDA|ZE)_' | sort | tr '\n' ' '; echo
	have rocminfo && "$CHRONOS" run "$i" 0.01 1m -- rocminfo 2>/dev/null | grep -E '^\s+(Marketing Name|Uuid|BDFID)' | paste - - - | grep -v CPU
	have sycl-ls && "$CHRONOS" run "$i" 0.01 1m -- sycl-ls 2>/dev/null | grep -i level_zero
	$LOAD visible >/dev/null 2>&1 && "$CHRONOS" run "$i" 0.01 1m -- $LOAD visible
done

if ! $LOAD visible >/dev/null 2>&1; then
	step "no PyTorch GPU job possible here: done"
	exit 0
fi

step "a booked job holding 2 GiB on GPU 0; stats twice (busy needs two readings)"
"$CHRONOS" run 0 0.1 10m -- $LOAD hold --gib 2 --seconds 60 &
RUN_PID=$!
for _ in $(seq 60); do JOB=$(pgrep -f "^python3 .*gpu_workload.py hold" | head -1); [ -n "$JOB" ] && break; sleep 0.5; done
sleep 8
"$CHRONOS" stats
"$CHRONOS" stats --json > "$WORK/busy.json"
python3 - "$WORK/busy.json" "$JOB" <<'PY'
import json, sys
st, job = json.load(open(sys.argv[1])), int(sys.argv[2])
for p in st["processes"]:
    mark = "  <- the job" if p["pid"] == job else ""
    print(f"GPU {p['device']} pid {p['pid']} {p['user']} {p['memory_used_bytes']/2**30:.2f} GiB busy {p['sm_percent']} "
          f"booking {p.get('partition')} {p['verdict']}{mark}")
print("compare: the job is on GPU 0 only, with 2 GiB and a little more, counted against booking 1"
      if any(p["pid"] == job and p["device"] == 0 for p in st["processes"]) else "compare: THE JOB WAS NOT FOUND ON GPU 0")
PY
have rocm-smi && rocm-smi --showpids 2>/dev/null
CHRONOS_HARDWARE_PID=$JOB CHRONOS_HARDWARE_PARTITION=1 "$BIN_DIR/gpu.test" -test.run 'TestHardwareDRMWorkload' -test.v 2>&1 | grep -E 'GPU|busy|PASS|FAIL|ok'

step "the same job seen by an ordinary user (expect a note that other users' processes need root)"
runuser -u nobody -- env CHRONOS_DB="$WORK/nobody.db" CHRONOS_BACKEND=drm "$CHRONOS" stats 2>&1 | grep -E 'GPU|note|PID' | head -20

step "a monitor for 10 s beside the job (expect no act: the job is booked)"
timeout 10 "$CHRONOS" --monitor 2>&1 | tail -5

kill -INT "$RUN_PID" 2>/dev/null; wait "$RUN_PID"; echo "chronos run after SIGINT exited $?"; RUN_PID=
step "done: log in $LOG"
