package monitor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/servicetest"
)

// A booking shorter than twice the policy's lead is warned halfway, not a
// tenth before its end: a 12-minute booking under warn=5m hears "ends in
// 5m" with 5 minutes left, time enough to act.
func TestShortBookingIsWarnedAtThePolicysLead(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	c := servicetest.NewClient(t, clk, coretest.Alice)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 12 * time.Minute})
	require.NoError(t, err)
	m := New(c, Options{})
	clk.Advance(7 * time.Minute)
	_, err = m.Tick()
	require.NoError(t, err)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	last := evs[len(evs)-1]
	require.Equal(t, domain.EventWarned, last.Kind)
	require.Equal(t, p.ID, last.Partition)
	require.Equal(t, "ends in 5m (GPU 0)", last.Detail)

	// A 4-minute booking is warned halfway, not at its start.
	q, err := c.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: 4 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, domain.WarnLead(q.Partition, 5*time.Minute))
}

// Notices are read from the audit trail by their owner only: all of those
// about the bookings shown at first, then those after the last read; a
// dismissal is recorded on the booking, by its owner or root, not by
// someone else.
func TestNoticesAreReadAndDismissedInTheLedger(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	path := filepath.Join(t.TempDir(), "chronos.db")
	a, b, r := servicetest.ClientAt(path, clk, coretest.Alice), servicetest.ClientAt(path, clk, coretest.Bob), servicetest.ClientAt(path, clk, coretest.Root)
	mine, err := a.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 12 * time.Minute})
	require.NoError(t, err)
	bobs, err := b.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: 12 * time.Minute})
	require.NoError(t, err)
	clk.Advance(7 * time.Minute)
	_, err = New(r, Options{}).Tick()
	require.NoError(t, err)

	got, upTo, err := a.Notices(0)
	require.NoError(t, err)
	require.Len(t, got, 1, "bob's warning is not alice's")
	n := got[0]
	require.Equal(t, mine.ID, n.Partition)
	require.Equal(t, domain.EventWarned, n.Kind)
	require.NotZero(t, upTo)
	again, upTo2, err := a.Notices(upTo)
	require.NoError(t, err)
	require.Empty(t, again, "nothing new since")
	require.Equal(t, upTo, upTo2)

	p, err := a.Get(mine.ID)
	require.NoError(t, err)
	require.False(t, n.Moot(p.Partition, clk.Now()))
	require.ErrorIs(t, b.DismissNotice(mine.ID, n.Seq), domain.ErrNotOwner)
	require.NoError(t, a.DismissNotice(mine.ID, n.Seq))
	p, err = a.Get(mine.ID)
	require.NoError(t, err)
	require.True(t, n.Moot(p.Partition, clk.Now()), "dismissed")
	require.NoError(t, r.DismissNotice(bobs.ID, 1), "root may")

	// Undismissed, a warning is moot once its booking ended; a reclaim
	// is not: it tells of the end.
	clk.Advance(6 * time.Minute)
	bp, err := b.Get(bobs.ID)
	require.NoError(t, err)
	warned := notice.Notice{Seq: 99, Kind: domain.EventWarned}
	require.True(t, warned.Moot(bp.Partition, clk.Now()))
	require.False(t, notice.Notice{Seq: 99, Kind: domain.EventReclaimed}.Moot(bp.Partition, clk.Now()))
}
