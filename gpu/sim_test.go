package gpu

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/gpu/procfs"

	"github.com/stretchr/testify/require"
)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestSimDefaults(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	require.Equal(t, "simulated", s.Name())
	require.True(t, s.Simulated())
	devs, err := s.Devices()
	require.NoError(t, err)
	require.Len(t, devs, 4)
	for i, d := range devs {
		require.Equal(t, i, d.Index)
		require.Equal(t, fmt.Sprintf("SIM-00000000-0000-0000-0000-00000000000%d", i), d.UUID)
		require.Equal(t, "Simulated H100 80GB", d.Name)
		require.Equal(t, 80*gib, d.MemoryTotal)
		require.False(t, d.MIG)
	}
	require.NoError(t, s.Close())
}

func TestSimDeterministicAndMoving(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	a := NewSim(SimOptions{Count: 8, Now: fixedClock(at)})
	b := NewSim(SimOptions{Count: 8, Now: fixedClock(at)})
	sa, err := a.Sample()
	require.NoError(t, err)
	sb, err := b.Sample()
	require.NoError(t, err)
	require.Equal(t, sa, sb, "same time, same sample")
	require.Equal(t, at, sa.Time)
	require.True(t, sa.Simulated)
	require.Equal(t, "simulated", sa.Backend)

	later := NewSim(SimOptions{Count: 8, Now: fixedClock(at.Add(7 * time.Second))})
	sl, err := later.Sample()
	require.NoError(t, err)
	require.NotEqual(t, sa.Devices[0].Util, sl.Devices[0].Util, "load moves with time")
	require.NotEqual(t, sa.Devices[0].Processes[0].MemoryUsed, sl.Devices[0].Processes[0].MemoryUsed, "memory moves gently")
	require.InEpsilon(t, float64(sa.Devices[0].Processes[0].MemoryUsed), float64(sl.Devices[0].Processes[0].MemoryUsed), 0.1)
}

func TestSimReadingsStayInRange(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	s := NewSim(SimOptions{Count: 8, Memory: 141 * gib, Now: func() time.Time { return now }})
	sawBusy, sawIdle := false, false
	for step := range 2000 {
		now = start.Add(time.Duration(step) * 3 * time.Second)
		smp, err := s.Sample()
		require.NoError(t, err)
		for _, d := range smp.Devices {
			require.GreaterOrEqual(t, d.Util, 0)
			require.LessOrEqual(t, d.Util, 100)
			require.GreaterOrEqual(t, d.MemUtil, 0)
			require.LessOrEqual(t, d.MemUtil, 100)
			require.Equal(t, d.MemoryTotal, d.MemoryUsed+d.MemoryFree)
			require.Greater(t, d.TempC, 20)
			require.Less(t, d.TempC, 95)
			require.Greater(t, d.PowerW, 0.0)
			var sum uint64
			for _, p := range d.Processes {
				require.GreaterOrEqual(t, p.PID, 4_000_000, "fake pids must not collide with real ones")
				require.NotEmpty(t, p.User)
				require.NotEmpty(t, p.Command)
				require.GreaterOrEqual(t, p.SM, 0)
				require.LessOrEqual(t, p.SM, 100)
				sum += p.MemoryUsed
			}
			require.Equal(t, sum, d.MemoryUsed)
			sawBusy = sawBusy || d.Util > 50
			sawIdle = sawIdle || len(d.Processes) == 0
		}
	}
	require.True(t, sawBusy)
	require.True(t, sawIdle)
}

func TestSimAttachRealProcess(t *testing.T) {
	t.Parallel()
	child := coretest.StartSleep(t, procfs.PartitionEnv+"=p9")
	pid := child.Process.Pid
	s := NewSim(SimOptions{Count: 4, Now: fixedClock(time.Unix(1_700_000_000, 0))})
	before, err := s.Sample()
	require.NoError(t, err)

	s.Attach(3, pid, 2*gib)
	s.Attach(99, os.Getpid(), gib) // no such device: not shown
	got, err := s.Sample()
	require.NoError(t, err)
	d := got.Devices[3]
	require.Len(t, d.Processes, len(before.Devices[3].Processes)+1)
	p := d.Processes[len(d.Processes)-1]
	require.Equal(t, pid, p.PID)
	require.Equal(t, os.Getuid(), p.UID)
	require.Equal(t, "p9", p.PartitionID)
	require.Contains(t, p.Command, "sleep")
	require.NotZero(t, p.StartTime)
	require.Equal(t, 2*gib, p.MemoryUsed)
	require.Equal(t, before.Devices[3].MemoryUsed+2*gib, d.MemoryUsed)
	require.Equal(t, d.MemoryTotal, d.MemoryUsed+d.MemoryFree)

	// Once it exits it is gone from the GPU.
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	got, err = s.Sample()
	require.NoError(t, err)
	require.Equal(t, before.Devices[3], got.Devices[3])

	s.Attach(1, os.Getpid(), gib)
	s.Detach(os.Getpid())
	got, err = s.Sample()
	require.NoError(t, err)
	require.Equal(t, before, got)
}

