package core

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// queue's ETA counts an idle booking's coming reclaim: bob's booking has
// sat idle 29 of the 30 minutes the policy allows, warned at every step,
// so alice, waiting for its GPU, should start in about a minute, not when
// bob's booking would end in 4 hours. Held, or with reclaim off, it is
// not reclaimed, and the ETA is its end.
func TestQueueETACountsAComingReclaim(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	path := filepath.Join(t.TempDir(), "chronos.db")
	admin, b, a := clientAt(path, clk, coretest.Root), clientAt(path, clk, coretest.Bob), clientAt(path, clk, coretest.Alice)
	_, err := admin.SetPolicy([]string{"reclaim=always", "idle=30m", "idle-warn=10m,20m"})
	require.NoError(t, err)
	held, err := b.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: 4 * time.Hour})
	require.NoError(t, err)
	clk.Advance(40 * time.Minute)
	_, e, err := a.Enqueue(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, e)
	now := clk.Now()
	idle := domain.BookingUsage{Partition: held.ID, IdleFor: 29 * time.Minute, Warnings: 2, WarnedAt: now.Add(-9 * time.Minute)}
	setUsage := func(u domain.BookingUsage) {
		require.NoError(t, admin.Ledger().Update(context.Background(), func(tx *storage.Tx) error { return tx.PutBookingUsage(u) }))
	}
	eta := func() admission.QueueEntry {
		line, err := a.Queue()
		require.NoError(t, err)
		require.Len(t, line, 1)
		return line[0]
	}
	require.Equal(t, held.Expires, eta().ETA, "bob's booking works: it ends when booked")

	setUsage(idle)
	got := eta()
	require.Equal(t, now.Add(time.Minute), got.ETA, "reclaimed once idle 30m")
	require.Contains(t, got.Reason, "idle booking is reclaimed")

	// Idle time counts to the last accounted minute, not to now: a later
	// look gives the same ETA (it moved on with every look).
	measured := idle
	measured.Through = now.Add(-20 * time.Second)
	setUsage(measured)
	require.Equal(t, now.Add(40*time.Second), eta().ETA)
	clk.Advance(15 * time.Second)
	require.Equal(t, now.Add(40*time.Second), eta().ETA, "the same a little later")
	clk.Set(now)

	// The ladder's spacing comes first: warned just now at 20m, the
	// reclaim waits until 10m (less half a minute) after that warning.
	u := idle
	u.WarnedAt = now
	setUsage(u)
	require.Equal(t, now.Add(10*time.Minute-domain.AccountEvery/2), eta().ETA)

	u = idle
	u.HeldUntil = now.Add(time.Hour)
	setUsage(u)
	require.Equal(t, held.Expires, eta().ETA, "held: not reclaimed")

	setUsage(idle)
	_, err = admin.SetPolicy([]string{"reclaim=off"})
	require.NoError(t, err)
	require.Equal(t, held.Expires, eta().ETA, "reclaim off: not reclaimed")
}
