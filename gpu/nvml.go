package gpu

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// ErrClosed is returned by a backend used after Close.
var ErrClosed = errors.New("GPU backend is closed")

// NVML reads real NVIDIA GPUs through the driver's NVML library.
type NVML struct {
	lib     nvml.Interface
	procs   *procfs.ProcCache
	driver  string
	devices []nvmlDevice
	// topology is read once at start: links do not change while it runs.
	topology Topology

	now func() time.Time
	// smInterval spaces out GetProcessUtilization, which costs ~2 ms a call
	// on an H200 (driver 580) against ~5 µs for the other readings.
	smInterval time.Duration

	mu     sync.Mutex // guards the per-device state, procs, smInterval and closed
	closed bool
}

// DefaultProcessSMInterval is how often per-process SM use is refreshed.
const DefaultProcessSMInterval = 5 * time.Second

// nvmlDevice is one enumerated GPU and the state kept between samples.
type nvmlDevice struct {
	Device
	handle nvml.Device
	// lastSeen is the newest per-process utilization timestamp seen, so the
	// next query returns only newer samples.
	lastSeen uint64
	// sm and smNote are the last per-process utilization answer, reused
	// until smAt is smInterval old.
	sm     map[int]int
	smNote string
	smAt   time.Time
}

// nvmlError is an NVML failure told in a person's words; errors.Is still
// matches the nvml.Return underneath.
type nvmlError struct {
	msg string
	ret nvml.Return
}

func (e *nvmlError) Error() string { return e.msg }

func (e *nvmlError) Unwrap() error { return e.ret }

// nvmlFailure describes a failed NVML call.
func nvmlFailure(op string, ret nvml.Return) error {
	var msg string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		msg = "NVML: libnvidia-ml.so.1 not found — is the NVIDIA driver installed?"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		msg = "NVML: the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		msg = fmt.Sprintf("NVML: %s: no permission to use the GPU device files", op)
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		msg = "NVML: the NVIDIA library and kernel driver versions differ — reboot or reload the driver"
	default:
		msg = fmt.Sprintf("NVML: %s: %s", op, ret.Error())
	}
	return &nvmlError{msg: msg, ret: ret}
}

// OpenNVML loads the system's NVML library and enumerates its GPUs.
func OpenNVML() (*NVML, error) {
	return NewNVML(nvml.New())
}

// NewNVML initialises lib and enumerates its GPUs once. Tests pass a mock.
func NewNVML(lib nvml.Interface) (*NVML, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, nvmlFailure("init", ret)
	}
	n := &NVML{lib: lib, procs: procfs.NewProcCache(procfs.HostProc), now: clock.System().Now, smInterval: DefaultProcessSMInterval}
	if err := n.enumerate(); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	n.topology = nvmlTopology(n.devices)
	// The driver version is informational; an old driver without it is fine.
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		n.driver = v
	}
	return n, nil
}

func (n *NVML) enumerate() error {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nvmlFailure("count devices", ret)
	}
	for i := range count {
		h, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nvmlFailure(fmt.Sprintf("device %d", i), ret)
		}
		uuid, ret := h.GetUUID()
		if ret != nvml.SUCCESS {
			return nvmlFailure(fmt.Sprintf("device %d UUID", i), ret)
		}
		name, ret := h.GetName()
		if ret != nvml.SUCCESS {
			return nvmlFailure(fmt.Sprintf("device %d name", i), ret)
		}
		mem, ret := memoryInfo(h)
		if ret != nvml.SUCCESS {
			return nvmlFailure(fmt.Sprintf("device %d memory", i), ret)
		}
		n.devices = append(n.devices, nvmlDevice{
			Device: Device{Index: i, UUID: uuid, Name: name, MemoryTotal: mem.Total, MIG: migEnabled(h)},
			handle: h,
		})
	}
	return nil
}

// memoryInfo prefers GetMemoryInfo_v2, whose Used leaves out memory the
// driver reserves; drivers older than 510 lack it.
func memoryInfo(h nvml.Device) (nvml.Memory_v2, nvml.Return) {
	mem, ret := h.GetMemoryInfo_v2()
	if ret != nvml.ERROR_FUNCTION_NOT_FOUND && ret != nvml.ERROR_NOT_SUPPORTED {
		return mem, ret
	}
	old, ret := h.GetMemoryInfo()
	return nvml.Memory_v2{Total: old.Total, Free: old.Free, Used: old.Used}, ret
}

// migEnabled reports the current MIG mode; GPUs without MIG answer
// NOT_SUPPORTED, which means off.
func migEnabled(h nvml.Device) bool {
	current, _, ret := h.GetMigMode()
	return ret == nvml.SUCCESS && current == nvml.DEVICE_MIG_ENABLE
}

// Name is "nvml".
func (n *NVML) Name() string { return "nvml" }

// Simulated is false: these are real GPUs.
func (n *NVML) Simulated() bool { return false }

// DriverVersion is the NVIDIA driver version, "" when NVML did not say.
func (n *NVML) DriverVersion() string { return n.driver }

// Devices lists the GPUs found when the backend was opened.
func (n *NVML) Devices() ([]Device, error) {
	return inventory(n.devices), nil
}

// Topology is how the GPUs are connected, as read when the backend opened.
func (n *NVML) Topology() Topology { return n.topology.clone() }

// Sample reads every device. Readings a device does not support become NA
// with a note; only a closed backend is an error.
func (n *NVML) Sample() (Sample, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return Sample{}, ErrClosed
	}
	s := Sample{Time: n.now(), Backend: n.Name(), Devices: make([]DeviceSample, len(n.devices))}
	for i := range n.devices {
		s.Devices[i] = n.sampleDevice(&n.devices[i], s.Time)
	}
	n.procs.Prune()
	return s, nil
}

