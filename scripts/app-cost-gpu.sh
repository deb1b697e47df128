#!/usr/bin/env bash
# The app's cost beside nvtop on a GPU machine, with the GPU busy (issue
# 20's figures): CPU and output of each alone in a 120x40 pseudo-terminal
# (scripts/peer-bench.sh), and the memory each copy costs when four run at
# once (proportional set size, PSS: shared pages split between the copies),
# the app on a ledger of 100 bookings.
#
#   scripts/app-cost-gpu.sh CHRONOS NVTOP
#   PSS_ONLY=3 scripts/app-cost-gpu.sh CHRONOS NVTOP OTHER_CHRONOS
#     only the memory, in 3 rounds, CHRONOS and another build alternated
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
CHRONOS=$(realpath "$1") NVTOP=$(realpath "$2") OTHER=${3:+$(realpath "$3")}
HERE=$(dirname "$(realpath "$0")")
WORK=$(mktemp -d)
LOAD=
trap '[ -n "$LOAD" ] && kill "$LOAD" 2>/dev/null; rm -rf "$WORK"' EXIT

python3 "$HERE/gpu_workload.py" hold --gib 2 --seconds 600 >"$WORK/load.log" 2>&1 &
LOAD=$!
sleep 8
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader

[ -n "${PSS_ONLY:-}" ] || SECS=${SECS:-30} WARMUP=${WARMUP:-5} "$HERE/peer-bench.sh" "$CHRONOS" "$NVTOP"

BUSY=$WORK/busy.db
CHRONOS_DB=$BUSY "$CHRONOS" available >/dev/null
for i in $(seq 0 99); do
	CHRONOS_DB=$BUSY "$CHRONOS" create 0 1% $((3600 + i * 137))s >/dev/null
done
pss() { # pss N SECONDS COMMAND...: N copies at once, each in a 120x40 pty; MiB of PSS per copy
	python3 - "$@" <<'PY'
import fcntl, os, pty, select, struct, sys, termios, time
n, secs, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
kids = []
for _ in range(n):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    kids.append((pid, fd))
end = time.time() + secs
while time.time() < end:  # drain what they draw
    r, _, _ = select.select([fd for _, fd in kids], [], [], 0.2)
    for fd in r:
        try:
            os.read(fd, 65536)
        except OSError:
            pass
total = 0
for pid, _ in kids:
    for line in open(f"/proc/{pid}/smaps_rollup"):
        if line.startswith("Pss:"):
            total += int(line.split()[1])
for pid, _ in kids:  # SIGTERM, then SIGKILL for one still drawing after 2 s
    os.kill(pid, 15)
left, end = dict(kids), time.time() + 2
while left and time.time() < end:
    r, _, _ = select.select(list(left.values()), [], [], 0.1)
    for fd in r:
        try:
            os.read(fd, 65536)
        except OSError:
            pass
    for pid in list(left):
        if os.waitpid(pid, os.WNOHANG)[0]:
            del left[pid]
for pid in left:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(f"{total / n / 1024:.1f} MiB PSS per copy, {n} copies")
PY
}
for round in $(seq "${PSS_ONLY:-1}"); do
	echo "chronos, 100 bookings: $(CHRONOS_DB=$BUSY pss 4 15 "$CHRONOS")"
	[ -z "$OTHER" ] || echo "$3, 100 bookings: $(CHRONOS_DB=$BUSY pss 4 15 "$OTHER")"
done
echo "nvtop: $(pss 4 15 "$NVTOP")"
