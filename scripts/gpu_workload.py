#!/usr/bin/env python3
"""Small PyTorch workloads for scripts/gpu-check.sh and scripts/drm-check.sh.

  hold  --gib N --seconds S   hold N GiB and multiply matrices for S seconds;
                              reports SIGUSR1 (chronos's warning) and SIGTERM;
                              on CUDA (NVIDIA, or AMD under ROCm) or XPU (Intel)
  visible                     the GPUs PyTorch sees, one line each
  alloc --gib N               try to allocate N GiB once; exit 0 if it fits, 3 on OOM
  bench --windows K --seconds S --monitor CMD
                              bf16 matmul throughput in K windows of S seconds,
                              with CMD (a chronos --monitor) running in every
                              other window; prints each window and the ratio
"""
import argparse, os, shlex, signal, statistics, subprocess, sys, time

import torch

GIB = 1 << 30


def now():
    return f"{time.time():.3f}"


VISIBILITY = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")


def accelerator():
    """cuda (NVIDIA, and AMD under ROCm) or xpu (Intel), and its torch module."""
    if torch.cuda.is_available():
        return "cuda", torch.cuda
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu", torch.xpu
    sys.exit("no GPU visible to PyTorch (" + ", ".join(f"{v}={os.environ.get(v)}" for v in VISIBILITY) + ")")


def visible(args):
    kind, mod = accelerator()
    env = " ".join(f"{v}={os.environ[v]}" for v in VISIBILITY if v in os.environ)
    print(f"visible: {mod.device_count()} {kind} device(s) with {env or 'no visibility variables'}", flush=True)
    for i in range(mod.device_count()):
        props = mod.get_device_properties(i)
        bus = ":".join(str(getattr(props, f, "?")) for f in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
        print(f"visible: {i} {props.name} {props.total_memory / GIB:.1f} GiB pci {bus} uuid {getattr(props, 'uuid', '?')}", flush=True)


def hold(args):
    kind, mod = accelerator()

    def on_usr1(sig, frame):
        print(f"workload {os.getpid()}: SIGUSR1 (warning) at {now()}", flush=True)

    def on_term(sig, frame):
        print(f"workload {os.getpid()}: SIGTERM at {now()}, exiting", flush=True)
        sys.exit(143)

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGTERM, on_term)
    held = torch.empty(int(args.gib * GIB), dtype=torch.uint8, device=kind)
    a = torch.randn(4096, 4096, device=kind, dtype=torch.bfloat16)
    env = ", ".join(f"{v}={os.environ[v]}" for v in VISIBILITY if v in os.environ)
    print(f"workload {os.getpid()}: holding {args.gib} GiB on {mod.get_device_name()} "
          f"({env}, booking {os.environ.get('CHRONOS_BOOKING_ID', os.environ.get('CHRONOS_PARTITION_ID'))})", flush=True)
    end = time.time() + args.seconds
    while time.time() < end:
        for _ in range(50):
            a = (a @ a).clamp_(-1, 1)
        mod.synchronize()
    print(f"workload {os.getpid()}: done", flush=True)
    del held


def alloc(args):
    limit = os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "none")
    free, total = torch.cuda.mem_get_info()
    print(f"alloc: MPS limit {limit}; CUDA sees {free / GIB:.1f} GiB free of {total / GIB:.1f} GiB", flush=True)
    try:
        x = torch.empty(int(args.gib * GIB), dtype=torch.uint8, device="cuda")
        x.fill_(1)
        torch.cuda.synchronize()
        print(f"alloc: {args.gib} GiB OK", flush=True)
        return 0
    except torch.OutOfMemoryError as e:
        print(f"alloc: {args.gib} GiB FAILED with out-of-memory: {str(e).splitlines()[0]}", flush=True)
        return 3


def bench(args):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    flop = 2 * n ** 3
    results = {"off": [], "on": []}
    monitor = None
    for w in range(args.windows):
        on = w % 2 == 1
        if on:
            monitor = subprocess.Popen(shlex.split(args.monitor), stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # let it start and take its first samples
        count = 0
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        t_end = time.time() + args.seconds
        while time.time() < t_end:
            for _ in range(20):
                a @ b
            count += 20
        stop.record()
        torch.cuda.synchronize()
        secs = start.elapsed_time(stop) / 1000
        tflops = count * flop / secs / 1e12
        results["on" if on else "off"].append(tflops)
        print(f"bench window {w:2d} monitor {'on ' if on else 'off'}: {tflops:8.2f} TFLOP/s", flush=True)
        if on:
            monitor.terminate()
            monitor.wait()
    off, on = statistics.mean(results["off"]), statistics.mean(results["on"])
    print(f"bench: mean off {off:.2f}, on {on:.2f} TFLOP/s; slowdown {100 * (1 - on / off):+.3f}% "
          f"(window spread off {100 * statistics.pstdev(results['off']) / off:.3f}%, "
          f"on {100 * statistics.pstdev(results['on']) / on:.3f}%)", flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    h = sub.add_parser("hold"); h.add_argument("--gib", type=float, default=4); h.add_argument("--seconds", type=float, default=20)
    h.add_argument("--tag", default="", help="ignored: text that only shows in the command line")
    a = sub.add_parser("alloc"); a.add_argument("--gib", type=float, required=True)
    b = sub.add_parser("bench"); b.add_argument("--windows", type=int, default=12); b.add_argument("--seconds", type=float, default=5)
    b.add_argument("--monitor", required=True)
    sub.add_parser("visible")
    args = p.parse_args()
    if args.mode == "hold":
        hold(args)
    elif args.mode == "visible":
        visible(args)
    elif args.mode == "alloc":
        sys.exit(alloc(args))
    else:
        bench(args)


if __name__ == "__main__":
    main()
