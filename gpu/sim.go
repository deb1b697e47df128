package gpu

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// SimOptions shape the simulated GPUs. Zero fields take the defaults.
type SimOptions struct {
	Count  int    // devices; default 4
	Memory uint64 // bytes per device; default 80 GiB
	Name   string // default "Simulated H100 80GB"
	Now    func() time.Time
}

// Sim is a deterministic set of fake GPUs with moving load: the same time
// always gives the same sample. It can also show real local processes as if
// they ran on a simulated GPU (Attach), which monitor tests rely on.
type Sim struct {
	opts SimOptions

	// procs is shared with NVML's way of reading /proc: one stat read per
	// known process per sample. Guarded by procsMu.
	procsMu sync.Mutex
	procs   *procfs.ProcCache

	mu       sync.Mutex
	attached map[int]attachment // by pid
}

type attachment struct {
	device int
	memory uint64
	sm     int // percent
}

// simPIDBase keeps fake pids above the kernel's pid_max (4194304 at most),
// so they never name a real process.
const simPIDBase = 4_200_000

// fakeProcess is a made-up workload; its memory is a share of the device.
type fakeProcess struct {
	user    string
	uid     int
	command string
	share   float64 // of device memory, before the gentle wobble
}

// simWorkloads repeat every four devices; the fourth GPU is idle so screens
// show free capacity too.
var simWorkloads = [][]fakeProcess{
	{{"alice", 2001, "python train.py --config configs/llama-7b.yaml", 0.55}},
	{{"bob", 2002, "python finetune.py --lora", 0.30}, {"carol", 2003, "jupyter-kernel --ip=127.0.0.1", 0.12}},
	{{"bob", 2002, "python -m vllm.entrypoints.api_server --model mistral-7b", 0.85}},
	{},
}

// NewSim makes simulated GPUs.
func NewSim(opts SimOptions) *Sim {
	if opts.Count <= 0 {
		opts.Count = 4
	}
	if opts.Memory == 0 {
		opts.Memory = 80 * (1 << 30)
	}
	if opts.Name == "" {
		opts.Name = "Simulated H100 80GB"
	}
	if opts.Now == nil {
		opts.Now = clock.System().Now
	}
	return &Sim{opts: opts, procs: procfs.NewProcCache(procfs.HostProc), attached: map[int]attachment{}}
}

// SimName is the simulated backend's name, as inventories record it.
const SimName = "simulated"

// Name is "simulated".
func (s *Sim) Name() string { return SimName }

// Simulated is true.
func (s *Sim) Simulated() bool { return true }

// Close does nothing; a Sim holds no resources.
func (s *Sim) Close() error { return nil }

// Devices lists the simulated GPUs.
func (s *Sim) Devices() ([]Device, error) {
	devs := make([]Device, s.opts.Count)
	for i := range devs {
		devs[i] = s.device(i)
	}
	return devs, nil
}

func (s *Sim) device(i int) Device {
	return Device{
		Index:       i,
		UUID:        fmt.Sprintf("SIM-00000000-0000-0000-0000-%012d", i),
		Name:        s.opts.Name,
		MemoryTotal: s.opts.Memory,
	}
}

// Topology is a fixed, plausible layout, like a PCIe box with NVLink
// bridges: GPUs in NVLink pairs (0-1, 2-3, …), each four under one PCIe
// switch, the fours on alternate NUMA nodes.
func (s *Sim) Topology() Topology {
	t := NewTopology(s.opts.Count)
	for a := range s.opts.Count {
		for b := a + 1; b < s.opts.Count; b++ {
			switch {
			case a/2 == b/2:
				t.SetLink(a, b, Link{Level: LinkNVLink, NVLinks: 4})
			case a/4 == b/4:
				t.SetLink(a, b, Link{Level: LinkPCIeSwitch})
			case a/4%2 == b/4%2:
				t.SetLink(a, b, Link{Level: LinkNUMANode})
			default:
				t.SetLink(a, b, Link{Level: LinkSystem})
			}
		}
	}
	return t
}

// Attach shows the real local process pid on device with the given memory
// use. Its owner, command, partition and start time come from /proc; once it
// exits it drops out of samples. A device outside the inventory shows
// nothing.
func (s *Sim) Attach(device int, pid int, memory uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attached[pid] = attachment{device: device, memory: memory}
}

// SetSM makes an attached process show sm percent of SM activity (0, idle,
// until set); the device's utilization rises with it. Tests make bookings
// busy or idle with it.
func (s *Sim) SetSM(pid, sm int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.attached[pid]; ok {
		a.sm = min(max(sm, 0), 100)
		s.attached[pid] = a
	}
}

// Detach stops showing pid.
func (s *Sim) Detach(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.attached, pid)
}

