#!/usr/bin/env python3
"""Writes the DRM backend's fixture trees: sysfs and /proc as amdgpu, i915 and
xe lay them out, after the kernel's Documentation/gpu/drm-usage-stats.rst, the
drivers' fdinfo examples (amdgpu_fdinfo.c, i915 and xe_drm_client.c) and
amdgpu's sysfs documentation, with the cgroup paths and state files of Docker,
Podman and containerd. Run from gpu/: python3 testdata/drm/make-fixtures.py testdata/drm
"""
import os, sys, json, shutil
base = sys.argv[1]
def w(path, content):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'w') as f: f.write(content)
def link(path, target):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p): os.remove(p)
    os.symlink(target, p)
def stat(pid, comm, ppid, start):
    # fields 3.. : state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt,
    # utime, stime, cutime, cstime, priority, nice, num_threads, itrealvalue, starttime, vsize, rss
    f = ["S", str(ppid), str(ppid), str(ppid), "0", "-1", "4194560", "100", "0", "0", "0",
         "12", "3", "0", "0", "20", "0", "4", "0", str(start), "123456789", "2048"]
    return f"{pid} ({comm}) " + " ".join(f) + "\n"
def status(name, uid, nspid):
    return (f"Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t{nspid[0]}\nPid:\t{nspid[0]}\n"
            f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
            "NStgid:\t" + "\t".join(map(str, nspid)) + "\nNSpid:\t" + "\t".join(map(str, nspid)) + "\n")
HOSTMAP = "         0          0 4294967295\n"
def proc(pid, comm, cmd, uid, ppid=1, start=None, env=(), cgroup="0::/user.slice/user-1000.slice/session-3.scope\n",
         nspid=None, uid_map=HOSTMAP, fds=None, fdinfo=None):
    d = f"proc/{pid}/"
    w(d+"stat", stat(pid, comm, ppid, start or 1000+pid))
    w(d+"status", status(comm, uid, nspid or [pid]))
    w(d+"cmdline", "\0".join(cmd) + "\0")
    w(d+"environ", "".join(e + "\0" for e in ["PATH=/usr/bin", *env]))
    w(d+"cgroup", cgroup)
    w(d+"uid_map", uid_map)
    w(d+"ns/user", "")
    os.makedirs(os.path.join(root, d, "fd"), exist_ok=True)
    os.makedirs(os.path.join(root, d, "fdinfo"), exist_ok=True)
    for fd, target in (fds or {}).items():
        link(d+f"fd/{fd}", target)
        if not target.startswith("/dev/dri/"):
            w(d+f"fdinfo/{fd}", "pos:\t0\nflags:\t02\nmnt_id:\t22\nino:\t7\n")
    for fd, info in (fdinfo or {}).items():
        w(d+f"fdinfo/{fd}", info)
def std_fds(): return {"0": "/dev/pts/0", "1": "/dev/pts/0", "2": "/dev/pts/0"}

def amd_fdinfo(client, pdev, vram_kib, gfx_ns=0, compute_ns=0, pasid=32770):
    # amdgpu since 6.12 prints drm_print_memory_stats' keys and the legacy drm-memory-*.
    s = ("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1093\n"
         f"drm-driver:\tamdgpu\ndrm-client-id:\t{client}\ndrm-pdev:\t{pdev}\npasid:\t{pasid}\n"
         f"drm-total-vram:\t{vram_kib} KiB\ndrm-shared-vram:\t0\ndrm-resident-vram:\t{vram_kib} KiB\ndrm-purgeable-vram:\t0\n"
         "drm-total-gtt:\t2048 KiB\ndrm-shared-gtt:\t0\ndrm-resident-gtt:\t2048 KiB\ndrm-purgeable-gtt:\t0\n"
         "drm-total-cpu:\t0\ndrm-shared-cpu:\t0\ndrm-resident-cpu:\t0\ndrm-purgeable-cpu:\t0\n"
         f"drm-memory-vram:\t{vram_kib} KiB\ndrm-memory-gtt: \t2048 KiB\ndrm-memory-cpu: \t0 KiB\n"
         f"amd-evicted-vram:\t0 KiB\namd-requested-vram:\t{vram_kib} KiB\namd-requested-gtt:\t2048 KiB\n")
    if gfx_ns: s += f"drm-engine-gfx:\t{gfx_ns} ns\n"
    if compute_ns: s += f"drm-engine-compute:\t{compute_ns} ns\n"
    return s
