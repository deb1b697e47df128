package gpu

import (
	"os"
	"testing"

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
		child := uint32(startSleep(b).Process.Pid)
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
		if len(s.Devices[7].Processes) != 2 || s.Devices[7].Processes[1].UID == NA {
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
		if _, err := ReadProc(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDetectMPSAbsent(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if m := DetectMPS(dir); m.Running {
			b.Fatalf("MPS running in %s", dir)
		}
	}
}
