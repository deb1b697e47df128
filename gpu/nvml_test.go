package gpu

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/gpu/procfs"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

const gib = uint64(1) << 30

// fakeGPU describes what a mocked device answers.
type fakeGPU struct {
	uuid, name   string
	total, used  uint64
	mig          bool
	migRet       nvml.Return // GetMigMode fails with this unless SUCCESS (the zero value)
	util         nvml.Utilization
	utilRet      nvml.Return
	temp         uint32
	tempRet      nvml.Return
	powerMW      uint32
	powerRet     nvml.Return
	procs        []nvml.ProcessInfo
	procsRet     nvml.Return
	smSamples    []nvml.ProcessUtilizationSample
	smRet        nvml.Return
	smTimestamps []uint64 // lastSeen values asked for
	pci          nvml.PciInfo
	nvlinks      []fakeNVLink            // by link number; nil: no NVLink (NOT_SUPPORTED)
	ancestors    []nvml.GpuTopologyLevel // by the other GPU's index; nil: NOT_SUPPORTED
}

// fakeNVLink is one NVLink of a mocked device: to an NVSwitch, or to the
// device at remote.
type fakeNVLink struct {
	remote   nvml.PciInfo
	toSwitch bool
	down     bool
}

// device builds the mock; every method Sample and NewNVML call is set.
func (g *fakeGPU) device() *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return g.uuid, nvml.SUCCESS },
		GetNameFunc: func() (string, nvml.Return) { return g.name, nvml.SUCCESS },
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: g.total, Used: g.used, Free: g.total - g.used}, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.migRet != nvml.SUCCESS {
				return 0, 0, g.migRet
			}
			if g.mig {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return g.util, g.utilRet },
		GetTemperatureFunc: func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
			if s != nvml.TEMPERATURE_GPU {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return g.temp, g.tempRet
		},
		GetPowerUsageFunc:              func() (uint32, nvml.Return) { return g.powerMW, g.powerRet },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return g.procs, g.procsRet },
		GetProcessUtilizationFunc: func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			g.smTimestamps = append(g.smTimestamps, lastSeen)
			return g.smSamples, g.smRet
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return g.pci, nvml.SUCCESS },
		GetNvLinkStateFunc: func(link int) (nvml.EnableState, nvml.Return) {
			switch {
			case g.nvlinks == nil:
				return 0, nvml.ERROR_NOT_SUPPORTED
			case link >= len(g.nvlinks):
				return 0, nvml.ERROR_INVALID_ARGUMENT
			case g.nvlinks[link].down:
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		},
		GetNvLinkRemoteDeviceTypeFunc: func(link int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			if link >= len(g.nvlinks) {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if g.nvlinks[link].toSwitch {
				return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
			}
			return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
		},
		GetNvLinkRemotePciInfoFunc: func(link int) (nvml.PciInfo, nvml.Return) {
			if link >= len(g.nvlinks) {
				return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
			}
			return g.nvlinks[link].remote, nvml.SUCCESS
		},
	}
}

// commonAncestor answers GetTopologyCommonAncestor from g.ancestors, finding
// the other device among devices.
func (g *fakeGPU) commonAncestor(devices []*mock.Device) func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	return func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		j := slices.Index(devices, other.(*mock.Device))
		if g.ancestors == nil || j < 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return g.ancestors[j], nvml.SUCCESS
	}
}

// fakeLibrary is a mocked NVML holding gpus; shutdowns counts Shutdown calls.
func fakeLibrary(gpus []*fakeGPU, shutdowns *int) *mock.Interface {
	devices := make([]*mock.Device, len(gpus))
	for i, g := range gpus {
		devices[i] = g.device()
	}
	for i, g := range gpus {
		devices[i].GetTopologyCommonAncestorFunc = g.commonAncestor(devices)
	}
	return &mock.Interface{
		InitFunc: func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return {
			*shutdowns++
			return nvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devices[i], nvml.SUCCESS
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "580.65.06", nvml.SUCCESS },
	}
}

