package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// The holds of one idle stretch last hold-max (4h) in all: holding again
// and again cannot keep an idle booking from the line. Root may hold past
// it, and once the booking has worked a new stretch begins. Whose booking
// it is is said before what the hold lacks.
func TestHoldsOfAnIdleStretchLastHoldMax(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	p, err := r.c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.25), Duration: 12 * time.Hour})
	require.NoError(t, err)
	id := p.ID

	_, err = core.NewClient(core.Options{Ledger: bolt.New(r.path), As: &coretest.Bob, Clock: r.clock}).Hold(id, time.Hour, "")
	require.ErrorIs(t, err, domain.ErrNotOwner, "not 'a hold needs a reason'")
	_, err = r.c.Hold(id, time.Hour, strings.Repeat("x", domain.MaxReason+1))
	require.ErrorIs(t, err, domain.ErrInput)
	require.ErrorContains(t, err, "201 characters long; say it in at most 200")

	_, err = r.c.Hold(id, 3*time.Hour, "preprocessing on CPU")
	require.NoError(t, err)
	r.clock.Advance(time.Hour)
	u, err := r.c.Hold(id, 3*time.Hour, "still preprocessing")
	require.NoError(t, err, "4h from the first hold: exactly hold-max")
	require.Equal(t, 2, u.Holds)
	r.clock.Advance(time.Hour)
	_, err = r.c.Hold(id, 4*time.Hour, "and more")
	require.ErrorIs(t, err, domain.ErrTooLong)
	require.ErrorContains(t, err, "this idle stretch's holds may last 4h in all (hold-max): at most 2h more, until ")
	r.clock.Advance(2 * time.Hour)
	_, err = r.c.Hold(id, time.Minute, "one more minute")
	require.ErrorContains(t, err, "held for 4h (hold-max) already while it sat idle; it can be held again once it has worked")

	root := servicetest.SimClient(bolt.New(r.path), r.sim, coretest.Root, r.clock)
	_, err = root.Hold(id, time.Hour, "root keeps it")
	require.NoError(t, err, "root is not capped")

	// It worked: a new stretch, a new hold-max.
	require.NoError(t, bolt.New(r.path).Update(context.Background(), func(tx *storage.Tx) error {
		u, _, err := tx.BookingUsage(id)
		if err != nil {
			return err
		}
		u.LastActive = r.clock.Now()
		return tx.PutBookingUsage(u)
	}))
	r.clock.Advance(time.Minute)
	_, err = r.c.Hold(id, 4*time.Hour, "a new idle stretch")
	require.NoError(t, err)
}
