package monitor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A monitor releases a booking whose chronos run is gone once nothing of
// its command runs — no process in its group, no GPU process of the booking
// — and marks it orphaned until then. A live wrapper, or one on another
// machine, is left alone.
func TestMonitorSettlesDeadWrappers(t *testing.T) {
	t.Parallel()
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(bolt.New(filepath.Join(t.TempDir(), "chronos.db")), sim, proc.CurrentIdentity(), nil)
	book := func(w domain.Wrapper) uint64 {
		t.Helper()
		p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
		require.NoError(t, c.SetWrapper(p.ID, w))
		return p.ID
	}
	alive, dead, elsewhere := testWrappers(t)
	otherNS := dead
	otherNS.PIDNamespace = "pid:[1]"
	rebooted := dead
	rebooted.Boot = "another-boot"

	running := book(alive)
	remote := book(elsewhere)
	hidden := book(otherNS)
	gone := book(dead)
	afterReboot := book(rebooted)
	onGPU := book(dead)
	child := startChild(t, onGPU, "sleep 60") // outside any recorded group, on the GPU
	sim.Attach(coretest.IdleGPU, child.Process.Pid, 1<<30)

	var log actLog
	m := New(c, Options{Backend: sim, OnAct: log.add})
	_, err := m.Tick()
	require.NoError(t, err)
	state := func(id uint64) domain.BookingStatus {
		p, err := c.Get(id)
		require.NoError(t, err)
		return domain.Status(p.Partition, clock.System().Now(), time.Minute)
	}
	require.Equal(t, domain.StatusLive, state(running))
	require.Equal(t, domain.StatusLive, state(remote))
	require.Equal(t, domain.StatusLive, state(hidden))
	require.Equal(t, domain.StatusReleased, state(gone))
	require.Equal(t, domain.StatusReleased, state(afterReboot))
	require.Equal(t, domain.StatusOrphaned, state(onGPU))
	require.Equal(t, []string{"created", "run", "released"}, servicetest.EventKinds(t, c, gone))
	require.Equal(t, []string{"created", "run", "orphaned"}, servicetest.EventKinds(t, c, onGPU))

	// Marked once; released once its last process has ended.
	m.nextSample = time.Time{}
	_, err = m.Tick()
	require.NoError(t, err)
	require.Equal(t, []string{"created", "run", "orphaned"}, servicetest.EventKinds(t, c, onGPU))
	require.NoError(t, child.Process.Kill())
	coretest.WaitStatus(t, child, 2*time.Second)
	m.nextSample = time.Time{}
	_, err = m.Tick()
	require.NoError(t, err)
	require.Equal(t, domain.StatusReleased, state(onGPU))
	require.Equal(t, []string{"created", "run", "orphaned", "released"}, servicetest.EventKinds(t, c, onGPU))
	require.Equal(t, os.Getpid(), alive.PID)
}

// Before any monitor has run, a booking whose chronos run died on this
// machine already reads as orphaned — in list's table and JSON alike — while
// a live wrapper's, or one on another machine, reads as live.
func TestDeadWrapperShowsOrphanedWithoutAMonitor(t *testing.T) {
	t.Parallel()
	c := servicetest.SimClient(bolt.New(filepath.Join(t.TempDir(), "chronos.db")), gpu.NewSim(gpu.SimOptions{}), proc.CurrentIdentity(), nil)
	alive, dead, elsewhere := testWrappers(t)
	want := map[uint64]domain.BookingStatus{}
	for _, w := range []struct {
		wrapper domain.Wrapper
		status  domain.BookingStatus
	}{{alive, domain.StatusLive}, {dead, domain.StatusOrphaned}, {elsewhere, domain.StatusLive}} {
		p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
		require.NoError(t, c.SetWrapper(p.ID, w.wrapper))
		want[p.ID] = w.status
	}
	parts, err := c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, len(want))
	for _, p := range parts {
		require.Equal(t, want[p.ID], p.Status(clock.System().Now(), time.Minute), "#%d", p.ID)
		require.Equal(t, want[p.ID], view.Booking(p, clock.System().Now(), time.Minute).State, "#%d", p.ID)
		require.True(t, p.Orphaned.IsZero(), "nothing is written by reading")
	}
}

// testWrappers names this test process as a wrapper (alive), a wrapper
// that is gone (this pid, but not the process that started then), and a
// gone one on another host.
func testWrappers(t *testing.T) (alive, dead, elsewhere domain.Wrapper) {
	t.Helper()
	alive, err := proc.ThisWrapper(0)
	require.NoError(t, err)
	dead = alive
	dead.Start++
	elsewhere = dead
	elsewhere.Host += "-other"
	return alive, dead, elsewhere
}
