package gpu

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// The fixture trees under testdata/drm are written by make-fixtures.py from
// the kernel's documented formats: multi (two AMD GPUs, an Intel iGPU on
// i915, an Intel discrete GPU on xe, a BMC's display, and processes on the
// host, in Docker, in rootless Podman and in a Kubernetes pod), missing
// (files a driver or a vanishing process may lack), malformed (damage) and
// vm (a plain VM's display: no GPU).

const (
	mi210   = "0000:03:00.0"
	w7900   = "0000:83:00.0"
	igpu    = "0000:00:02.0"
	arc     = "0000:0a:00.0"
	dockerC = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	podmanC = "c97a9ac744b57c11308d04624fc62b087c3031d9ffe95085f68e28ec234f735a"
	k8sC    = "8d1e2f3a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"
)

func fixture(name string) string { return filepath.Join("testdata", "drm", name) }

func openFixture(t testing.TB, root string, now func() time.Time) *DRM {
	t.Helper()
	d, err := OpenDRM(DRMOptions{Root: root, Now: now})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// copyTree copies a fixture, symlinks included, so a test may change it.
func copyTree(t testing.TB, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case e.IsDir():
			return os.MkdirAll(dst, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
	})
	require.NoError(t, err)
	return to
}

func processOn(t testing.TB, d DeviceSample, pid int) Process {
	t.Helper()
	for _, p := range d.Processes {
		if p.PID == pid {
			return p
		}
	}
	require.Failf(t, "process not listed", "pid %d on GPU %d: %+v", pid, d.Index, d.Processes)
	return Process{}
}

// changingFixture copies the multi fixture for a test to change and opens
// it on a clock the test moves with tick.
func changingFixture(t *testing.T) (root string, d *DRM, tick func(time.Duration)) {
	t.Helper()
	root = copyTree(t, fixture("multi"))
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	d = openFixture(t, root, func() time.Time { return now })
	return root, d, func(dt time.Duration) { now = now.Add(dt) }
}

func pids(d DeviceSample) []int {
	var out []int
	for _, p := range d.Processes {
		out = append(out, p.PID)
	}
	return out
}

func TestDRMInventory(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("multi"), nil)
	require.Equal(t, "drm", d.Name())
	require.False(t, d.Simulated())
	devs, err := d.Devices()
	require.NoError(t, err)
	// PCI slot order, not card numbers (card0 is the MI210); the BMC's ast
	// display, connectors and render nodes are not GPUs.
	require.Equal(t, []Device{
		{Index: 0, UUID: "i915-" + igpu, Name: "Intel GPU 8086:A780"},
		{Index: 1, UUID: "amdgpu-" + mi210, Name: "AMD Instinct MI210", MemoryTotal: 64 * gib},
		{Index: 2, UUID: "xe-" + arc, Name: "Intel GPU 8086:E20B"},
		{Index: 3, UUID: "amdgpu-" + w7900, Name: "AMD GPU 1002:7448", MemoryTotal: 48 * gib},
	}, devs)
}

