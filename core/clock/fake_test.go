package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var epoch = time.Date(2030, 6, 15, 12, 0, 0, 0, time.UTC)

func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case t := <-c:
		return t, true
	default:
		return time.Time{}, false
	}
}

func TestFakeTimersFireInOrderAsTimePasses(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	late, early := f.NewTimer(2*time.Minute), f.NewTimer(time.Minute)
	require.Equal(t, 2, f.Timers())

	f.Advance(59 * time.Second)
	_, ok := fired(early.C())
	require.False(t, ok, "a minute has not passed")

	f.Advance(time.Second)
	at, ok := fired(early.C())
	require.True(t, ok)
	require.Equal(t, epoch.Add(time.Minute), at, "fires at its deadline, not at the end of the advance")
	_, ok = fired(late.C())
	require.False(t, ok)

	require.True(t, late.Stop())
	f.Advance(time.Hour)
	_, ok = fired(late.C())
	require.False(t, ok, "a stopped timer never fires")
	require.Equal(t, epoch.Add(time.Hour+time.Minute), f.Now())
	require.Zero(t, f.Timers())
}

func TestFakeResetDropsAnUnreadFiring(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second)
	require.False(t, tm.Reset(time.Minute), "it had fired")
	_, ok := fired(tm.C())
	require.False(t, ok, "the old firing is gone")
	f.Advance(time.Minute)
	at, ok := fired(tm.C())
	require.True(t, ok)
	require.Equal(t, epoch.Add(61*time.Second), at)

	now := f.NewTimer(0)
	_, ok = fired(now.C())
	require.True(t, ok, "a timer of zero fires at once")
}

func TestFakeTickerDropsTicksNobodyRead(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	tk := f.NewTicker(10 * time.Second)
	f.Advance(35 * time.Second)
	at, ok := fired(tk.C())
	require.True(t, ok)
	require.Equal(t, epoch.Add(10*time.Second), at, "the first tick; those after it found the channel full")
	f.Advance(5 * time.Second)
	at, ok = fired(tk.C())
	require.True(t, ok)
	require.Equal(t, epoch.Add(40*time.Second), at, "ticks stay on their grid")
	tk.Stop()
	f.Advance(time.Hour)
	_, ok = fired(tk.C())
	require.False(t, ok)
}

func TestSleepWaitsForTheFakeClock(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), f, time.Hour) }()
	require.True(t, f.WaitTimers(1, 10*time.Second), "Sleep set its timer")
	select {
	case err := <-done:
		t.Fatalf("slept through no time (%v)", err)
	default:
	}
	f.Advance(time.Hour)
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, f, time.Hour) }()
	require.True(t, f.WaitTimers(1, 10*time.Second))
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestSetMovesEitherWay(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	tm := f.NewTimer(30 * time.Minute)
	f.Set(epoch.Add(-time.Hour))
	require.Equal(t, epoch.Add(-time.Hour), f.Now())
	_, ok := fired(tm.C())
	require.False(t, ok, "stepping back fires nothing")
	f.Set(epoch.Add(time.Hour))
	at, ok := fired(tm.C())
	require.True(t, ok)
	require.Equal(t, epoch.Add(30*time.Minute), at, "the deadline stays where it was set")
}

func TestSinceAndUntilReadTheClockGiven(t *testing.T) {
	t.Parallel()
	f := NewFake(epoch)
	require.Equal(t, time.Hour, Since(f, epoch.Add(-time.Hour)))
	require.Equal(t, time.Hour, Until(f, epoch.Add(time.Hour)))
	require.Equal(t, Clock(f), OrSystem(f))
	require.NotNil(t, OrSystem(nil))
}
