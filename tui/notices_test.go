package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/storage"
)

// monitor is a monitor of the world's ledger and GPUs, run as alice, as
// in `chronos`: what it records, every app of alice's reads.
func (w *world) monitor() *monitor.Monitor {
	return monitor.New(w.client, monitor.Options{Backend: w.sim, Signaller: noSignals{}})
}

// tick has the monitor make a pass.
func tick(t *testing.T, mon *monitor.Monitor) {
	t.Helper()
	_, err := mon.Tick()
	require.NoError(t, err)
}

// reread has the app read the ledger, as it does when the ledger's watch
// says another process wrote it.
func reread(t *testing.T, m *Model) *Model {
	t.Helper()
	return run(t, m, m.load())
}

// record puts a notice about booking p in the audit trail, as a monitor
// does; a warning marks the booking warned, as the monitor's does.
func (w *world) record(id uint64, kind domain.EventKind, detail string) {
	w.t.Helper()
	require.NoError(w.t, w.ledger.Update(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(id)
		if err != nil {
			return err
		}
		if kind == domain.EventWarned {
			p.Warned = true
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
		}
		return tx.AddEvent(domain.Event{Time: w.clock.Now(), Kind: kind, Partition: id, UID: p.UID, User: p.User, Detail: detail})
	}))
}

// The monitor's "ends in" warning reaches the owner's app as a notice line
// that outlives the status line and the next readings; another user's
// booking warned at the same time is not shown there. d dismisses it, in
// the ledger.
func TestNoticeLineShowsTheOwnersNoticesUntilDismissed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	mon := w.monitor()
	mine := w.book(alice, 0, "50%", 57*time.Minute, time.Hour) // 3 minutes left: inside the warning lead
	w.book(bob, 1, "50%", 58*time.Minute, time.Hour)
	m := w.model(80, 24)
	tick(t, mon)
	reread(t, m)

	v := ansi.Strip(m.View())
	line := lineWith(t, v, "⚠")
	require.Contains(t, line, "your booking #1: ends in 3m")
	require.NotContains(t, v, "#2: ends", "bob's booking is bob's business")

	// It stays: the status line clears, time passes, the ledger is read.
	update(t, m, clearStatusMsg{seq: m.status.seq})
	w.clock.Set(t0.Add(30 * time.Second))
	update(t, m, tickMsg(w.clock.Now()))
	reread(t, m)
	require.Contains(t, m.View(), "your booking #1: ends in 3m")
	m.syncKeys()
	require.True(t, m.keys.Dismiss.Enabled())
	require.Contains(t, m.View(), "d dismiss notice", "the footer says how it goes away")

	m = press(t, m, "d")
	require.Empty(t, m.notices)
	require.NotContains(t, m.View(), "⚠")
	require.NotContains(t, m.View(), "dismiss notice")
	p := live(t, w.client)[0]
	require.Equal(t, mine.ID, p.ID)
	require.NotZero(t, p.NoticesDismissed, "the dismissal is the ledger's, not one app's")
}

// A notice is in every open app of its owner, and in one opened after it
// was issued; d in one of them dismisses it in all, and in apps opened
// later.
func TestNoticesAreSharedByEveryAppOfTheOwner(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	mon := w.monitor()
	w.book(alice, 0, "50%", 57*time.Minute, time.Hour)
	first := w.model(100, 30)
	tick(t, mon)
	reread(t, first)
	require.Contains(t, first.View(), "your booking #1: ends in 3m")

	later := w.model(100, 30) // opened after the warning
	require.Contains(t, later.View(), "your booking #1: ends in 3m", "an app opened later reads it from the ledger")
	bobs := New(Options{Client: w.as(bob), Clock: w.clock, after: w.options().after})
	run(t, bobs, loadCmd(bobs.opts.Client, false, 0))
	require.Empty(t, bobs.notices, "nobody else's app shows it")

	press(t, later, "d")
	reread(t, first)
	require.Empty(t, first.notices, "dismissed in one app, gone from the other")
	require.NotContains(t, first.View(), "⚠")
	require.Empty(t, w.model(100, 30).notices, "and from an app opened after that")
}