func TestDRMSample(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	d := openFixture(t, fixture("multi"), fixedClock(at))
	s, err := d.Sample()
	require.NoError(t, err)
	require.Equal(t, at, s.Time)
	require.Equal(t, "drm", s.Backend)
	require.False(t, s.Simulated)
	require.Len(t, s.Devices, 4)

	intel, mi, xe, w := s.Devices[0], s.Devices[1], s.Devices[2], s.Devices[3]

	// amdgpu: VRAM, busy, memory busy, hwmon temperature and power.
	require.Equal(t, 12*gib, mi.MemoryUsed)
	require.Equal(t, 52*gib, mi.MemoryFree)
	require.Equal(t, 87, mi.Util)
	require.Equal(t, 31, mi.MemUtil)
	require.Equal(t, 45, mi.TempC)
	require.InDelta(t, 251.0, mi.PowerW, 1e-9)
	require.Empty(t, mi.Notes)
	// A newer amdgpu reports power1_input instead of power1_average.
	require.InDelta(t, 31.0, w.PowerW, 1e-9)
	require.Equal(t, 38, w.TempC)

	// Intel: no busy or memory files; used is what the processes hold.
	require.Equal(t, procfs.NA, intel.Util)
	require.Equal(t, procfs.NA, intel.TempC)
	require.Equal(t, uint64(6044<<10), intel.MemoryUsed)
	require.Contains(t, intel.Notes, "utilization: not reported by i915")
	require.Contains(t, intel.Notes, "memory: not reported by i915; used is the sum of the processes shown")
	require.Contains(t, xe.Notes, "temperature: not reported by xe", "xe's hwmon has no temp1_input")

	// The worker that inherited its parent's client is not counted twice.
	require.Equal(t, []int{100, 200}, pids(mi))
	train := processOn(t, mi, 100)
	require.Equal(t, 8*gib, train.MemoryUsed, "drm-resident-vram, not also the legacy drm-memory-vram")
	require.Equal(t, procfs.NA, train.SM, "one reading: no busy share yet")
	require.Equal(t, 1000, train.UID)
	require.Equal(t, procfs.UserName(1000), train.User)
	require.Equal(t, "python train.py --epochs 90", train.Command)
	require.Equal(t, "7", train.PartitionID)
	require.EqualValues(t, 1100, train.StartTime)
	require.False(t, train.Container.InContainer())

	// ROCm opens every AMD GPU: the job shows on the W7900 with what it
	// holds there.
	require.Equal(t, []int{100, 700}, pids(w))
	require.Equal(t, uint64(4096<<10), processOn(t, w, 100).MemoryUsed)

	// Docker: host pid, container id and name, booking passed in with -e.
	served := processOn(t, mi, 200)
	require.Equal(t, 2*gib, served.MemoryUsed, "old amdgpu: drm-memory-vram alone")
	require.Equal(t, "9", served.PartitionID)
	require.Equal(t, 0, served.UID)
	c := served.Container
	require.Equal(t, procfs.Container{ID: dockerC, Runtime: procfs.RuntimeDocker, Name: "llm-server", PID: 1},
		procfs.Container{ID: c.ID, Runtime: c.Runtime, Name: c.Name, Pod: c.Pod, Rootless: c.Rootless, PID: c.PID})
	require.Equal(t, "llm-server", served.Container.Label())

	// Rootless Podman: the person is the user whose namespace it is, not
	// the subordinate uid the process runs as.
	job := processOn(t, xe, 600)
	require.Equal(t, 1000, job.UID)
	require.Equal(t, procfs.Container{ID: podmanC, Runtime: procfs.RuntimePodman, Name: "rl-job", Rootless: true, PID: 5}, job.Container)
	require.Equal(t, uint64(23992<<10), job.MemoryUsed, "vram0 only: not the gtt or system regions")

	// Kubernetes on containerd: name and pod from the OCI bundle's annotations.
	vllm := processOn(t, w, 700)
	require.Equal(t, "vllm", vllm.Container.Name)
	require.Equal(t, "inference/vllm-7d9f8-abcde", vllm.Container.Pod)
	require.Equal(t, procfs.RuntimeContainerd, vllm.Container.Runtime)
	require.Equal(t, k8sC[:12], vllm.Container.ShortID())

	require.Equal(t, []int{400}, pids(intel), "Xorg holds a client on the integrated GPU")
	require.Equal(t, []int{600}, pids(xe))
}

