package tui

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/tui/history"
)

// pastBooking is a booking made ago before t0, lasting length.
type pastBooking struct {
	who         domain.Identity
	device      int
	memory      string
	ago, length time.Duration
}

// noSignals lets a monitor act without signalling: the simulated GPUs'
// made-up processes are nobody's to stop.
type noSignals struct{}

func (noSignals) Signal(int, uint64, syscall.Signal) error { return nil }

// watchHour has a monitor read the simulated GPUs every 15 s through the
// hour before t0, each booking made when its time comes: the ledger then
// holds the hour as monitors record it, a minute per GPU with who worked
// and who sat idle. The clock ends at t0.
func (w *world) watchHour(books ...pastBooking) []uint64 {
	w.t.Helper()
	mon := monitor.New(w.client, monitor.Options{Backend: w.sim, Signaller: noSignals{}})
	ids := make([]uint64, len(books))
	made := make([]bool, len(books))
	bookDue := func(at time.Time) {
		for i, b := range books {
			if made[i] || at.Before(t0.Add(-b.ago)) {
				continue
			}
			w.clock.Set(t0.Add(-b.ago))
			mem, err := human.ParseMemory(b.memory)
			require.NoError(w.t, err)
			p, err := w.as(b.who).Create(core.Request{Device: b.device, Memory: mem, Duration: b.length})
			require.NoError(w.t, err)
			ids[i], made[i] = p.ID, true
		}
	}
	for at := t0.Add(-history.Window); !at.After(t0); at = at.Add(15 * time.Second) {
		bookDue(at)
		w.clock.Set(at)
		_, err := mon.Tick()
		require.NoError(w.t, err)
	}
	w.clock.Set(t0)
	return ids
}

// busyHour is an hour of a lab: alice trains on GPU 0 throughout (the
// simulated GPU 0 runs her job), bob's booking on GPU 3 has sat idle for
// 50 minutes, carol's there started working (no process: idle too, after
// the start-up allowance) and dave's ended early.
func (w *world) busyHour() []uint64 {
	ids := w.watchHour(
		pastBooking{alice, 0, "50%", 90 * time.Minute, 3 * time.Hour},
		pastBooking{bob, 3, "25%", 65 * time.Minute, 2 * time.Hour},
		pastBooking{carol, 3, "25%", 20 * time.Minute, time.Hour},
		pastBooking{dave, 3, "10%", 45 * time.Minute, 15 * time.Minute},
	)
	return ids
}

var dave = domain.Identity{UID: 2004, User: "dave"}

// Enter opens the selected booking's GPU: the hour the monitors recorded
// shows at once, each booking's span under the graphs and bob's 50 idle
// minutes marked and counted; esc goes back.
func TestHistoryShowsTheLedgersHour(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	ids := w.busyHour()
	m := w.model(80, 24)
	m.bookings.Table.SelectID(ids[1]) // bob's, on GPU 3
	m = press(t, m, "enter")
	require.Equal(t, viewingHistory, m.mode)
	require.Equal(t, 3, m.history.Device)
	require.True(t, m.history.Loaded)
	require.NoError(t, m.history.Err)
	require.Len(t, m.history.Data.Minutes, 60, "a minute each, from the ledger")
	var spans []uint64
	for _, b := range m.history.Data.Bookings {
		spans = append(spans, b.ID)
	}
	require.Equal(t, []uint64{ids[1], ids[3], ids[2]}, spans, "GPU 3's bookings, in the order they started; alice's GPU 0 one is not here")

	v := ansi.Strip(m.View())
	require.Contains(t, v, "GPU 3  Simulated H100 80GB")
	bobLine := lineWith(t, v, "#2 bob")
	require.Contains(t, bobLine, "░ idle 50m ░", "idle since the start-up allowance ended, 50 minutes ago")
	require.Contains(t, bobLine, "━", "booked and not yet idle before that")
	require.NotContains(t, lineWith(t, v, "#3 dave"), "░", "within its start-up allowance throughout")
	require.NotContains(t, v, "Bookings (", "the history takes the screen")

	m = press(t, m, "esc")
	require.Equal(t, browsing, m.mode)
	require.Nil(t, m.history)
	require.Contains(t, m.View(), "Bookings (")
}

// lineWith is the one line of a screen that contains s.
func lineWith(t *testing.T, screen, s string) string {
	t.Helper()
	var found []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			found = append(found, l)
		}
	}
	require.Len(t, found, 1, "lines with %q in:\n%s", s, screen)
	return found[0]
}

// A freshly opened app on a ledger no monitor ever wrote shows, in the
// history, what it read itself since it opened, and nothing before.
func TestHistoryGrowsWithTheAppsReadings(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(80, 24)
	for i := 1; i <= 30; i++ { // a minute of readings, one every other second
		w.clock.Set(t0.Add(time.Duration(i) * 2 * time.Second))
		update(t, m, tickMsg(w.clock.Now()))
	}
	m = press(t, m, "enter")
	require.Empty(t, m.history.Data.Minutes)
	v := ansi.Strip(m.View())
	bottom := lineWith(t, v, "       0%│")
	graphCells := []rune(strings.TrimPrefix(bottom, "       0%│"))
	require.Len(t, graphCells, 70)
	require.Equal(t, strings.Repeat(" ", 68), string(graphCells[:68]), "nothing read before the app opened")
	require.NotEqual(t, ' ', graphCells[69], "the app's own readings")
}

