package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

// monitor is a monitor of the world's ledger and GPUs, run as alice, whose
// notices reach the app as in `chronos`.
func (w *world) monitor() *core.Monitor {
	w.notices = make(chan core.Notice, 16)
	return core.NewMonitor(w.client, core.MonitorOptions{Backend: w.sim, Signaller: noSignals{},
		OnNotice: func(n core.Notice) { w.notices <- n }})
}

// tick has the monitor make a pass; a notice of what one pass records goes
// out on the next.
func tick(t *testing.T, mon *core.Monitor) {
	t.Helper()
	_, err := mon.Tick()
	require.NoError(t, err)
}

// takeNotices hands the app every notice the monitor sent, as the app's
// wait for notices does; the monitor is done then.
func (w *world) takeNotices(m *Model) {
	close(w.notices)
	run(w.t, m, waitNoticeCmd(w.notices))
}

// The monitor's "ends in" warning reaches the owner's app as a notice line
// that outlives the status line and the next readings; another user's
// booking warned at the same time is not shown there.
func TestNoticeLineShowsTheOwnersNoticesUntilDismissed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	mon := w.monitor()
	mine := w.book(alice, 0, "50%", 57*time.Minute, time.Hour) // 3 minutes left: inside the warning lead
	w.book(bob, 1, "50%", 58*time.Minute, time.Hour)
	m := w.model(80, 24)
	tick(t, mon)
	tick(t, mon)
	require.Len(t, w.notices, 1, "the monitor tells alice's app of alice's booking only")
	w.takeNotices(m)

	v := ansi.Strip(m.View())
	line := lineWith(t, v, "⚠")
	require.Contains(t, line, "your booking #1: ends in 3m")
	require.NotContains(t, v, "#2: ends", "bob's booking is bob's business")

	// It stays: the status line clears, time passes, the ledger is read.
	update(t, m, clearStatusMsg{seq: m.status.seq})
	w.clock.Set(t0.Add(30 * time.Second))
	update(t, m, tickMsg(w.clock.Now()))
	update(t, m, ledgerChangedMsg{})
	require.Contains(t, m.View(), "your booking #1: ends in 3m")
	m.syncKeys()
	require.True(t, m.keys.Dismiss.Enabled())
	require.Contains(t, m.View(), "d dismiss notice", "the footer says how it goes away")

	m = press(t, m, "d")
	require.Empty(t, m.notices)
	require.NotContains(t, m.View(), "⚠")
	require.NotContains(t, m.View(), "dismiss notice")
	require.Equal(t, mine.ID, live(t, w.client)[0].ID, "dismissing touches nothing in the ledger")
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
	notice := func(p core.Partition, kind storage.EventKind, detail string) noticeMsg {
		return noticeMsg{Time: t0, Kind: kind, Partition: p.ID, Device: p.Device, UID: alice.UID, User: "alice", Detail: detail}
	}
	update(t, m, notice(first, storage.EventIdle, "idle for 1h on GPU 0"))
	update(t, m, notice(first, storage.EventIdle, "idle for 1h45m on GPU 0"))
	require.Len(t, m.notices, 1)
	require.Contains(t, m.View(), "#1: idle for 1h45m")
	require.NotContains(t, m.View(), "idle for 1h on")

	update(t, m, notice(second, storage.EventWarned, "ends in 5m (GPU 1)"))
	require.Contains(t, lineWith(t, ansi.Strip(m.View()), "⚠"), "#2: ends in 5m (GPU 1) (+1 more)")

	m.bookings.table.selectID(second.ID)
	m = press(t, m, "e", "enter")
	require.Len(t, m.notices, 1, "extending #2 answers its warning")
	require.Contains(t, m.View(), "#1: idle for 1h45m")
	m = press(t, m, "d")
	require.Empty(t, m.notices)

	update(t, m, notice(first, storage.EventIdle, "idle for 1h on GPU 0"))
	m.bookings.table.selectID(first.ID)
	m = press(t, m, "x", "y")
	require.Empty(t, m.notices, "releasing #1 answers its idle warning")
}

// Notices are text from the ledger: the app shows only the person's own,
// and escapes control characters in them.
func TestNoticesAreOwnAndPrintable(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(100, 30)
	update(t, m, noticeMsg{Time: t0, Kind: storage.EventWarned, Partition: 9, UID: bob.UID, User: "bob", Detail: "ends in 5m"})
	require.Empty(t, m.notices, "bob's notice is not alice's")
	update(t, m, noticeMsg{Time: t0, Kind: storage.EventWarned, Partition: 9, UID: alice.UID, User: "alice", Detail: "ends \x1b]2;pwned\a in 5m"})
	v := m.View()
	require.NotContains(t, v, "\x1b]2;")
	require.Contains(t, v, `ends \x1b]2;pwned\x07 in 5m`)
	require.True(t, strings.Count(v, "\n") == 29, "the notice line takes its place in the height")
}