// Busy shares come from the engine counters' growth between two samples:
// nanoseconds against the clock (amdgpu, i915), or busy against total GPU
// cycles (xe), each divided by the engine group's capacity.
func TestDRMBusyBetweenSamples(t *testing.T) {
	t.Parallel()
	root, d, tick := changingFixture(t)
	_, err := d.Sample()
	require.NoError(t, err)

	rewrite := func(rel, old, new string) {
		path := filepath.Join(root, rel)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
	// 2 s later: alice's compute engine ran 1.5 s of them; the Docker
	// process's gfx counter went backwards (allowed: it must be held);
	// the xe job's ccs group (4 engines) ran 2 of every 8 cycles.
	tick(2 * time.Second)
	rewrite("proc/100/fdinfo/4", "drm-engine-compute:\t1200000000 ns", "drm-engine-compute:\t2700000000 ns")
	rewrite("proc/200/fdinfo/4", "drm-engine-gfx:\t300000000 ns", "drm-engine-gfx:\t100000000 ns")
	rewrite("proc/600/fdinfo/5", "drm-cycles-ccs:\t1000000\n", "drm-cycles-ccs:\t201000000\n")
	rewrite("proc/600/fdinfo/5", "drm-total-cycles-ccs:\t7655183225", "drm-total-cycles-ccs:\t8055183225")

	s, err := d.Sample()
	require.NoError(t, err)
	require.Equal(t, 75, processOn(t, s.Devices[1], 100).SM)
	require.Equal(t, 0, processOn(t, s.Devices[1], 200).SM)
	require.Equal(t, 13, processOn(t, s.Devices[2], 600).SM, "200M of 400M cycles over 4 engines: 12.5%")
	require.Equal(t, 0, processOn(t, s.Devices[3], 700).SM, "unchanged counters: idle")

	// The backwards counter is held at its larger value: growing back to
	// it is not counted as work.
	tick(time.Second)
	rewrite("proc/200/fdinfo/4", "drm-engine-gfx:\t100000000 ns", "drm-engine-gfx:\t300000000 ns")
	s, err = d.Sample()
	require.NoError(t, err)
	require.Equal(t, 0, processOn(t, s.Devices[1], 200).SM)
}

func TestDRMMissingFiles(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("missing"), nil)
	s, err := d.Sample()
	require.NoError(t, err)
	require.Len(t, s.Devices, 1, "a card without a PCI slot is not counted")
	dev := s.Devices[0]
	require.Equal(t, "AMD GPU 1002:740F", dev.Name, "no product_name: vendor and PCI id")
	require.Equal(t, procfs.NA, dev.Util)
	require.Equal(t, procfs.NA, dev.TempC)
	require.Less(t, dev.PowerW, 0.0)
	require.Equal(t, []string{
		"memory: not reported by amdgpu", "utilization: not reported by amdgpu",
		"temperature: not reported by amdgpu", "power: not reported by amdgpu",
	}, dev.Notes)
	// fd 4 has no fdinfo (closed while read): fd 5 still counts. A process
	// gone before its owner was read stays listed, owner unknown, as NVML's
	// exited processes do.
	require.Equal(t, []int{100, 101}, pids(dev))
	require.Equal(t, gib, processOn(t, dev, 100).MemoryUsed)
	gone := processOn(t, dev, 101)
	require.Equal(t, procfs.NA, gone.UID)
	require.Empty(t, gone.User)
}

// Damaged files never crash a sample: each bad reading is NA with a note
// that says what was wrong, and a bad fdinfo value counts as nothing.
func TestDRMMalformed(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("malformed"), nil)
	devs, err := d.Devices()
	require.NoError(t, err)
	require.Len(t, devs, 1, "only card0 is a card with a driver and a slot")
	require.Equal(t, "AMD [31mInstinct[0m", devs[0].Name, "no control characters reach a terminal")
	s, err := d.Sample()
	require.NoError(t, err)
	dev := s.Devices[0]
	require.Equal(t, procfs.NA, dev.Util)
	require.Equal(t, procfs.NA, dev.MemUtil)
	require.Equal(t, procfs.NA, dev.TempC)
	require.Equal(t, []string{
		`utilization: malformed gpu_busy_percent 250%`,
		`temperature: malformed temp1_input "hot"`,
		`power: malformed power1_average "99999999999999999999…"`,
		`memory: malformed mem_info_vram_total "-5"; used is the sum of the processes shown`,
	}, dev.Notes)
	require.Equal(t, []int{100}, pids(dev))
	p := dev.Processes[0]
	require.Zero(t, p.MemoryUsed, "unknown units and overflowing values count as nothing")
	require.Equal(t, procfs.NA, p.UID, "its stat is damaged")
}

// A plain VM's virtual display (virtio, bochs) is not a GPU: the DRM backend
// finds none, and auto falls back to simulated GPUs as before.
func TestDRMVirtualDisplayIsNoGPU(t *testing.T) {
	t.Parallel()
	_, err := OpenDRM(DRMOptions{Root: fixture("vm")})
	require.ErrorIs(t, err, ErrNoDRMGPUs)
	_, err = OpenDRM(DRMOptions{Root: t.TempDir()})
	require.ErrorIs(t, err, ErrNoDRMGPUs, "no /sys/class/drm at all")
}