// An attached process shows the SM activity a test gives it, and its
// device's utilization rises by as much; the same clock gives the same
// figures.
func TestSimSetSM(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{Count: 4, Now: fixedClock(time.Unix(1_700_000_000, 0))})
	idle, err := s.Sample()
	require.NoError(t, err)
	s.Attach(3, os.Getpid(), gib)
	s.SetSM(12345, 80) // not attached: no effect
	got, err := s.Sample()
	require.NoError(t, err)
	require.Zero(t, got.Devices[3].Processes[0].SM, "idle until set")
	require.Equal(t, idle.Devices[3].Util, got.Devices[3].Util)

	s.SetSM(os.Getpid(), 60)
	got, err = s.Sample()
	require.NoError(t, err)
	require.Equal(t, 60, got.Devices[3].Processes[0].SM)
	require.Equal(t, idle.Devices[3].Util+60, got.Devices[3].Util)
	again, err := s.Sample()
	require.NoError(t, err)
	require.Equal(t, got, again)

	s.SetSM(os.Getpid(), 250)
	got, err = s.Sample()
	require.NoError(t, err)
	require.Equal(t, 100, got.Devices[3].Processes[0].SM)
	require.Equal(t, 100, got.Devices[3].Util)
}

func TestSimAttachCannotExceedMemory(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{Count: 1, Memory: 10 * gib, Now: fixedClock(time.Unix(0, 0))})
	s.Attach(0, os.Getpid(), 100*gib)
	got, err := s.Sample()
	require.NoError(t, err)
	require.Equal(t, 10*gib, got.Devices[0].MemoryUsed)
	require.Zero(t, got.Devices[0].MemoryFree)
}

func TestSimConcurrentUse(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{Count: 2})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s.Attach(w%2, os.Getpid(), uint64(i))
				_, err := s.Sample()
				require.NoError(t, err)
				s.Detach(os.Getpid())
			}
		})
	}
	wg.Wait()
}

func TestSimOptionsFromEnv(t *testing.T) {
	tests := []struct {
		gpus, memory string
		want         SimOptions
		wantErr      string
	}{
		{want: SimOptions{}},
		{gpus: "8", memory: "141GiB", want: SimOptions{Count: 8, Memory: 141 * gib}},
		{gpus: " 1 ", memory: "80 GB", want: SimOptions{Count: 1, Memory: 80_000_000_000}},
		{gpus: "64", memory: "512MiB", want: SimOptions{Count: 64, Memory: 512 << 20}},
		{gpus: "0", wantErr: "CHRONOS_SIM_GPUS=\"0\": want a whole number of GPUs from 1 to 64"},
		{gpus: "65", wantErr: "from 1 to 64"},
		{gpus: "four", wantErr: "from 1 to 64"},
		{memory: "80XB", wantErr: "unknown unit"},
		{memory: "lots", wantErr: "CHRONOS_SIM_MEMORY"},
		{memory: "0GiB", wantErr: "at least 1MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.gpus+"/"+tt.memory, func(t *testing.T) {
			t.Setenv("CHRONOS_SIM_GPUS", tt.gpus)
			t.Setenv("CHRONOS_SIM_MEMORY", tt.memory)
			got, err := SimOptionsFromEnv()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{in: "80GiB", want: 80 * gib},
		{in: "141gib", want: 141 * gib},
		{in: "1.5GiB", want: 3 * gib / 2},
		{in: "40GB", want: 40_000_000_000},
		{in: "512 MiB", want: 512 << 20},
		{in: "2TiB", want: 2 << 40},
		{in: "4096", want: 4096},
		{in: "", wantErr: true},
		{in: "GiB", wantErr: true},
		{in: "-5GiB", wantErr: true},
		{in: "1.2.3GiB", wantErr: true},
		{in: "10 parsecs", wantErr: true},
		{in: "99999999999TiB", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