// notSupported marks the NVML answers that mean "this GPU cannot tell".
func notSupported(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND
}

// problem words a failed reading for DeviceSample.Notes.
func problem(what string, ret nvml.Return) string {
	if notSupported(ret) {
		return what + ": not supported"
	}
	return what + ": " + ret.Error()
}

// SetProcessSMInterval sets how often per-process SM use is asked of the
// driver (0: every sample). Between refreshes samples repeat the last
// figures; a process new since then shows 0.
func (n *NVML) SetProcessSMInterval(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.smInterval = d
}

func (n *NVML) sampleDevice(d *nvmlDevice, now time.Time) DeviceSample {
	ds := DeviceSample{Device: d.Device, Util: procfs.NA, MemUtil: procfs.NA, TempC: procfs.NA, PowerW: procfs.NA}
	h := d.handle

	if mem, ret := memoryInfo(h); ret == nvml.SUCCESS {
		ds.MemoryUsed, ds.MemoryFree = mem.Used, mem.Free
	} else {
		ds.Notes = append(ds.Notes, problem("memory", ret))
	}

	switch u, ret := h.GetUtilizationRates(); {
	case ret == nvml.SUCCESS:
		ds.Util, ds.MemUtil = int(u.Gpu), int(u.Memory)
	case d.MIG && notSupported(ret):
		ds.Notes = append(ds.Notes, "utilization: not supported with MIG enabled")
	default:
		ds.Notes = append(ds.Notes, problem("utilization", ret))
	}

	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		ds.TempC = int(t)
	} else {
		ds.Notes = append(ds.Notes, problem("temperature", ret))
	}

	if mw, ret := h.GetPowerUsage(); ret == nvml.SUCCESS {
		ds.PowerW = float64(mw) / 1000
	} else {
		ds.Notes = append(ds.Notes, problem("power", ret))
	}

	ds.Processes, ds.Notes = n.processes(d, now, ds.Notes)
	return ds
}

// memoryNotAvailable is NVML_VALUE_NOT_AVAILABLE, which UsedGpuMemory holds
// when the driver cannot attribute memory (e.g. without permission).
const memoryNotAvailable = ^uint64(0)

func (n *NVML) processes(d *nvmlDevice, now time.Time, notes []string) ([]Process, []string) {
	infos, ret := d.handle.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, append(notes, problem("processes", ret))
	}
	if len(infos) == 0 {
		return nil, notes
	}

	if d.smAt.IsZero() || now.Sub(d.smAt) >= n.smInterval || now.Before(d.smAt) {
		d.sm, d.smNote = d.processSM()
		d.smAt = now
	}
	sm := d.sm
	if d.smNote != "" {
		notes = append(notes, d.smNote)
	}

	// A process can be listed more than once (once per MIG instance it
	// uses); show it once with its memory summed.
	var procs []Process
	at := map[int]int{}
	memoryUnknown := false
	for _, info := range infos {
		if info.Pid == 0 {
			continue
		}
		pid := int(info.Pid)
		used := info.UsedGpuMemory
		if used == memoryNotAvailable {
			used, memoryUnknown = 0, true
		}
		if i, ok := at[pid]; ok {
			procs[i].MemoryUsed += used
			continue
		}
		p := Process{PID: pid, UID: procfs.NA, MemoryUsed: used, SM: procfs.NA}
		if sm != nil {
			p.SM = sm[pid] // absent: no new samples, so idle
		}
		// A process that exited since NVML listed it stays listed (its
		// memory is still counted by the driver), owner unknown.
		if pi, err := n.procs.Lookup(pid); err == nil {
			p.withInfo(pi)
		}
		at[pid] = len(procs)
		procs = append(procs, p)
	}
	if memoryUnknown {
		notes = append(notes, "process memory: not available")
	}
	return procs, notes
}

// processSM returns SM percent by pid since the last query. A nil map with
// a note means per-process utilization is not available at all.
func (d *nvmlDevice) processSM() (map[int]int, string) {
	samples, ret := d.handle.GetProcessUtilization(d.lastSeen)
	switch {
	case ret == nvml.ERROR_NOT_FOUND:
		// No samples newer than lastSeen: every process was idle.
		return map[int]int{}, ""
	case ret == nvml.ERROR_INSUFFICIENT_SIZE && len(samples) == 0:
		// go-nvml passes on the sizing call's answer when there are zero
		// samples; that is idle too.
		return map[int]int{}, ""
	case ret != nvml.SUCCESS:
		if d.MIG && notSupported(ret) {
			return nil, "per-process utilization: not supported with MIG enabled"
		}
		return nil, problem("per-process utilization", ret)
	}
	sm := make(map[int]int, len(samples))
	newest := make(map[int]uint64, len(samples))
	for _, s := range samples {
		if s.Pid == 0 {
			continue
		}
		pid := int(s.Pid)
		if s.TimeStamp > d.lastSeen {
			d.lastSeen = s.TimeStamp
		}
		if ts, ok := newest[pid]; ok && ts > s.TimeStamp {
			continue
		}
		newest[pid] = s.TimeStamp
		sm[pid] = int(min(s.SmUtil, 100))
	}
	return sm, ""
}

// Close shuts NVML down; later calls do nothing.
func (n *NVML) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return nvmlFailure("shutdown", ret)
	}
	return nil
}
