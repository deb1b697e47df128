package core

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// Intel's drivers do not report their GPUs' memory size, so a booking there
// holds a share of no known bytes. Its processes count as booked, never as
// over budget: no policy may stop a job for a limit nobody could state.
func TestBookingOnGPUOfUnknownSizeIsNeverOverBudget(t *testing.T) {
	t.Setenv(gpu.DRMRootEnv, filepath.Join("..", "gpu", "testdata", "drm", "multi"))
	root := domain.Identity{UID: 0, User: "root"}
	c := NewClient(Options{Ledger: bolt.New(filepath.Join(t.TempDir(), "chronos.db")), Devices: BackendDevices(string(gpu.KindDRM)), As: &root})
	// GPU 0 is the integrated GPU on i915, where the fixture's Xorg (root)
	// holds 6 MiB.
	p, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.Zero(t, p.Bytes)
	_, err = c.Create(Request{Device: 0, Memory: human.Bytes(1 << 30), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrInput, "a size cannot be booked on a GPU of unknown size")

	b, _, err := c.OpenGPUs(string(gpu.KindDRM))
	require.NoError(t, err)
	defer b.Close()
	st, err := c.Stats(b, procfs.MPS{})
	require.NoError(t, err)
	found := false
	for _, a := range st.Processes {
		if a.PID == 400 && a.Device == 0 {
			found = true
			require.Equal(t, admission.Booked, a.Verdict)
			require.Equal(t, p.ID, a.Partition)
		}
	}
	require.True(t, found, "%+v", st.Processes)
}

// stats --json names the booking a process counts against "booking" (and
// what its environment claims "booking_id"), keeping the old names beside
// them for scripts written before.
func TestAttributionJSONSaysBooking(t *testing.T) {
	t.Parallel()
	now := time.Now()
	parts := []domain.Partition{{ID: 3, UID: 1000, Device: 0, State: domain.Live, Created: now, Expires: now.Add(time.Hour)}}
	s := gpu.Sample{Devices: []gpu.DeviceSample{{Device: gpu.Device{Index: 0},
		Processes: []gpu.Process{{PID: 42, UID: 1000, User: "alice", Command: "python", SM: procfs.NA, PartitionID: "3"}}}}}
	out, err := json.Marshal(admission.Attribute(s, parts, now))
	require.NoError(t, err)
	var got []map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, []map[string]any{{"pid": 42.0, "uid": 1000.0, "user": "alice", "command": "python", "memory_used_bytes": 0.0,
		"sm_percent": float64(procfs.NA), "device": 0.0, "verdict": "booked",
		"booking": 3.0, "partition": 3.0, "booking_id": "3", "partition_id": "3"}}, got)
}