// Sample reads the simulated GPUs at the current time.
func (s *Sim) Sample() (Sample, error) {
	now := s.opts.Now()
	// Seconds since the Unix epoch make every reading a pure function of
	// the clock.
	t := float64(now.UnixNano()) / 1e9

	s.mu.Lock()
	attached := make(map[int]attachment, len(s.attached))
	for pid, a := range s.attached {
		attached[pid] = a
	}
	s.mu.Unlock()
	// Stable order of attached processes, whatever the map does.
	pids := make([]int, 0, len(attached))
	for pid := range attached {
		pids = append(pids, pid)
	}
	sort.Ints(pids)

	out := Sample{Time: now, Backend: s.Name(), Simulated: true, Devices: make([]DeviceSample, s.opts.Count)}
	for i := range out.Devices {
		out.Devices[i] = s.sampleDevice(i, t)
	}
	s.procsMu.Lock()
	defer s.procsMu.Unlock()
	defer s.procs.Prune()
	for _, pid := range pids {
		a := attached[pid]
		if a.device < 0 || a.device >= len(out.Devices) {
			continue
		}
		info, err := s.procs.Lookup(pid)
		if err != nil {
			continue // exited (or never was): not on the GPU any more
		}
		d := &out.Devices[a.device]
		p := Process{PID: pid, MemoryUsed: a.memory, SM: a.sm}
		p.withInfo(info)
		d.Processes = append(d.Processes, p)
		d.Util = min(d.Util+a.sm, 100)
		d.MemoryUsed = min(d.MemoryUsed+a.memory, d.MemoryTotal)
		d.MemoryFree = d.MemoryTotal - d.MemoryUsed
	}
	return out, nil
}

// wave is a smooth value in [-1, 1] with the given period in seconds.
func wave(t, period, phase float64) float64 {
	return math.Sin(2*math.Pi*t/period + phase)
}

func (s *Sim) sampleDevice(i int, t float64) DeviceSample {
	dev := s.device(i)
	phase := float64(i) * 1.7
	workload := simWorkloads[i%len(simWorkloads)]

	ds := DeviceSample{Device: dev}
	busy := 0.0
	for k, fp := range workload {
		share := fp.share * (1 + 0.05*wave(t, 300+float64(k)*70, phase+float64(k)))
		mem := uint64(share * float64(dev.MemoryTotal))
		sm := clampPercent(45 + 35*wave(t, 61, phase+float64(k)) + 15*wave(t, 13, 2*phase))
		busy += float64(sm)
		pid := simPIDBase + i*16 + k
		ds.Processes = append(ds.Processes, Process{
			PID: pid, UID: fp.uid, User: fp.user, Command: fp.command,
			MemoryUsed: mem, SM: sm,
			// A fixed start keeps (pid, start) naming one process.
			StartTime: uint64(1000 + pid), MadeUp: true,
		})
		ds.MemoryUsed += mem
	}
	ds.MemoryUsed = min(ds.MemoryUsed, dev.MemoryTotal)
	ds.MemoryFree = dev.MemoryTotal - ds.MemoryUsed

	util := clampPercent(busy + 2 + 2*wave(t, 17, phase))
	ds.Util = util
	ds.MemUtil = clampPercent(float64(util)*0.6 + 5*wave(t, 29, phase))
	ds.TempC = int(math.Round(32 + 0.45*float64(util) + 2*wave(t, 600, phase)))
	ds.PowerW = math.Round((75+6.25*float64(util)+10*wave(t, 7, phase))*10) / 10
	return ds
}

func clampPercent(v float64) int {
	return int(math.Round(math.Max(0, math.Min(100, v))))
}

// SimOptionsFromEnv reads CHRONOS_SIM_GPUS (device count, 1..64) and
// CHRONOS_SIM_MEMORY (memory per device, e.g. "80GiB").
func SimOptionsFromEnv() (SimOptions, error) {
	var opts SimOptions
	if v := strings.TrimSpace(os.Getenv("CHRONOS_SIM_GPUS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return SimOptions{}, fmt.Errorf("CHRONOS_SIM_GPUS=%q: want a whole number of GPUs from 1 to 64", v)
		}
		opts.Count = n
	}
	if v := strings.TrimSpace(os.Getenv("CHRONOS_SIM_MEMORY")); v != "" {
		size, err := ParseSize(v)
		if err != nil {
			return SimOptions{}, fmt.Errorf("CHRONOS_SIM_MEMORY: %w", err)
		}
		if size < 1<<20 {
			return SimOptions{}, fmt.Errorf("CHRONOS_SIM_MEMORY=%q: a GPU needs at least 1MiB", v)
		}
		opts.Memory = size
	}
	return opts, nil
}

// sizeUnits are the suffixes ParseSize knows, in bytes. Decimal units are
// powers of 1000, binary ones powers of 1024, as nvidia-smi and vendors use
// them.
var sizeUnits = map[string]float64{
	"b":  1,
	"kb": 1e3, "kib": 1 << 10,
	"mb": 1e6, "mib": 1 << 20,
	"gb": 1e9, "gib": 1 << 30,
	"tb": 1e12, "tib": 1 << 40,
}

// ParseSize reads a byte size such as "80GiB", "141 GiB", "1.5GB", "512MiB"
// or a plain number of bytes.
func ParseSize(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	i := strings.IndexFunc(in, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := in, ""
	if i >= 0 {
		num, unit = in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	}
	mult, ok := sizeUnits[unit]
	if unit == "" {
		mult, ok = 1, true
	}
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, MiB, GiB, TiB, MB, GB or TB)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: not a number followed by a unit, like 80GiB", s)
	}
	bytes := v * mult
	// 2^63 leaves room to spare; no GPU comes near it.
	if bytes > 1<<63 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return uint64(bytes), nil
}