// h200 is a healthy device with everything supported.
func h200(i int) *fakeGPU {
	return &fakeGPU{
		uuid: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), name: "NVIDIA H200",
		total: 141 * gib, used: 10 * gib,
		util: nvml.Utilization{Gpu: 87, Memory: 40}, temp: 61, powerMW: 412_345,
		smRet: nvml.ERROR_NOT_FOUND,
		pci:   nvml.PciInfo{Bus: uint32(0x10 + 0x10*i)},
	}
}

func openFake(t *testing.T, gpus ...*fakeGPU) (*NVML, *int) {
	t.Helper()
	shutdowns := new(int)
	n, err := NewNVML(fakeLibrary(gpus, shutdowns))
	require.NoError(t, err)
	n.SetProcessSMInterval(0)
	return n, shutdowns
}

func TestNVMLInitFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ret  nvml.Return
		want string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "NVML: libnvidia-ml.so.1 not found — is the NVIDIA driver installed?"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "NVML: the NVIDIA kernel driver is not loaded"},
		{nvml.ERROR_UNKNOWN, "NVML: init: ERROR_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.ret.Error(), func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tt.ret }}
			n, err := NewNVML(lib)
			require.Nil(t, n)
			require.EqualError(t, err, tt.want)
			require.ErrorIs(t, err, tt.ret)
		})
	}
}

func TestNVMLEnumerateFailureShutsDown(t *testing.T) {
	t.Parallel()
	shutdowns := 0
	lib := fakeLibrary(nil, &shutdowns)
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	_, err := NewNVML(lib)
	require.ErrorIs(t, err, nvml.ERROR_GPU_IS_LOST)
	require.Contains(t, err.Error(), "count devices")
	require.Equal(t, 1, shutdowns, "a failed open must not leave NVML initialised")
}

func TestNVMLInventoryAndHealthySample(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	g0, g1 := h200(0), h200(1)
	g1.migRet = nvml.ERROR_NOT_SUPPORTED // a GPU without MIG at all
	g0.procs = []nvml.ProcessInfo{{Pid: uint32(pid), UsedGpuMemory: 3 * gib}}
	g0.smRet = nvml.SUCCESS
	g0.smSamples = []nvml.ProcessUtilizationSample{
		{Pid: uint32(pid), TimeStamp: 100, SmUtil: 20},
		{Pid: uint32(pid), TimeStamp: 300, SmUtil: 75}, // newest wins
		{Pid: uint32(pid), TimeStamp: 200, SmUtil: 30},
	}
	n, shutdowns := openFake(t, g0, g1)

	require.Equal(t, "nvml", n.Name())
	require.False(t, n.Simulated())
	require.Equal(t, "580.65.06", n.DriverVersion())
	devs, err := n.Devices()
	require.NoError(t, err)
	require.Equal(t, []Device{
		{Index: 0, UUID: g0.uuid, Name: "NVIDIA H200", MemoryTotal: 141 * gib},
		{Index: 1, UUID: g1.uuid, Name: "NVIDIA H200", MemoryTotal: 141 * gib},
	}, devs)

	s, err := n.Sample()
	require.NoError(t, err)
	require.Equal(t, "nvml", s.Backend)
	require.False(t, s.Simulated)
	require.False(t, s.Time.IsZero())
	require.Len(t, s.Devices, 2)
	d := s.Devices[0]
	require.Equal(t, devs[0], d.Device)
	require.Equal(t, 10*gib, d.MemoryUsed)
	require.Equal(t, 131*gib, d.MemoryFree)
	require.Equal(t, 87, d.Util)
	require.Equal(t, 40, d.MemUtil)
	require.Equal(t, 61, d.TempC)
	require.InDelta(t, 412.345, d.PowerW, 1e-9)
	require.Empty(t, d.Notes)
	require.Len(t, d.Processes, 1)
	p := d.Processes[0]
	require.Equal(t, pid, p.PID)
	require.Equal(t, os.Getuid(), p.UID)
	require.NotEmpty(t, p.User)
	require.NotEmpty(t, p.Command)
	require.NotZero(t, p.StartTime)
	require.Equal(t, 3*gib, p.MemoryUsed)
	require.Equal(t, 75, p.SM)
	require.Empty(t, s.Devices[1].Processes)

	// The next query asks only for samples newer than the newest seen.
	_, err = n.Sample()
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 300}, g0.smTimestamps)

	require.NoError(t, n.Close())
	require.NoError(t, n.Close())
	require.Equal(t, 1, *shutdowns, "Shutdown exactly once")
	_, err = n.Sample()
	require.ErrorIs(t, err, ErrClosed)
}