func TestDRMClosed(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("multi"), nil)
	require.NoError(t, d.Close())
	_, err := d.Sample()
	require.ErrorIs(t, err, ErrClosed)
}

func TestOpenAutoPicksDRM(t *testing.T) {
	withNVML(t, noDriver())
	t.Setenv(DRMRootEnv, fixture("multi"))
	for _, kind := range []string{"", "auto", "drm", " DRM "} {
		b, notice, err := Open(kind)
		require.NoError(t, err, kind)
		require.Empty(t, notice)
		require.Equal(t, "drm", b.Name())
		require.False(t, b.Simulated())
		require.NoError(t, b.Close())
	}

	t.Setenv(DRMRootEnv, fixture("vm"))
	b, notice, err := Open("auto")
	require.NoError(t, err)
	require.True(t, b.Simulated(), "a VM without a GPU still gets simulated GPUs")
	require.Equal(t, "no NVIDIA, AMD or Intel GPU found (NVML: libnvidia-ml.so.1 not found — is the NVIDIA driver installed?); showing simulated GPUs", notice)
	_, _, err = Open("drm")
	require.ErrorIs(t, err, ErrNoDRMGPUs)
	require.EqualError(t, err, "drm backend unavailable: DRM: no AMD or Intel GPU (amdgpu, i915 or xe driver) in /sys/class/drm")
}

func TestVisibleEnv(t *testing.T) {
	t.Setenv(DRMRootEnv, fixture("multi"))
	for _, c := range []struct {
		uuid  string
		index int
		want  []string
	}{
		{"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", 3, []string{"CUDA_VISIBLE_DEVICES=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"}},
		{"MIG-8932f937-d72c-4106-c12f-20bd9faed9f6", 0, []string{"CUDA_VISIBLE_DEVICES=MIG-8932f937-d72c-4106-c12f-20bd9faed9f6"}},
		{"SIM-00000000-0000-0000-0000-000000000002", 2, []string{"CUDA_VISIBLE_DEVICES=2"}},
		{"", 1, []string{"CUDA_VISIBLE_DEVICES=1"}},
		// The MI210 has a unique id: ROCm's own name for it.
		{"amdgpu-" + mi210, 1, []string{"ROCR_VISIBLE_DEVICES=GPU-5a3c1b2f6d4e7a89", "HIP_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=0"}},
		// The W7900 has none: the second AMD GPU in PCI order, whatever
		// chronos's own index (3) says.
		{"amdgpu-" + w7900, 3, []string{"ROCR_VISIBLE_DEVICES=1", "HIP_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=0"}},
		{"i915-" + igpu, 0, []string{"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1", "ZE_AFFINITY_MASK=0"}},
		{"xe-" + arc, 2, []string{"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1", "ZE_AFFINITY_MASK=1"}},
		// Booked, then the card went away: nothing is visible.
		{"amdgpu-0000:99:00.0", 4, []string{"ROCR_VISIBLE_DEVICES=-1", "HIP_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=0"}},
	} {
		require.Equal(t, c.want, VisibleEnv(c.uuid, c.index), c.uuid)
	}
}