def amd_old_fdinfo(client, pdev, vram_kib, gfx_ns):
    # amdgpu before 6.12: only the legacy drm-memory-* keys.
    return ("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1093\n"
            f"pasid:\t32771\ndrm-driver:\tamdgpu\ndrm-pdev:\t{pdev}\ndrm-client-id:\t{client}\n"
            f"drm-memory-vram:\t{vram_kib} KiB\ndrm-memory-gtt: \t512 KiB\ndrm-memory-cpu: \t0 KiB\n"
            "amd-memory-visible-vram:\t0 KiB\namd-evicted-vram:\t0 KiB\n"
            f"drm-engine-gfx:\t{gfx_ns} ns\n")
def i915_fdinfo(client, pdev, sys_kib, render_ns):
    return ("pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t284\n"
            f"drm-driver:\ti915\ndrm-client-id:\t{client}\ndrm-pdev:\t{pdev}\n"
            f"drm-total-system0:\t{sys_kib} KiB\ndrm-shared-system0:\t0\ndrm-active-system0:\t0\n"
            f"drm-resident-system0:\t{sys_kib} KiB\ndrm-purgeable-system0:\t1688 KiB\n"
            "drm-total-stolen-system0:\t0\ndrm-shared-stolen-system0:\t0\ndrm-active-stolen-system0:\t0\n"
            "drm-resident-stolen-system0:\t0\ndrm-purgeable-stolen-system0:\t0\n"
            f"drm-engine-render:\t{render_ns} ns\ndrm-engine-copy:\t0 ns\ndrm-engine-video:\t0 ns\n"
            "drm-engine-capacity-video:\t2\ndrm-engine-video-enhance:\t0 ns\n")
def xe_fdinfo(client, pdev, vram_kib, rcs, ccs, total):
    return ("pos:\t0\nflags:\t0100002\nmnt_id:\t26\nino:\t685\n"
            f"drm-driver:\txe\ndrm-client-id:\t{client}\ndrm-pdev:\t{pdev}\n"
            "drm-total-system:\t0\ndrm-shared-system:\t0\ndrm-active-system:\t0\ndrm-resident-system:\t0\ndrm-purgeable-system:\t0\n"
            "drm-total-gtt:\t192 KiB\ndrm-shared-gtt:\t0\ndrm-active-gtt:\t0\ndrm-resident-gtt:\t192 KiB\n"
            f"drm-total-vram0:\t{vram_kib} KiB\ndrm-shared-vram0:\t16 MiB\ndrm-active-vram0:\t0\ndrm-resident-vram0:\t{vram_kib} KiB\n"
            "drm-total-stolen:\t0\ndrm-shared-stolen:\t0\ndrm-active-stolen:\t0\ndrm-resident-stolen:\t0\n"
            f"drm-cycles-rcs:\t{rcs}\ndrm-total-cycles-rcs:\t{total}\n"
            f"drm-cycles-bcs:\t0\ndrm-total-cycles-bcs:\t{total}\n"
            f"drm-cycles-vcs:\t0\ndrm-total-cycles-vcs:\t{total}\ndrm-engine-capacity-vcs:\t2\n"
            f"drm-cycles-vecs:\t0\ndrm-total-cycles-vecs:\t{total}\ndrm-engine-capacity-vecs:\t2\n"
            f"drm-cycles-ccs:\t{ccs}\ndrm-total-cycles-ccs:\t{total}\ndrm-engine-capacity-ccs:\t4\n")

def card(n, driver, slot, pci_id, files, hwmon=None, render=None):
    d = f"sys/class/drm/card{n}/device/"
    w(d+"uevent", f"DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={pci_id}\nPCI_SUBSYS_ID={pci_id}\nPCI_SLOT_NAME={slot}\nMODALIAS=pci:v0000{pci_id[:4]}d0000{pci_id[5:]}\n")
    for k, v in files.items(): w(d+k, v)
    if hwmon is not None:
        name, hfiles = hwmon
        for k, v in hfiles.items(): w(d+f"hwmon/{name}/"+k, v)
    os.makedirs(os.path.join(root, d, "drm", f"card{n}"), exist_ok=True)
    if render: os.makedirs(os.path.join(root, d, "drm", render), exist_ok=True)
    # The class directory also holds connectors and render nodes.
    w(f"sys/class/drm/card{n}/dev", f"226:{n}\n")