func TestNVMLUnsupportedReadings(t *testing.T) {
	t.Parallel()
	g := h200(0)
	g.tempRet = nvml.ERROR_NOT_SUPPORTED
	g.powerRet = nvml.ERROR_NOT_SUPPORTED
	g.utilRet = nvml.ERROR_UNKNOWN
	n, _ := openFake(t, g)

	s, err := n.Sample()
	require.NoError(t, err)
	d := s.Devices[0]
	require.Equal(t, procfs.NA, d.TempC)
	require.Less(t, d.PowerW, 0.0)
	require.Equal(t, procfs.NA, d.Util)
	require.Equal(t, procfs.NA, d.MemUtil)
	require.Equal(t, 10*gib, d.MemoryUsed, "other readings still arrive")
	require.ElementsMatch(t, []string{
		"temperature: not supported",
		"power: not supported",
		"utilization: ERROR_UNKNOWN",
	}, d.Notes)
}

func TestNVMLProcessUtilization(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	tests := []struct {
		name     string
		samples  []nvml.ProcessUtilizationSample
		ret      nvml.Return
		wantSM   int
		wantNote string
	}{
		{name: "no new samples means idle", ret: nvml.ERROR_NOT_FOUND, wantSM: 0},
		{name: "zero samples from go-nvml sizing call", samples: []nvml.ProcessUtilizationSample{}, ret: nvml.ERROR_INSUFFICIENT_SIZE, wantSM: 0},
		{name: "only zero-pid samples", samples: []nvml.ProcessUtilizationSample{{Pid: 0, TimeStamp: 5, SmUtil: 99}}, ret: nvml.SUCCESS, wantSM: 0},
		{name: "sample for the pid", samples: []nvml.ProcessUtilizationSample{{Pid: 0, TimeStamp: 5, SmUtil: 99}, {Pid: uint32(pid), TimeStamp: 6, SmUtil: 42}}, ret: nvml.SUCCESS, wantSM: 42},
		{name: "out-of-range percent is capped", samples: []nvml.ProcessUtilizationSample{{Pid: uint32(pid), TimeStamp: 6, SmUtil: 250}}, ret: nvml.SUCCESS, wantSM: 100},
		{name: "not supported", ret: nvml.ERROR_NOT_SUPPORTED, wantSM: procfs.NA, wantNote: "per-process utilization: not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := h200(0)
			g.procs = []nvml.ProcessInfo{{Pid: uint32(pid), UsedGpuMemory: gib}}
			g.smSamples, g.smRet = tt.samples, tt.ret
			n, _ := openFake(t, g)
			s, err := n.Sample()
			require.NoError(t, err)
			d := s.Devices[0]
			require.Len(t, d.Processes, 1)
			require.Equal(t, tt.wantSM, d.Processes[0].SM)
			if tt.wantNote == "" {
				require.Empty(t, d.Notes)
			} else {
				require.Equal(t, []string{tt.wantNote}, d.Notes)
			}
		})
	}
}

func TestNVMLProcessList(t *testing.T) {
	t.Parallel()
	self := os.Getpid()
	gone := coretest.ExitedPID(t)
	g := h200(0)
	g.procs = []nvml.ProcessInfo{
		{Pid: 0, UsedGpuMemory: 9 * gib}, // NVML's placeholder entries
		{Pid: uint32(self), UsedGpuMemory: 1 * gib, GpuInstanceId: 1},
		{Pid: uint32(gone), UsedGpuMemory: 2 * gib},
		{Pid: uint32(self), UsedGpuMemory: 1 * gib, GpuInstanceId: 2}, // same process, second instance
	}
	n, _ := openFake(t, g)

	s, err := n.Sample()
	require.NoError(t, err)
	procs := s.Devices[0].Processes
	require.Len(t, procs, 2, "zero pid skipped, duplicate merged")

	require.Equal(t, self, procs[0].PID)
	require.Equal(t, 2*gib, procs[0].MemoryUsed)
	require.Equal(t, os.Getuid(), procs[0].UID)

	// Exited between NVML's listing and /proc: still shown, owner unknown.
	require.Equal(t, Process{PID: gone, UID: procfs.NA, MemoryUsed: 2 * gib, SM: 0}, procs[1])
}