// A warning is moot once its booking has ended: the line empties at the
// deadline, before anyone dismisses it. An "ends in" warning is moot once
// the booking is extended in another app.
func TestNoticesGoWhenMoot(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	mon := w.monitor()
	ending := w.book(alice, 0, "50%", 57*time.Minute, time.Hour)
	extended := w.book(alice, 1, "50%", 56*time.Minute, time.Hour)
	m := w.model(100, 30)
	tick(t, mon)
	reread(t, m)
	require.Len(t, m.notices, 2)

	_, err := w.client.Extend(extended.ID, time.Hour)
	require.NoError(t, err)
	reread(t, m)
	require.Len(t, m.notices, 1, "extending #2 elsewhere makes its warning moot")
	require.Equal(t, ending.ID, m.notices[0].Partition)

	w.clock.Set(ending.Expires.Add(time.Second))
	update(t, m, tickMsg(w.clock.Now()))
	require.Empty(t, m.notices, "#1 ended: its warning is moot")
	require.NotContains(t, m.View(), "ends in")
}

// A booking's newer notice takes the place of its older one; notices of
// two bookings stack, the newest shown with a count of the rest; acting on
// a booking (releasing or extending it) answers its notice.
func TestNoticesAreSupersededAndAnswered(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	first := w.book(alice, 0, "50%", 10*time.Minute, time.Hour)
	second := w.book(alice, 1, "50%", 10*time.Minute, time.Hour)
	m := w.model(100, 30)
	w.record(first.ID, domain.EventIdle, "idle for 1h on GPU 0")
	reread(t, m)
	w.record(first.ID, domain.EventIdle, "idle for 1h45m on GPU 0")
	reread(t, m)
	require.Len(t, m.notices, 1)
	require.Contains(t, m.View(), "#1: idle for 1h45m")
	require.NotContains(t, m.View(), "idle for 1h on")

	w.record(second.ID, domain.EventWarned, "ends in 5m (GPU 1)")
	reread(t, m)
	require.Contains(t, lineWith(t, ansi.Strip(m.View()), "⚠"), "#2: ends in 5m (GPU 1) (+1 more)")

	m.bookings.Table.SelectID(second.ID)
	m = press(t, m, "e", "enter")
	require.Len(t, m.notices, 1, "extending #2 answers its warning")
	require.Contains(t, m.View(), "#1: idle for 1h45m")
	m = press(t, m, "d")
	require.Empty(t, m.notices)

	w.record(first.ID, domain.EventIdle, "idle for 2h on GPU 0")
	reread(t, m)
	require.Contains(t, m.View(), "#1: idle for 2h", "a notice newer than the one dismissed shows")
	m.bookings.Table.SelectID(first.ID)
	m = press(t, m, "x", "y")
	require.Empty(t, m.notices, "releasing #1 answers its idle warning")
}

// Notices are text from the ledger: the app shows only the person's own,
// and escapes control characters in them.
func TestNoticesAreOwnAndPrintable(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	bobs := w.book(bob, 0, "50%", 10*time.Minute, time.Hour)
	mine := w.book(alice, 1, "50%", 10*time.Minute, time.Hour)
	m := w.model(100, 30)
	w.record(bobs.ID, domain.EventIdle, "idle for 1h")
	reread(t, m)
	require.Empty(t, m.notices, "bob's notice is not alice's")
	w.record(mine.ID, domain.EventIdle, "idle \x1b]2;pwned\a for 1h")
	reread(t, m)
	v := m.View()
	require.NotContains(t, v, "\x1b]2;")
	require.Contains(t, v, `idle \x1b]2;pwned\x07 for 1h`)
	require.True(t, strings.Count(v, "\n") == 29, "the notice line takes its place in the height")
}

// dismissals is a Writer that notes the dismissals it makes, as the
// keeper's client of a guarded ledger makes them.
type dismissals struct {
	*core.Client
	made [][2]uint64
}

func (d *dismissals) DismissNotice(id, seq uint64) error {
	d.made = append(d.made, [2]uint64{id, seq})
	return d.Client.DismissNotice(id, seq)
}

// d dismisses through the app's writer, as its other writes go: a
// member's app on a guarded ledger cannot write the ledger itself.
func TestDismissGoesThroughTheAppsWriter(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	mine := w.book(alice, 0, "50%", 57*time.Minute, time.Hour)
	w.record(mine.ID, domain.EventWarned, "")
	opts := w.options()
	writer := &dismissals{Client: w.client}
	opts.Writes = writer
	m := New(opts)
	update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	run(t, m, loadCmd(w.client, false, 0))
	require.Len(t, m.notices, 1)
	seq := m.notices[0].Seq

	press(t, m, "d")
	require.Equal(t, [][2]uint64{{mine.ID, seq}}, writer.made)
	require.Equal(t, seq, live(t, w.client)[0].NoticesDismissed)
}