// A sample reads the links of fds it has not seen, and of a process known
// to hold GPU files only those; it looks at everything again every
// fdRescan. So a process's first GPU file shows at once, a closed one goes
// at once, and a GPU process's further GPU file, here on a number it had
// closed, within fdRescan.
func TestDRMNoticesOpenedAndClosedFiles(t *testing.T) {
	t.Parallel()
	root, d, tick := changingFixture(t)
	s, err := d.Sample()
	require.NoError(t, err)
	require.Equal(t, []int{400}, pids(s.Devices[0]))

	fd := func(pid int, n string) string { return filepath.Join(root, "proc", strconv.Itoa(pid), "fd", n) }
	info := func(pid int, n string) string { return filepath.Join(root, "proc", strconv.Itoa(pid), "fdinfo", n) }
	gpuFile := i915FDInfo(t, 77)

	// bash (pid 90) opens the integrated GPU on a new number, 9.
	require.NoError(t, os.Symlink("/dev/dri/renderD130", fd(90, "9")))
	require.NoError(t, os.WriteFile(info(90, "9"), gpuFile, 0o644))
	tick(time.Second)
	s, err = d.Sample()
	require.NoError(t, err)
	require.Equal(t, []int{90, 400}, pids(s.Devices[0]), "a new number is looked at at once")

	// Xorg closes its GPU file (the kernel removes both entries).
	require.NoError(t, os.Remove(fd(400, "14")))
	require.NoError(t, os.Remove(info(400, "14")))
	tick(time.Second)
	s, err = d.Sample()
	require.NoError(t, err)
	require.Equal(t, []int{90}, pids(s.Devices[0]), "a closed file goes at once")

	// The Docker process (pid 200), on the MI210 already, closes its
	// terminal, fd 1, and gets the same number for the integrated GPU.
	require.NoError(t, os.Remove(fd(200, "1")))
	require.NoError(t, os.Symlink("/dev/dri/renderD130", fd(200, "1")))
	require.NoError(t, os.WriteFile(info(200, "1"), i915FDInfo(t, 78), 0o644))
	seen := false
	for range 11 {
		tick(time.Second)
		s, err = d.Sample()
		require.NoError(t, err)
		if slices.Contains(pids(s.Devices[0]), 200) {
			seen = true
			break
		}
	}
	require.True(t, seen, "a reused number is looked at again within %s", fdRescan)
}

// The owner read for a pid is trusted while the pid holds the same GPU
// clients; a pid that comes back with new clients is another process, read
// again.
func TestDRMReusedPIDIsReadAgain(t *testing.T) {
	t.Parallel()
	root, d, _ := changingFixture(t)
	s, err := d.Sample()
	require.NoError(t, err)
	require.Equal(t, 0, processOn(t, s.Devices[0], 400).UID)

	// pid 400 is now daemon's (uid 1) Xorg, with a client of its own.
	dir := filepath.Join(root, "proc", "400")
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte(strings.ReplaceAll(string(status), "Uid:\t0\t0\t0\t0", "Uid:\t1\t1\t1\t1")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(coretest.FakeStat(400, "Xorg", 99999)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fdinfo", "14"), i915FDInfo(t, 79), 0o644))
	s, err = d.Sample()
	require.NoError(t, err)
	p := processOn(t, s.Devices[0], 400)
	require.Equal(t, 1, p.UID)
	require.EqualValues(t, 99999, p.StartTime)
}

// i915FDInfo is an integrated-GPU client with the given id.
func i915FDInfo(t *testing.T, id int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture("multi"), "proc", "400", "fdinfo", "14"))
	require.NoError(t, err)
	return []byte(strings.Replace(string(b), "drm-client-id:\t5", "drm-client-id:\t"+strconv.Itoa(id), 1))
}

// An ordinary user cannot read other users' open files: their GPU
// processes are missing from the sample, and a note says how many
// processes could not be read. Run as nobody on a copy of the fixture in
// which one process's fd directory is root's alone.
func TestDRMOtherUsersProcessesNeedRoot(t *testing.T) {
	t.Parallel()
	if root := os.Getenv("CHRONOS_TEST_DRM_ROOT"); root != "" {
		d, err := OpenDRM(DRMOptions{Root: root})
		require.NoError(t, err)
		s, err := d.Sample()
		require.NoError(t, err)
		for _, dev := range s.Devices {
			fmt.Printf("GPU %d pids %v notes %q\n", dev.Index, pids(dev), dev.Notes)
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a sample as nobody")
	}
	dir, err := os.MkdirTemp("", "chronos-drm-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	root := filepath.Join(dir, "tree")
	require.NoError(t, os.Rename(copyTree(t, fixture("multi")), root))
	require.NoError(t, os.Chmod(filepath.Join(root, "proc", "200", "fd"), 0o700))

	// The test binary itself, where nobody may run it.
	bin := filepath.Join(dir, "gpu.test")
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	coretest.WriteExecutable(t, bin, self)
	cmd := exec.Command(bin, "-test.run", "^TestDRMOtherUsersProcessesNeedRoot$")
	cmd.Env = append(os.Environ(), "CHRONOS_TEST_DRM_ROOT="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `GPU 1 pids [100] notes ["processes: 1 of other users not readable (root sees them)"]`)
	require.Contains(t, string(out), "GPU 3 pids [100 700]", "the other processes are still read")
}