func TestNVMLProcessMemoryNotAvailable(t *testing.T) {
	t.Parallel()
	g := h200(0)
	g.procs = []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: ^uint64(0)}}
	n, _ := openFake(t, g)
	s, err := n.Sample()
	require.NoError(t, err)
	require.Zero(t, s.Devices[0].Processes[0].MemoryUsed)
	require.Equal(t, []string{"process memory: not available"}, s.Devices[0].Notes)
}

func TestNVMLProcessListFailure(t *testing.T) {
	t.Parallel()
	g := h200(0)
	g.procsRet = nvml.ERROR_NO_PERMISSION
	n, _ := openFake(t, g)
	s, err := n.Sample()
	require.NoError(t, err)
	require.Empty(t, s.Devices[0].Processes)
	require.Equal(t, []string{"processes: ERROR_NO_PERMISSION"}, s.Devices[0].Notes)
}

func TestNVMLMIG(t *testing.T) {
	t.Parallel()
	g := h200(0)
	g.mig = true
	g.utilRet = nvml.ERROR_NOT_SUPPORTED
	g.smRet = nvml.ERROR_NOT_SUPPORTED
	g.procs = []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: gib}}
	n, _ := openFake(t, g)

	devs, err := n.Devices()
	require.NoError(t, err)
	require.True(t, devs[0].MIG)

	s, err := n.Sample()
	require.NoError(t, err)
	d := s.Devices[0]
	require.True(t, d.MIG)
	require.Equal(t, procfs.NA, d.Util)
	require.Equal(t, procfs.NA, d.MemUtil)
	require.Equal(t, procfs.NA, d.Processes[0].SM)
	require.Equal(t, []string{
		"utilization: not supported with MIG enabled",
		"per-process utilization: not supported with MIG enabled",
	}, d.Notes)
}

func TestNVMLMemoryInfoFallback(t *testing.T) {
	t.Parallel()
	g := h200(0)
	shutdowns := 0
	lib := fakeLibrary([]*fakeGPU{g}, &shutdowns)
	dev, _ := lib.DeviceGetHandleByIndex(0)
	md := dev.(*mock.Device)
	md.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_FUNCTION_NOT_FOUND }
	md.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{Total: 80 * gib, Used: 5 * gib, Free: 75 * gib}, nvml.SUCCESS
	}
	n, err := NewNVML(lib)
	require.NoError(t, err)
	s, err := n.Sample()
	require.NoError(t, err)
	require.Equal(t, 80*gib, s.Devices[0].MemoryTotal)
	require.Equal(t, 5*gib, s.Devices[0].MemoryUsed)
}

func TestNVMLProcessSMInterval(t *testing.T) {
	t.Parallel()
	pid := uint32(os.Getpid())
	g := h200(0)
	g.procs = []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: gib}}
	g.smRet = nvml.SUCCESS
	g.smSamples = []nvml.ProcessUtilizationSample{{Pid: pid, TimeStamp: 10, SmUtil: 60}}
	n, _ := openFake(t, g)
	now := time.Unix(1_700_000_000, 0)
	n.now = func() time.Time { return now }
	n.SetProcessSMInterval(5 * time.Second)

	sm := func() int {
		s, err := n.Sample()
		require.NoError(t, err)
		require.Equal(t, now, s.Time)
		return s.Devices[0].Processes[0].SM
	}
	require.Equal(t, 60, sm())
	g.smSamples = []nvml.ProcessUtilizationSample{{Pid: pid, TimeStamp: 20, SmUtil: 90}}
	now = now.Add(4 * time.Second)
	require.Equal(t, 60, sm(), "within the interval the last figure stands")
	require.Len(t, g.smTimestamps, 1)
	now = now.Add(time.Second)
	require.Equal(t, 90, sm())
	require.Equal(t, []uint64{0, 10}, g.smTimestamps)
	now = now.Add(-time.Hour) // the clock stepped back: ask again
	require.Equal(t, 90, sm())
	require.Len(t, g.smTimestamps, 3)
}
