package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A ledger kept busy at a booking's deadline (another process holds the
// file's lock) does not put the end off: the booking's process gets SIGTERM
// at the deadline though the expiry cannot be recorded, and the first pass
// once the ledger is free records it, without signalling again.
func TestMonitorEnforcesWhileLedgerIsBusy(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	sim := gpu.NewSim(gpu.SimOptions{})
	clk := coretest.NewFakeClock()
	c := servicetest.SimClient(&bolt.Ledger{Path: db, Timeout: 300 * time.Millisecond}, sim, proc.CurrentIdentity(), clk)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	proc := startChild(t, p.ID, "sleep 60")
	sim.Attach(coretest.IdleGPU, proc.Process.Pid, 1<<30)

	var log actLog
	m := New(c, Options{Backend: sim, OnAct: log.add})
	_, err = m.Tick() // reads the ledger while it is free
	require.NoError(t, err)

	holder, marker := coretest.HoldLedger(t, db)
	clk.Set(p.Expires)
	_, err = m.Tick()
	require.ErrorIs(t, err, storage.ErrBusy)
	ws := coretest.WaitStatus(t, proc, 5*time.Second)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	signalled := func() (n int, detail string) {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, a := range log.acts {
			if a.Kind == domain.EventSignalled {
				n, detail = n+1, a.Detail
			}
		}
		return n, detail
	}
	n, detail := signalled()
	require.Equal(t, 1, n)
	require.Contains(t, detail, "the ledger is busy")

	require.NoError(t, os.WriteFile(marker+".go", nil, 0o600))
	require.NoError(t, holder.Wait())
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "not recorded while the ledger was busy")

	clk.Advance(time.Second)
	_, err = m.Tick()
	require.NoError(t, err)
	got, err = c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State, "recorded once the ledger is free")
	require.Contains(t, strings.Join(servicetest.EventKinds(t, c, p.ID), " "), "expired")
	n, _ = signalled()
	require.Equal(t, 1, n, "nothing signalled twice")
	// The SIGTERM sent while the ledger was busy is in the audit trail.
	evs, err := c.FindEvents(core.EventFilter{Booking: p.ID, Kinds: []domain.EventKind{domain.EventSignalled}}, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Contains(t, evs[0].Detail, "the ledger is busy")
}

// A pass whose transaction waits on a busy ledger does not hold up the
// SIGTERM of a booking whose deadline has passed: it goes termPatience
// into the pass, while the transaction still waits, and once the ledger
// is free the pass records the expiry and the signal, which no pass
// sends again.
func TestSIGTERMAtTheDeadlineWhileTheLedgerWaits(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	sim := gpu.NewSim(gpu.SimOptions{})
	clk := coretest.NewFakeClock()
	c := servicetest.SimClient(&bolt.Ledger{Path: db, Timeout: time.Minute}, sim, proc.CurrentIdentity(), clk)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: 5 * time.Second})
	require.NoError(t, err)
	proc := startChild(t, p.ID, "sleep 60")
	sim.Attach(coretest.IdleGPU, proc.Process.Pid, 1<<30)
	var log actLog
	m := New(c, Options{Backend: sim, OnAct: log.add})
	for range 2 { // the second finds nothing to write: its snapshot is kept
		_, err = m.Tick()
		require.NoError(t, err)
	}

	// At the deadline nothing has changed in the ledger: the pass acts on
	// the snapshot it has, as a running monitor does, and its
	// transaction waits for the file another process holds.
	holder, marker := coretest.HoldLedger(t, db)
	clk.Set(p.Expires)
	timers := clk.Timers()
	ticked := make(chan error, 1)
	go func() { _, err := m.tick(false); ticked <- err }()
	require.True(t, clk.WaitTimers(timers+1, 10*time.Second), "the pass arms its SIGTERM")
	select {
	case err := <-ticked:
		t.Fatalf("the pass ended (%v) while another process held the ledger", err)
	default:
	}
	clk.Advance(termPatience)
	requireTermWhileThePassWaits(t, proc, ticked)
	freeLedger(t, holder, marker, ticked)
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	evs, err := c.FindEvents(core.EventFilter{Booking: p.ID}, 0)
	require.NoError(t, err)
	var signalled []string
	for _, e := range evs {
		if e.Kind == domain.EventSignalled {
			signalled = append(signalled, e.Detail)
		}
	}
	require.Len(t, signalled, 1)
	require.Contains(t, signalled[0], "SIGTERM")
	require.Contains(t, signalled[0], "sent at the deadline, before the ledger recorded the pass")

	clk.Advance(time.Second)
	_, err = m.Tick()
	require.NoError(t, err)
	evs, err = c.FindEvents(core.EventFilter{Booking: p.ID, Kinds: []domain.EventKind{domain.EventSignalled}}, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "nothing signalled twice")
}