// ←/→ show the other GPUs, each read afresh; an answer for the GPU shown
// before is dropped. A booking made meanwhile shows when the ledger
// changes.
func TestHistorySwitchesGPUsAndFollowsTheLedger(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	ids := w.busyHour()
	m := w.model(120, 40)
	m.bookings.Table.SelectID(ids[0]) // alice's, on GPU 0
	m = press(t, m, "enter")
	require.Equal(t, 0, m.history.Device)
	stale := history.Msg{Device: 0, History: m.history.Data}
	require.Len(t, stale.History.Bookings, 1)

	m = press(t, m, "left")
	require.Equal(t, 3, m.history.Device, "before the first comes the last")
	require.Len(t, m.history.Data.Bookings, 3)
	update(t, m, stale)
	require.Len(t, m.history.Data.Bookings, 3, "GPU 0's answer, come late, is not GPU 3's")
	require.Contains(t, m.View(), "GPU 3  Simulated")
	m = press(t, m, "right")
	require.Equal(t, 0, m.history.Device)
	m = press(t, m, "right", "right", "right")
	require.Equal(t, 3, m.history.Device)

	w.book(erin, 3, "10%", 5*time.Minute, time.Hour)
	update(t, m, ledgerChangedMsg{})
	require.Len(t, m.history.Data.Bookings, 3, "read at most every %s", historyEvery)
	update(t, m, changeSpacingMsg{})
	w.clock.Set(t0.Add(historyEvery))
	update(t, m, ledgerChangedMsg{})
	require.Len(t, m.history.Data.Bookings, 4)
	require.Contains(t, m.View(), "#5 erin")
}

var erin = domain.Identity{UID: 2005, User: "erin"}

// More bookings than fit at 80×24 scroll with ↑/↓, which show in the
// footer only then.
func TestHistoryScrollsBookings(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	for i := range 12 {
		w.book(bob, 0, "5%", time.Duration(50-4*i)*time.Minute, 2*time.Hour)
	}
	m := w.model(80, 24)
	m = press(t, m, "enter")
	h := m.history
	require.Less(t, h.SpansShown, 12)
	require.Greater(t, h.SpansShown, 2)
	v := ansi.Strip(m.View())
	require.Contains(t, v, "#1 bob")
	require.NotContains(t, v, "#12 bob")
	require.Contains(t, v, fmt.Sprintf("1–%d of 12 bookings", h.SpansShown))
	require.Contains(t, v, "↑/↓ scroll bookings")

	m = press(t, m, "j", "j", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down")
	require.Equal(t, 12-h.SpansShown, h.Offset, "no further than the last")
	v = ansi.Strip(m.View())
	require.Contains(t, v, "#12 bob")
	require.NotContains(t, v, "#1 bob ")
	m = press(t, m, "k")
	require.Equal(t, 11-h.SpansShown, h.Offset)

	update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m.syncKeys()
	require.Equal(t, 12, h.SpansShown, "all fit")
	require.Zero(t, h.Offset)
	require.False(t, h.Keys.Down.Enabled())
	require.NotContains(t, m.View(), "scroll bookings")
}

// In a ledger many hosts share, enter on another host's booking does not
// open this host's GPU of the same number: the app reads only this host's
// GPUs, and offers the first of them.
func TestHistoryOfAnotherHostsBookingIsNotOurs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	m := w.model(80, 24)
	theirs := core.Partition{Partition: domain.Partition{ID: 7, Host: "gpu-b", Device: 1, SharePPM: 500_000, UID: bob.UID, User: "bob",
		Created: t0.Add(-time.Hour), Expires: t0.Add(time.Hour), State: domain.Live}}
	update(t, m, ledgerMsg{parts: []core.Partition{theirs}, policy: policy.Default()})
	row, ok := m.bookings.Selected()
	require.True(t, ok)
	require.Equal(t, "gpu-b", row.Host)
	m.syncKeys()
	require.Equal(t, "GPU 0 history", m.keys.History.Help().Desc)
	m = press(t, m, "enter")
	require.Equal(t, 0, m.history.Device)
}

// In the history ? shows its keys; esc closes that help first, then the
// history. q quits from it as from anywhere.
func TestHistoryHelpAndWayOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	m := press(t, w.model(80, 24), "enter", "?")
	require.True(t, m.fullHelp)
	v := m.View()
	require.Contains(t, v, "other GPU")
	require.Contains(t, v, "close help")
	require.NotContains(t, v, "new booking", "the bookings' keys do nothing here")
	m = press(t, m, "esc")
	require.False(t, m.fullHelp)
	require.Equal(t, viewingHistory, m.mode)
	m = press(t, m, "esc")
	require.Equal(t, browsing, m.mode)
	m = press(t, m, "enter", "n")
	require.Equal(t, viewingHistory, m.mode, "n is not a key of the history")
	_, cmd := m.Update(keyMsg("q"))
	require.IsType(t, tea.QuitMsg{}, cmd())
}
