package core

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
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
	clk := newFakeClock()
	c := simClient(t, &bolt.Ledger{Path: db, Timeout: 300 * time.Millisecond}, sim, CurrentIdentity(), clk)
	p, err := c.Create(Request{Device: idleGPU, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	proc := startChild(t, p.ID, "sleep 60")
	sim.Attach(idleGPU, proc.Process.Pid, 1<<30)

	var log actLog
	m := NewMonitor(c, MonitorOptions{Backend: sim, OnAct: log.add})
	_, err = m.Tick() // reads the ledger while it is free
	require.NoError(t, err)

	holder, marker := holdLedger(t, db)
	clk.Set(p.Expires)
	_, err = m.Tick()
	require.ErrorIs(t, err, storage.ErrBusy)
	ws := waitStatus(t, proc, 5*time.Second)
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
	require.Contains(t, strings.Join(eventKinds(t, c, p.ID), " "), "expired")
	n, _ = signalled()
	require.Equal(t, 1, n, "nothing signalled twice")
}
