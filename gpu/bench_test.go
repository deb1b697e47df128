package gpu

import (
	"os"
	"testing"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/gpu/procfs"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func BenchmarkSimSample(b *testing.B) {
	s := NewSim(SimOptions{Count: 8})
	for b.Loop() {
		if _, err := s.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNVMLSampleMock measures our side of an NVML poll: 8 mocked
// devices, each running this process and a child of its own, so the /proc
// reads (one stat per known process per poll) are real. On real hardware
// add NVML's own cost (~20 µs per device on an H200).
func BenchmarkNVMLSampleMock(b *testing.B) {
	self := uint32(os.Getpid())
	gpus := make([]*fakeGPU, 8)
	for i := range gpus {
		child := uint32(coretest.StartSleep(b).Process.Pid)
		g := h200(i)
		g.procs = []nvml.ProcessInfo{{Pid: self, UsedGpuMemory: gib}, {Pid: child, UsedGpuMemory: 20 * gib}}
		g.smRet = nvml.SUCCESS
		g.smSamples = []nvml.ProcessUtilizationSample{{Pid: child, TimeStamp: 1, SmUtil: 50}}
		gpus[i] = g
	}
	shutdowns := 0
	// The mock logs every call it gets; that small cost is in the figure.
	n, err := NewNVML(fakeLibrary(gpus, &shutdowns))
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	for b.Loop() {
		s, err := n.Sample()
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Devices[7].Processes) != 2 || s.Devices[7].Processes[1].UID == procfs.NA {
			b.Fatalf("processes not read: %+v", s.Devices[7].Processes)
		}
		for _, g := range gpus {
			g.smTimestamps = g.smTimestamps[:0]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/8, "ns/device")
}

// BenchmarkReadProc is a full read of one process: what the first poll
// pays for each process new to the GPU.
func BenchmarkReadProc(b *testing.B) {
	pid := os.Getpid()
	for b.Loop() {
		if _, err := procfs.ReadProc(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDetectMPSAbsent(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if m := procfs.DetectMPS(dir); m.Running {
			b.Fatalf("MPS running in %s", dir)
		}
	}
}

// BenchmarkNVMLSampleReal polls the real driver; it is skipped where there
// is none.
func BenchmarkNVMLSampleReal(b *testing.B) {
	n, err := OpenNVML()
	if err != nil {
		b.Skip(err)
	}
	defer n.Close()
	for b.Loop() {
		if _, err := n.Sample(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(n.devices)), "ns/device")
}

// BenchmarkOpenNVMLReal is nvml.Init plus enumeration: the cost a CLI
// command pays to read the inventory.
func BenchmarkOpenNVMLReal(b *testing.B) {
	for b.Loop() {
		n, err := OpenNVML()
		if err != nil {
			b.Skip(err)
		}
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNVMLCallsReal times each NVML call a sample makes, on device 0
// of the real driver; it is skipped where there is none.
func BenchmarkNVMLCallsReal(b *testing.B) {
	n, err := OpenNVML()
	if err != nil {
		b.Skip(err)
	}
	defer n.Close()
	if len(n.devices) == 0 {
		b.Skip("no GPUs")
	}
	h := n.devices[0].handle
	calls := []struct {
		name string
		call func() nvml.Return
	}{
		{"MemoryInfo_v2", func() nvml.Return { _, r := h.GetMemoryInfo_v2(); return r }},
		{"UtilizationRates", func() nvml.Return { _, r := h.GetUtilizationRates(); return r }},
		{"Temperature", func() nvml.Return { _, r := h.GetTemperature(nvml.TEMPERATURE_GPU); return r }},
		{"PowerUsage", func() nvml.Return { _, r := h.GetPowerUsage(); return r }},
		{"ComputeRunningProcesses", func() nvml.Return { _, r := h.GetComputeRunningProcesses(); return r }},
		{"ProcessUtilization", func() nvml.Return { _, r := h.GetProcessUtilization(0); return r }},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if r := c.call(); r != nvml.SUCCESS && r != nvml.ERROR_NOT_FOUND {
					b.Skip(r.Error())
				}
			}
		})
	}
}
