package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// The app's own readings are finer than the ledger's minutes and take
// their place where it has some; a stretch neither covers stays unknown,
// and a GPU reading 0% is drawn apart from one nobody read.
func TestHistorySeriesPrefersTheAppsReadings(t *testing.T) {
	t.Parallel()
	tl := newTimeline(t0, 60)
	require.Equal(t, time.Minute, tl.step)
	require.Equal(t, t0.Add(-59*time.Minute), tl.from, "the last column holds now")
	var h report.GPUHistory
	for i := range 50 { // the ledger has the first 50 minutes, at 10%
		h.Minutes = append(h.Minutes, domain.GPUMinute{Minute: tl.start(i), Util: 10, MemoryUsed: 8 << 30, MemoryTotal: 80 << 30})
	}
	tr := widget.NewTrace(100)
	for i := range 8 { // the app read the last 2 minutes at 90%, and the 48th
		tr.Push(widget.Point{At: t0.Add(-time.Minute + time.Duration(i)*15*time.Second).UnixNano(), Util: 90, Mem: 40 << 30})
	}
	tr.Push(widget.Point{At: tl.start(48).Add(time.Second).UnixNano(), Util: 0, Mem: 0})
	util, mem := series(tl, tr, h, 80<<30)
	require.InDelta(t, 0.1, util[0], 1e-9)
	require.InDelta(t, 0.1, mem[47], 1e-9)
	require.Zero(t, util[48], "the app's 0% in place of the ledger's 10%")
	require.Equal(t, unknown, util[52], "nobody read it")
	require.Equal(t, unknown, mem[52])
	require.InDelta(t, 0.9, util[58], 1e-9)
	require.InDelta(t, 0.5, mem[59], 1e-9)

	g := graph(util, 2)
	require.Len(t, g, 2)
	bottom := []rune(g[1])
	require.Equal(t, '▁', bottom[48], "known and 0%: a baseline")
	require.Equal(t, ' ', bottom[52], "unknown: nothing")
	require.Equal(t, '█', bottom[59])
	require.Equal(t, '▆', []rune(g[0])[59], "90% of two lines of eight steps: 14 steps")
}

// A booking idle in the newest minute the monitors judged is drawn idle
// up to now (the minute under way is judged when it ends), unless the
// monitors have fallen behind; an idle stretch that ended stays where it
// ended.
func TestSpanIdleReachesNowWhileItLasts(t *testing.T) {
	t.Parallel()
	now := t0.Add(90 * time.Second)
	tl := newTimeline(now, 60)
	judged := t0
	b := report.BookingSpan{ID: 1, Start: t0.Add(-30 * time.Minute), End: t0, Idle: []report.Span{{From: t0.Add(-10 * time.Minute), To: t0}}}
	cells := spanCells(tl, asDrawn(b, t0, judged, now))
	require.Equal(t, spanBooked, cells[40])
	require.Equal(t, spanIdle, cells[50])
	require.Equal(t, spanIdle, cells[59], "still idle, as far as anyone knows")

	later := now.Add(3 * time.Minute)
	cells = spanCells(newTimeline(later, 60), asDrawn(b, t0, judged, later))
	require.Equal(t, spanBooked, cells[59], "three minutes unjudged: not drawn idle")

	require.Contains(t, idleLabel(tl, asDrawn(b, t0, judged, now), 50, 59), "idle 11m", "counted up to now, as drawn")

	b.Idle = []report.Span{{From: t0.Add(-10 * time.Minute), To: t0.Add(-5 * time.Minute)}}
	cells = spanCells(tl, asDrawn(b, t0, judged, now))
	require.Equal(t, spanIdle, cells[50])
	require.Equal(t, spanBooked, cells[59], "it worked since")
}