GiB = 1 << 30
MI210, W7900, IGPU, ARC = "0000:03:00.0", "0000:83:00.0", "0000:00:02.0", "0000:0a:00.0"
DOCKER_ID = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
PODMAN_ID = "c97a9ac744b57c11308d04624fc62b087c3031d9ffe95085f68e28ec234f735a"
K8S_ID    = "8d1e2f3a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"

# ---------------------------------------------------------------- multi
root = os.path.join(base, "multi")
shutil.rmtree(root, ignore_errors=True)
card(0, "amdgpu", MI210, "1002:740F", {
    "product_name": "AMD Instinct MI210\n", "unique_id": "5a3c1b2f6d4e7a89\n",
    "mem_info_vram_total": str(64*GiB) + "\n", "mem_info_vram_used": str(12*GiB) + "\n",
    "gpu_busy_percent": "87\n", "mem_busy_percent": "31\n"},
    hwmon=("hwmon2", {"name": "amdgpu\n", "temp1_input": "45000\n", "power1_average": "251000000\n"}), render="renderD128")
card(1, "amdgpu", W7900, "1002:7448", {
    "product_name": "\n",
    "mem_info_vram_total": str(48*GiB) + "\n", "mem_info_vram_used": str(1*GiB) + "\n",
    "gpu_busy_percent": "0\n", "mem_busy_percent": "0\n"},
    hwmon=("hwmon5", {"name": "amdgpu\n", "temp1_input": "38000\n", "power1_input": "31000000\n"}), render="renderD129")
card(2, "i915", IGPU, "8086:A780", {}, render="renderD130")
card(3, "xe", ARC, "8086:E20B", {}, hwmon=("hwmon7", {"name": "xe\n", "temp2_input": "51000\n", "energy1_input": "123456789\n"}), render="renderD131")
card(4, "ast", "0000:c1:00.0", "1A03:2000", {})
w("sys/class/drm/card0-DP-1/status", "disconnected\n")
w("sys/class/drm/renderD128/dev", "226:128\n")
w("sys/class/drm/version", "drm 1.1.0 20060810\n")

# alice's ROCm job: fds to every AMD render node, as ROCr opens them all
fds = std_fds(); fds.update({"3": "/dev/kfd", "4": "/dev/dri/renderD128", "5": "/dev/dri/renderD129", "6": "socket:[4321]", "7": "/home/alice/data.bin"})
proc(100, "python", ["python", "train.py", "--epochs", "90"], 1000, ppid=90, env=["CHRONOS_BOOKING_ID=7", "CHRONOS_PARTITION_ID=7"], fds=fds,
     fdinfo={"4": amd_fdinfo(11, MI210, 8*1024*1024, gfx_ns=5_000_000, compute_ns=1_200_000_000),
             "5": amd_fdinfo(12, W7900, 4096)})
# its DataLoader worker, forked after the GPU was opened: the same client
fds = std_fds(); fds.update({"4": "/dev/dri/renderD128"})
proc(101, "python", ["python", "train.py", "--epochs", "90"], 1000, ppid=100, env=["CHRONOS_PARTITION_ID=7"], fds=fds,
     fdinfo={"4": amd_fdinfo(11, MI210, 8*1024*1024, gfx_ns=5_000_000, compute_ns=1_200_000_000)})
# a Docker container (rootful, cgroup v2, systemd driver), booked by env
fds = std_fds(); fds.update({"3": "/dev/kfd", "4": "/dev/dri/renderD128"})
proc(200, "python3", ["python3", "/app/serve.py"], 0, ppid=199, env=["HOSTNAME=3f2a9c1b7d4e", "CHRONOS_BOOKING_ID=9"],
     cgroup=f"0::/system.slice/docker-{DOCKER_ID}.scope\n", nspid=[200, 1], fds=fds,
     fdinfo={"4": amd_old_fdinfo(21, MI210, 2*1024*1024, 300_000_000)})
