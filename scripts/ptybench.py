#!/usr/bin/env python3
"""What a terminal program costs while a person watches it.

Each program runs alone in a pseudo-terminal of the given size, which answers
the queries a real terminal answers (background colour, cursor position,
device attributes) and reads everything the program writes. After a warm-up,
for the given seconds, it measures:

  CPU       % of one core, of the program and every process it started
  RSS       the peak resident memory of those processes together, MiB
  private   of which private (RssAnon: the heap and stacks, what the program
            itself costs the machine); the rest is pages of the program's
            files and libraries, shared with every process that maps them
  output    bytes written to the terminal per second, KiB/s
  first     ms from start to the first byte written, and to the first frame
            (the first time the screen holds the --ready text, escapes removed)

and prints one Markdown table row per program. Python 3 standard library only,
Linux only (/proc), so it runs on a bare GPU machine.

  scripts/ptybench.py [--size 120x40] [--seconds 30] [--warmup 5] \\
      [--ready NAME=TEXT ...] [--keys NAME=KEYS ...] NAME=COMMAND [NAME=COMMAND ...]

--keys types KEYS (Python escapes: '\\r' is enter) once the program's first
frame shows, to measure a view other than its first.

  scripts/ptybench.py --ready chronos='Bookings (' chronos=bin/chronos nvtop=nvtop
"""

import argparse
import fcntl
import os
import re
import select
import shlex
import signal
import struct
import sys
import termios
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
HZ = os.sysconf("SC_CLK_TCK")

# What a terminal answers: the background colour (OSC 11) and foreground
# (OSC 10) as a dark xterm, the cursor position (CSI 6n), the device
# attributes (CSI c). Programs that ask and get no answer wait for a timeout.
QUERIES = [
    (re.compile(rb"\x1b\]11;\?(\x07|\x1b\\)"), b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
    (re.compile(rb"\x1b\]10;\?(\x07|\x1b\\)"), b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
    (re.compile(rb"\x1b\[6n"), b"\x1b[1;1R"),
    (re.compile(rb"\x1b\[0?c"), b"\x1b[?62;22c"),
]
ESCAPES = re.compile(rb"\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78MDEc])")


def proc_stat(pid):
    """(utime + stime + waited-for children's, rss pages, private bytes) of one process."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rfind(")") + 2:].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    anon = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) * 1024
    return ticks, int(fields[21]), anon


def parents():
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
                out.setdefault(int(s[s.rfind(")") + 2:].split()[1]), []).append(int(d))
            except OSError:
                pass
    return out


def tree(root):
    kids, todo, out = parents(), [root], []
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def usage(root):
    """CPU ticks, resident bytes and private bytes of root and its descendants."""
    ticks = rss = anon = 0
    for pid in tree(root):
        try:
            t, r, a = proc_stat(pid)
        except OSError:
            continue
        ticks, rss, anon = ticks + t, rss + r * PAGE, anon + a
    return ticks, rss, anon


def spawn(argv, rows, cols, env):
    """Starts argv on a new pseudo-terminal already of the right size."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            if slave > 2:
                os.close(slave)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(slave)
    return pid, master


def measure(name, argv, rows, cols, warmup, seconds, ready, keys=None):
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor", LINES=str(rows), COLUMNS=str(cols))
    start = time.monotonic()
    pid, fd = spawn(argv, rows, cols, env)
    first_byte = first_frame = None
    total, tail, screen = 0, b"", b""
    window_start = start + warmup
    end = window_start + seconds
    ticks0 = bytes0 = None
    peak = peak_anon = 0
    next_sample = window_start
    exited = False
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if ticks0 is None and now >= window_start:
            ticks0, _, _ = usage(pid)
            bytes0, window_start = total, now
            end = now + seconds
        if ticks0 is not None and now >= next_sample:
            _, r, a = usage(pid)
            peak, peak_anon = max(peak, r), max(peak_anon, a)
            next_sample = now + 0.5
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            exited = True
            break
        if not data:
            exited = True
            break
        if first_byte is None:
            first_byte = (time.monotonic() - start) * 1000
        total += len(data)
        tail = (tail + data)[-64:]
        replies = [reply for query, reply in QUERIES if query.search(tail)]
        if replies:
            os.write(fd, b"".join(replies))
            tail = b""
        if ready and first_frame is None:
            screen = (screen + data)[-65536:]
            if ready.encode() in ESCAPES.sub(b"", screen):
                first_frame = (time.monotonic() - start) * 1000
                if keys:
                    os.write(fd, keys)
    elapsed = time.monotonic() - window_start
    ticks1, rss, anon = usage(pid)
    peak, peak_anon = max(peak, rss), max(peak_anon, anon)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except OSError:
            pass
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
            time.sleep(0.02)
        else:
            continue
        break
    os.close(fd)
    if exited or ticks0 is None:
        return {"name": name, "error": "exited before the measurement ended (run it by hand to see why)"}
    return {
        "name": name,
        "cpu": (ticks1 - ticks0) / HZ / elapsed * 100,
        "rss": peak / 2**20,
        "anon": peak_anon / 2**20,
        "kib": (total - bytes0) / elapsed / 1024,
        "first": first_byte,
        "frame": first_frame,
        "seconds": elapsed,
    }


def ms(v):
    return "—" if v is None else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="120x40", help="COLSxROWS (default 120x40)")
    ap.add_argument("--seconds", type=float, default=30, help="measured window (default 30)")
    ap.add_argument("--warmup", type=float, default=5, help="seconds before measuring (default 5)")
    ap.add_argument("--ready", action="append", default=[], metavar="NAME=TEXT",
                    help="the program's first frame is the first screen holding TEXT")
    ap.add_argument("--keys", action="append", default=[], metavar="NAME=KEYS",
                    help="keys to type once the first frame shows (Python escapes)")
    ap.add_argument("programs", nargs="+", metavar="NAME=COMMAND")
    a = ap.parse_args()
    cols, rows = (int(x) for x in a.size.lower().split("x"))
    ready = dict(r.split("=", 1) for r in a.ready)
    keys = {n: k.encode().decode("unicode_escape").encode() for n, k in (x.split("=", 1) for x in a.keys)}
    print(f"| program | terminal | CPU, % of one core | peak RSS, MiB | of which private, MiB | output, KiB/s | first output, ms | first frame, ms |")
    print(f"|---|---|--:|--:|--:|--:|--:|--:|")
    failed = False
    for spec in a.programs:
        name, _, command = spec.partition("=")
        r = measure(name, shlex.split(command), rows, cols, a.warmup, a.seconds, ready.get(name), keys.get(name))
        if "error" in r:
            print(f"| {name} | {cols}×{rows} | {r['error']} | | | | | |", flush=True)
            failed = True
            continue
        print(f"| {name} | {cols}×{rows} | {r['cpu']:.2f} | {r['rss']:.1f} | {r['anon']:.1f} | {r['kib']:.2f} | {ms(r['first'])} | {ms(r['frame'])} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
