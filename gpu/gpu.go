// Package gpu reads GPUs: the device inventory, live samples of load and
// memory, the compute processes on each device, who owns them and the
// containers they run in (read from /proc through gpu/procfs). Three backends implement Backend: NVML (NVIDIA
// GPUs), DRM (AMD and Intel GPUs, through the kernel's sysfs and fdinfo)
// and a simulated one for machines without a GPU, demos and tests.
package gpu

import (
	"time"

	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Device is one GPU as the inventory knows it. Devices are kept by UUID; the
// index is what people type.
type Device struct {
	Index       int    `json:"index"`
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
	MIG         bool   `json:"mig"`
}

// inventory lists the Device part of a backend's per-device state, which
// embeds it.
func inventory[T interface{ device() Device }](devs []T) []Device {
	out := make([]Device, len(devs))
	for i, d := range devs {
		out[i] = d.device()
	}
	return out
}

func (d Device) device() Device { return d }

// Process is one compute process on a device. PID is the host's pid, also
// for a process inside a container.
type Process struct {
	PID int `json:"pid"`
	// UID is the owner a person knows: the real uid, or for a process in a
	// rootless container the user whose namespace it is. NA when /proc
	// could not tell.
	UID        int    `json:"uid"`
	User       string `json:"user"` // "" when unknown
	Command    string `json:"command"`
	MemoryUsed uint64 `json:"memory_used_bytes"` // NVML's figure includes the CUDA context
	// SM is the share of the GPU the process kept busy: NVML's SM use, or on
	// DRM GPUs its busiest engine's share of the time. NA when not reported.
	SM          int    `json:"sm_percent"`
	PartitionID string `json:"partition_id,omitempty"`
	// RunPID is the chronos run its environment says wraps it (see
	// procfs.RunEnv); 0: none.
	RunPID int `json:"-"`
	// StartTime is the process start in clock ticks since boot (/proc/PID/stat
	// field 22); with the PID it names one process even when PIDs are reused.
	StartTime uint64 `json:"start_time_ticks,omitempty"`
	// Container is the container it runs in; zero outside one.
	Container procfs.Container `json:"container,omitzero"`
	// MPSServer: an MPS server, which serves every client on the GPU and is
	// nobody's job.
	MPSServer bool `json:"mps_server,omitempty"`
	// MadeUp: a simulated GPU's made-up process, of a made-up user: shown,
	// never accounted (report, metrics) as anyone's use.
	MadeUp bool `json:"made_up,omitempty"`
	// CUDA is what its environment asks of CUDA; private to its owner and
	// root, so never printed.
	CUDA procfs.CUDAEnv `json:"-"`
}

// withInfo fills in what /proc says about the process.
func (p *Process) withInfo(pi procfs.ProcInfo) {
	p.UID, p.User, p.Command = pi.UID, pi.User, pi.Command
	p.PartitionID, p.StartTime, p.Container, p.CUDA = pi.PartitionID, pi.StartTime, pi.Container, pi.CUDA
	p.MPSServer, p.RunPID = pi.MPSServer, pi.RunPID
}

// DeviceSample is one reading of one device.
type DeviceSample struct {
	Device
	MemoryUsed uint64    `json:"memory_used_bytes"`
	MemoryFree uint64    `json:"memory_free_bytes"`
	Util       int       `json:"util_percent"`        // NA when unsupported
	MemUtil    int       `json:"memory_util_percent"` // memory bandwidth; NA when unsupported
	TempC      int       `json:"temperature_c"`       // NA when unsupported
	PowerW     float64   `json:"power_w"`             // negative when unsupported
	Processes  []Process `json:"processes"`
	Notes      []string  `json:"notes,omitempty"` // what the hardware did not report, in words
}

// Sample is one reading of every device.
type Sample struct {
	Time      time.Time      `json:"time"`
	Backend   string         `json:"backend"`
	Simulated bool           `json:"simulated"`
	Devices   []DeviceSample `json:"devices"`
}

// Backend is a source of GPU readings.
type Backend interface {
	// Name is "nvml", "drm" or "simulated".
	Name() string
	Simulated() bool
	Devices() ([]Device, error)
	Sample() (Sample, error)
	Close() error
}