w(f"var/lib/docker/containers/{DOCKER_ID}/config.v2.json", json.dumps({"ID": DOCKER_ID, "Name": "/llm-server", "Config": {"Hostname": DOCKER_ID[:12]}}))
# a rootless Podman container (cgroup v2): container uid 1000 is host 100999
fds = {"0": "/dev/null", "5": "/dev/dri/renderD131"}
proc(599, "conmon", ["/usr/bin/conmon", "--api-version", "1", "-c", PODMAN_ID, "-u", PODMAN_ID, "-r", "/usr/bin/crun", "-n", "rl-job", "--exit-dir", "/run/user/1000/libpod/tmp/exits"], 1000, ppid=1,
     cgroup=f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-{PODMAN_ID}.scope\n")
proc(600, "python", ["python", "xpu_job.py"], 100999, ppid=599, env=["container=podman"],
     cgroup=f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{PODMAN_ID}.scope/container\n",
     nspid=[600, 5], uid_map="         0       1000          1\n         1     100000      65536\n", fds=fds,
     fdinfo={"5": xe_fdinfo(3, ARC, 23992, 28257900, 1_000_000, 7655183225)})
# a Kubernetes pod on containerd (cgroup v1, cgroupfs driver)
fds = {"0": "/dev/null", "3": "/dev/dri/renderD129"}
cg = "".join(f"{i}:{c}:/kubepods/burstable/pod0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f/{K8S_ID}\n" for i, c in [(12, "pids"), (11, "memory"), (4, "cpu,cpuacct")]) + "1:name=systemd:/kubepods/burstable/pod0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f/" + K8S_ID + "\n0::/\n"
proc(700, "python", ["python", "-m", "vllm.entrypoints.openai.api_server"], 0, ppid=690, cgroup=cg, nspid=[700, 12], fds=fds,
     fdinfo={"3": amd_fdinfo(31, W7900, 20*1024*1024, compute_ns=9_000_000_000)})
w(f"run/containerd/io.containerd.runtime.v2.task/k8s.io/{K8S_ID}/config.json", json.dumps({"ociVersion": "1.1.0", "process": {"args": ["python"]},
    "annotations": {"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.container-name": "vllm",
                    "io.kubernetes.cri.sandbox-name": "vllm-7d9f8-abcde", "io.kubernetes.cri.sandbox-namespace": "inference"}}))
# Xorg on the integrated GPU
fds = std_fds(); fds.update({"14": "/dev/dri/card2"})
proc(400, "Xorg", ["/usr/lib/xorg/Xorg", "vt1", "-displayfd", "3"], 0, fds=fds, fdinfo={"14": i915_fdinfo(5, IGPU, 6044, 346249)})
# ordinary processes
proc(1, "systemd", ["/sbin/init"], 0, ppid=0, cgroup="0::/init.scope\n", fds={"0": "/dev/null"})
proc(90, "bash", ["-bash"], 1000, fds=std_fds())
w("proc/2/stat", stat(2, "kthreadd", 0, 1)); w("proc/2/status", status("kthreadd", 0, [2])); w("proc/2/cmdline", ""); os.makedirs(os.path.join(root, "proc/2/fd"), exist_ok=True)
w("proc/self/stat", "not a process directory\n")

# ---------------------------------------------------------------- vm: a plain VM's display, no GPU
root = os.path.join(base, "vm")
shutil.rmtree(root, ignore_errors=True)
w("sys/class/drm/card0/device/uevent", "DRIVER=virtio_gpu\nMODALIAS=virtio:d00000010v00001AF4\n")
w("sys/class/drm/card1/device/uevent", "DRIVER=bochs-drm\nPCI_CLASS=30000\nPCI_ID=1234:1111\nPCI_SLOT_NAME=0000:00:02.0\n")
w("sys/class/drm/card1-Virtual-1/status", "connected\n")
w("sys/class/drm/version", "drm 1.1.0 20060810\n")
proc(1, "systemd", ["/sbin/init"], 0, ppid=0, fds={"0": "/dev/null"})

# ---------------------------------------------------------------- missing: files a driver or a process may lack
root = os.path.join(base, "missing")
shutil.rmtree(root, ignore_errors=True)
card(0, "amdgpu", MI210, "1002:740F", {"mem_info_vram_total": str(64*GiB) + "\n"},
     hwmon=("hwmon1", {"name": "amdgpu\n"}))  # no used, busy, name; a hwmon without readings
w("sys/class/drm/card1/device/uevent", "DRIVER=amdgpu\n")  # no PCI slot: not counted
fds = {"4": "/dev/dri/renderD128", "5": "/dev/dri/renderD128"}
proc(100, "python", ["python", "a.py"], 1000, fds=fds, fdinfo={"5": amd_fdinfo(11, MI210, 1024*1024, gfx_ns=5)})  # fd 4 has no fdinfo
fds = {"4": "/dev/dri/renderD128"}
proc(101, "python", ["python", "b.py"], 1000, fds=fds, fdinfo={"4": amd_fdinfo(12, MI210, 2048)})
os.remove(os.path.join(root, "proc/101/status"))  # exited between the fd scan and the owner's read
os.makedirs(os.path.join(root, "proc/102"), exist_ok=True)  # a process that exited mid-scan: no fd dir

# ---------------------------------------------------------------- malformed: what a damaged or odd tree may hold
root = os.path.join(base, "malformed")
shutil.rmtree(root, ignore_errors=True)
card(0, "amdgpu", MI210, "1002:740F", {"mem_info_vram_total": "-5\n", "mem_info_vram_used": "lots\n", "gpu_busy_percent": "250\n",
    "mem_busy_percent": "x\n", "product_name": "AMD \x1b[31mInstinct\x1b[0m\n", "unique_id": "not hex\n"},
    hwmon=("hwmon0", {"temp1_input": "hot\n", "power1_average": "99999999999999999999999\n"}))
w("sys/class/drm/card1/device/uevent", "garbage without equals\n\x00\xff")
w("sys/class/drm/cardX/device/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:09:00.0\n")
fds = {"3": "/dev/dri/renderD128", "4": "/dev/dri/renderD128", "5": "/dev/dri/renderD128", "6": "/dev/dri/renderD128"}
proc(100, "x", ["x"], 1000, fds=fds, cgroup="garbage\n::\n0::/docker/not-an-id\n12:memory\n", uid_map="0 zero 1\n", fdinfo={
    "3": "drm-driver:\tamdgpu\ndrm-pdev:\t" + MI210 + "\ndrm-client-id:\t1\ndrm-memory-vram:\t12 PiB\ndrm-engine-gfx:\tlots ns\n"
         "drm-engine-compute:\t-5 ns\ndrm-engine-capacity-gfx:\t0\ndrm-resident-vram:\t99999999999999999999 KiB\nno colon here\n:\n",
    "4": "drm-driver:\tamdgpu\ndrm-client-id:\t2\ndrm-memory-vram:\t1 KiB\n",  # no drm-pdev
    "5": "\x00\xff\xfe binary junk",
    "6": "drm-driver:\tamdgpu\ndrm-pdev:\t" + MI210 + "\ndrm-client-id:\t3\ndrm-memory-vram:\t" + str(18446744073709551615) + " MiB\n"})
w("proc/100/stat", "100 (x S 1 2\n")  # no closing parenthesis

# ---------------------------------------------------------------- topology: the PCI tree as sysfs links it
# Six MI210s: 0,1 below one PCIe switch and 2 on another root port of the same
# host bridge (pci0000:00), 3 on a second root complex of NUMA node 0, 4,5
# below a switch on node 1. Card numbers are not in slot order, as on real
# machines; the backend's index is.
root = os.path.join(base, "topology")
shutil.rmtree(root, ignore_errors=True)
def pci_card(n, slot, path, numa):
    dev = f"sys/devices/{path}/{slot}/"
    w(dev+"uevent", f"DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_ID=1002:740F\nPCI_SUBSYS_ID=1002:0C34\nPCI_SLOT_NAME={slot}\n")
    w(dev+"numa_node", f"{numa}\n")
    w(dev+"product_name", "AMD Instinct MI210\n")
    w(dev+"mem_info_vram_total", str(64*GiB) + "\n")
    w(dev+f"drm/card{n}/dev", f"226:{n}\n")
    link(dev+f"drm/card{n}/device", f"../../../{slot}")
    link(f"sys/class/drm/card{n}", f"../../devices/{path}/{slot}/drm/card{n}")
pci_card(2, "0000:03:00.0", "pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0", 0)
pci_card(0, "0000:04:00.0", "pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0", 0)
pci_card(5, "0000:21:00.0", "pci0000:00/0000:00:03.1", 0)
pci_card(1, "0000:41:00.0", "pci0000:40/0000:40:01.1", 0)
pci_card(4, "0000:83:00.0", "pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:00.0", 1)
pci_card(3, "0000:84:00.0", "pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:01.0", 1)
