package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// `chronos stats` gives containers a column only when a process runs in
// one: the name where the runtime's files gave it, else the short id.
func TestWriteStatsContainerColumn(t *testing.T) {
	t.Parallel()
	const id = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	dev := gpu.DeviceSample{Device: gpu.Device{Index: 0, Name: "AMD Instinct MI210", MemoryTotal: 64 << 30}, Util: 87, MemUtil: procfs.NA, TempC: 45, PowerW: 251}
	host := admission.Attribution{Process: gpu.Process{PID: 100, User: "alice", Command: "python train.py", MemoryUsed: 8 << 30, SM: 75}, Device: 0, Partition: 7, Verdict: admission.Booked}
	st := core.Stats{Sample: gpu.Sample{Time: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC), Backend: "drm", Devices: []gpu.DeviceSample{dev}}, Mode: "time-sliced", Processes: []admission.Attribution{host}}

	var b bytes.Buffer
	require.NoError(t, WriteStats(&b, st))
	require.NotContains(t, b.String(), "CONTAINER", "no column when nothing runs in a container")
	require.Contains(t, b.String(), "Backend: drm")

	named := admission.Attribution{Process: gpu.Process{PID: 200, User: "root", Command: "python3 /app/serve.py", MemoryUsed: 2 << 30, SM: procfs.NA,
		Container: procfs.Container{ID: id, Runtime: procfs.RuntimeDocker, Name: "llm-server", PID: 1}}, Device: 0, Verdict: admission.Unbooked}
	unnamed := named
	unnamed.PID, unnamed.Container.Name = 300, ""
	st.Processes = append(st.Processes, named, unnamed)
	b.Reset()
	require.NoError(t, WriteStats(&b, st))
	lines := strings.Split(b.String(), "\n")
	table := func(prefix string) []string {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return strings.Fields(l)
			}
		}
		require.Failf(t, "no line", "%q in\n%s", prefix, b.String())
		return nil
	}
	require.Equal(t, []string{"PID", "USER", "MEMORY", "SM", "BOOKING", "CONTAINER", "COMMAND"}, table("PID"))
	require.Equal(t, []string{"100", "alice", "8.0", "GiB", "75%", "#7", "-", "python", "train.py"}, table("100"))
	require.Equal(t, []string{"200", "root", "2.0", "GiB", "n/a", "UNBOOKED", "llm-server", "python3", "/app/serve.py"}, table("200"))
	require.Equal(t, "3f2a9c1b7d4e", table("300")[6])
}

// A user whose name and a process whose command line hold escape sequences
// reach `list` and `stats` only as visible text.
func TestAnotherUsersTextReachesTheTablesEscaped(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	p := core.Partition{Partition: domain.Partition{ID: 1, User: "mal\x1b[2Jlory", Device: 0, SharePPM: 200_000,
		Bytes: 16 << 30, State: domain.Live, Created: now.Add(-time.Minute), Start: now.Add(-time.Minute), Expires: now.Add(time.Hour)}}
	var list bytes.Buffer
	require.NoError(t, WriteBookings(&list, []core.Partition{p}, now, time.Minute, TableOptions{Wide: true}))
	coretest.NoTerminalControl(t, list.String())
	require.Contains(t, list.String(), `mal\x1b[2Jlory`)

	dev := gpu.DeviceSample{Device: gpu.Device{Index: 0, Name: "GPU", MemoryTotal: 80 << 30}, Util: 3, MemUtil: 1, TempC: 40, PowerW: 70}
	proc := admission.Attribution{Process: gpu.Process{PID: 7, User: "mallory", Command: "sh -c sleep " + coretest.Hostile,
		MemoryUsed: 1 << 30, SM: procfs.NA}, Device: 0, Verdict: admission.Unbooked}
	var stats bytes.Buffer
	require.NoError(t, WriteStats(&stats, core.Stats{Sample: gpu.Sample{Time: now, Backend: "sim", Devices: []gpu.DeviceSample{dev}},
		Processes: []admission.Attribution{proc}}))
	coretest.NoTerminalControl(t, stats.String())
	require.Contains(t, stats.String(), `\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J`)
}
