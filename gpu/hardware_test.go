package gpu

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	pidText := os.Getenv("CHRONOS_HARDWARE_PID")
	if pidText == "" {
		t.Skip("set CHRONOS_HARDWARE_PID to a running CUDA process")
	}
	pid, err := strconv.Atoi(pidText)
	require.NoError(t, err)
	n, err := OpenNVML()
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close()) }()

	maxSM := 0
	for range 10 {
		s, err := n.Sample()
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
				t.Logf("device %d: util %d%%, %d/%d MiB, %d C, %.1f W, notes %v; pid %d %q SM %d%% mem %d MiB",
					d.Index, d.Util, d.MemoryUsed>>20, d.MemoryTotal>>20, d.TempC, d.PowerW, d.Notes,
					p.PID, p.Command, p.SM, p.MemoryUsed>>20)
			}
		}
		require.True(t, found, "pid %d not on any GPU", pid)
		time.Sleep(500 * time.Millisecond)
	}
	require.Positive(t, maxSM, "a busy process should show SM use in some sample")
}

// TestHardwareMPS: an MPS control daemon serves CHRONOS_HARDWARE_MPS_PIPE.
func TestHardwareMPS(t *testing.T) {
	pipe := os.Getenv("CHRONOS_HARDWARE_MPS_PIPE")
	if pipe == "" {
		t.Skip("set CHRONOS_HARDWARE_MPS_PIPE to a running MPS daemon's pipe directory")
	}
	start := time.Now()
	m := DetectMPS(pipe)
	t.Logf("%+v (mode %s) in %v", m, m.Mode(), time.Since(start))
	require.True(t, m.Running)
	require.Equal(t, Concurrent, m.Mode())
	require.True(t, m.DefaultActiveThreadPercentage != "" || m.Detail != "")
}
