package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// A GPU with more bookings in a minute than one transaction may write
// (etcd takes 128 operations) is accounted over several passes, its minute
// once the last booking is in; the passes meanwhile record what else is
// due. One pass for all 150 failed, and so did every pass after it,
// expiries included, for as long as the window stayed to be written.
func TestAGPUOfManyBookingsIsAccountedOverPasses(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Now: clk.Now})
	c := core.NewClient(core.Options{Ledger: storetest.Etcd(t, etcdtest.Shared(t))(), As: &coretest.Alice, Host: "gpu1", Clock: clk, Devices: simDevices(sim)})
	var ids []uint64
	for range 150 {
		p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.005), Duration: time.Hour})
		require.NoError(t, err)
		ids = append(ids, p.ID)
	}
	due, err := c.Create(core.Request{Device: coretest.IdleGPU - 1, Memory: human.Fraction(0.5), Duration: 70 * time.Second})
	require.NoError(t, err)
	pol := ladderPolicy(policy.ReclaimOff)
	m := New(c, Options{Backend: sim, Policy: &pol, Signaller: noSignals{}})
	window := clk.Now().Truncate(domain.AccountEvery)
	for end := clk.Now().Add(2 * time.Minute); clk.Now().Before(end); {
		clk.Advance(10 * time.Second)
		for range 20 { // a pass, then the rest of the window at once
			next, err := m.Tick()
			require.NoError(t, err)
			if next.After(clk.Now()) {
				break
			}
		}
	}

	got, err := c.Get(due.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	require.NoError(t, c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		usage, err := tx.UsageOf(ids)
		require.NoError(t, err)
		for i, u := range usage {
			require.False(t, u.Through.Before(window.Add(domain.AccountEvery)), "booking %d's first minute", ids[i])
		}
		minutes, err := tx.GPUMinutes(window, window.Add(domain.AccountEvery), "")
		require.NoError(t, err)
		for _, g := range minutes {
			if g.Device == coretest.IdleGPU && g.Minute.Equal(window) {
				require.Len(t, g.Idle, 0, "within their idle-start")
				return nil
			}
		}
		t.Fatalf("no minute for GPU %d at %s in %v", coretest.IdleGPU, window, minutes)
		return nil
	}))
}
