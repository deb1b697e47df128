package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// A booking made ahead holds its share only over its interval: a request
// that overlaps it is refused (naming when it would fit), one that ends
// before it starts, or fits beside it, is admitted.
func TestBookingAheadBlocksOverlapAdmitsTheRest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testBookingAheadBlocksOverlapAdmitsTheRest)
}

func testBookingAheadBlocksOverlapAdmitsTheRest(t *testing.T, open storetest.Opener) {
	clk := coretest.NewFakeClock()
	a, b := servicetest.ClientOn(open(), clk, coretest.Alice), servicetest.ClientOn(open(), clk, coretest.Bob)
	now := clk.Now()
	ahead, err := a.Create(core.Request{Device: 0, Memory: human.Fraction(0.6), Duration: 3 * time.Hour, Start: now.Add(2 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, now.Add(2*time.Hour), ahead.Start)
	require.Equal(t, domain.StatusUpcoming, domain.Status(ahead.Partition, now, 5*time.Minute))
	require.Equal(t, 3*time.Hour, ahead.TimeRemaining(), "its whole length while it has not started")

	_, err = b.Create(servicetest.Half(0, 3*time.Hour))
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "GPU 0 has 40% (32.0 GiB) free, 50% asked: held by alice (60%, #1, from "+
		human.FormatTime(ahead.Start, now)+" until "+human.FormatTime(ahead.Expires, now)+"). GPU 1 has 100% free. It would fit at")
	require.ErrorContains(t, err, human.FormatTime(now.Add(5*time.Hour), now), "after the booking ahead ends")

	_, err = b.Create(servicetest.Half(0, 2*time.Hour))
	require.NoError(t, err, "ends as the booking ahead starts")
	_, err = b.Create(core.Request{Device: 0, Memory: human.Fraction(0.45), Duration: 8 * time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked, "50% now, then 60% ahead, leave 40% over those 8 hours")
	_, err = b.Create(core.Request{Device: 0, Memory: human.Fraction(0.4), Duration: time.Hour, Start: now.Add(4 * time.Hour)})
	require.NoError(t, err, "fits beside the booking ahead")

	// Now is not its time: it counts toward nothing live, yet is listed.
	avail, err := b.Available(0)
	require.NoError(t, err)
	require.Equal(t, int64(500_000), avail[0].FreePPM)
	require.Equal(t, now.Add(4*time.Hour), avail[0].Ahead, "the least free is once both ahead have started")
	require.Equal(t, int64(0), avail[0].FreeAheadPPM)
	parts, err := b.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 3)

	// The monitor neither warns nor expires it before its time.
	m := New(a, Options{})
	clk.Advance(2*time.Hour + time.Minute)
	_, err = m.Tick()
	require.NoError(t, err)
	got, err := a.Get(ahead.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusLive, domain.Status(got.Partition, clk.Now(), 5*time.Minute))
	require.False(t, got.Warned)
}
