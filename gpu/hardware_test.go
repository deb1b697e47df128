package gpu

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// These run only on a GPU machine, by hand, with a workload started beside
// them; CI skips them. For example, as root:
//
//	CHRONOS_PARTITION_ID=hw1 python3 -c 'import torch; a=torch.randn(8192,8192,device="cuda")
//	while True: a@a' & sleep 10
//	CHRONOS_HARDWARE_PID=$! CHRONOS_HARDWARE_PARTITION=hw1 go test -run Hardware ./gpu/
//	CUDA_MPS_PIPE_DIRECTORY=/tmp/mpsp nvidia-cuda-mps-control -d -M
//	CHRONOS_HARDWARE_MPS_PIPE=/tmp/mpsp go test -run HardwareMPS ./gpu/

// TestHardwareNVMLWorkload: CHRONOS_HARDWARE_PID is a busy CUDA process
// started with CHRONOS_PARTITION_ID=$CHRONOS_HARDWARE_PARTITION.
func TestHardwareNVMLWorkload(t *testing.T) {
	t.Parallel()
	pid := hardwarePID(t, "a running CUDA process")
	n, err := OpenNVML()
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close()) }()
	maxSM := watchProcess(t, n, pid, 500*time.Millisecond)
	require.Positive(t, maxSM, "a busy process should show SM use in some sample")
}

// hardwarePID is $CHRONOS_HARDWARE_PID; the test is skipped without it.
func hardwarePID(t *testing.T, what string) int {
	t.Helper()
	pidText := os.Getenv("CHRONOS_HARDWARE_PID")
	if pidText == "" {
		t.Skip("set CHRONOS_HARDWARE_PID to " + what)
	}
	pid, err := strconv.Atoi(pidText)
	require.NoError(t, err)
	return pid
}

// watchProcess samples b ten times, every, and checks each time that pid
// is on a GPU, as this test's user, with its booking
// ($CHRONOS_HARDWARE_PARTITION), its memory and its start time; it logs each reading and returns the largest SM (or
// busy) share seen.
func watchProcess(t *testing.T, b Backend, pid int, every time.Duration) int {
	t.Helper()
	maxSM := procfs.NA
	for range 10 {
		s, err := b.Sample()
		require.NoError(t, err)
		found := false
		for _, d := range s.Devices {
			for _, p := range d.Processes {
				if p.PID != pid {
					continue
				}
				found = true
				require.Equal(t, os.Getuid(), p.UID)
				require.Equal(t, os.Getenv("CHRONOS_HARDWARE_PARTITION"), p.PartitionID)
				require.NotZero(t, p.MemoryUsed)
				require.NotZero(t, p.StartTime)
				maxSM = max(maxSM, p.SM)
				t.Logf("GPU %d: util %d%%, %d/%d MiB, %d C, %.1f W, notes %v; pid %d %s %q SM/busy %d%% mem %d MiB",
					d.Index, d.Util, d.MemoryUsed>>20, d.MemoryTotal>>20, d.TempC, d.PowerW, d.Notes,
					p.PID, p.User, p.Command, p.SM, p.MemoryUsed>>20)
			}
		}
		require.True(t, found, "pid %d not on any GPU", pid)
		time.Sleep(every)
	}
	return maxSM
}

// TestHardwareMPS: an MPS control daemon serves CHRONOS_HARDWARE_MPS_PIPE.
func TestHardwareMPS(t *testing.T) {
	t.Parallel()
	pipe := os.Getenv("CHRONOS_HARDWARE_MPS_PIPE")
	if pipe == "" {
		t.Skip("set CHRONOS_HARDWARE_MPS_PIPE to a running MPS daemon's pipe directory")
	}
	start := time.Now()
	m := procfs.DetectMPS(pipe)
	t.Logf("%+v (mode %s) in %v", m, m.Mode(), time.Since(start))
	require.True(t, m.Running)
	require.Equal(t, procfs.Concurrent, m.Mode())
	require.True(t, m.DefaultActiveThreadPercentage != "" || m.Detail != "")
}

// TestHardwareDRMWorkload: CHRONOS_HARDWARE_PID is a busy process of this
// test's user on an AMD or Intel GPU (scripts/drm-check.sh starts one),
// started with CHRONOS_BOOKING_ID=$CHRONOS_HARDWARE_PARTITION.
func TestHardwareDRMWorkload(t *testing.T) {
	t.Parallel()
	pid := hardwarePID(t, "a running process on an AMD or Intel GPU")
	d, err := OpenDRM(DRMOptions{})
	require.NoError(t, err)
	defer d.Close()
	devs, _ := d.Devices()
	for _, dev := range devs {
		t.Logf("GPU %d %s %s, %d MiB; visible as %v", dev.Index, dev.UUID, dev.Name, dev.MemoryTotal>>20, VisibleEnv(dev.UUID, dev.Index))
	}
	// ROCm's compute goes through /dev/kfd queues, which the DRM engine
	// counters may not see: a busy share of 0 here is a finding to write
	// down, not a failure.
	t.Logf("largest busy share seen: %d%%", watchProcess(t, d, pid, time.Second))
}
