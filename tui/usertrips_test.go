package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/tui/form"
	"github.com/chronos-gpu/chronos/tui/widget"

	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"
)

// Typing over a preset replaces it: 45m over the preset 1h is 45m, not
// 1h45m. Once the field is edited, typing appends as usual; a preset chosen
// with ←/→ is again replaced by typing.
func TestFormTypingReplacesThePreset(t *testing.T) {
	w := newWorld(t, 1)
	m := press(t, w.model(80, 24), "n", "10%", "tab")
	require.Equal(t, form.FieldDuration, m.form.Focus)
	require.Equal(t, "1h", m.form.Duration.Value())
	m = press(t, m, "4", "5", "m")
	require.Equal(t, "45m", m.form.Duration.Value())
	m = press(t, m, "backspace", "h")
	require.Equal(t, "45h", m.form.Duration.Value(), "an edited field appends")
	m = press(t, m, "left", "9", "0", "m")
	require.Equal(t, "90m", m.form.Duration.Value(), "a preset chosen with ←/→ is replaced too")
	m = press(t, m, "right", "backspace")
	require.Equal(t, "1", m.form.Duration.Value(), "backspace edits the preset rather than replacing it")
}

// ctrl+c in the booking form closes the form, as esc does, not the app.
func TestCtrlCInTheFormClosesTheForm(t *testing.T) {
	w := newWorld(t, 1)
	m := press(t, w.model(80, 24), "n", "10%")
	require.Equal(t, booking, m.mode)
	_, cmd := m.Update(keyMsg("ctrl+c"))
	require.Equal(t, browsing, m.mode)
	require.Nil(t, m.form)
	require.NoError(t, m.ctx.Err(), "the app goes on")
	for _, msg := range collect(cmd) {
		require.NotEqual(t, tea.QuitMsg{}, msg)
	}
	require.Empty(t, live(t, w.client), "nothing booked")
	_, cmd = m.Update(keyMsg("ctrl+c"))
	require.Equal(t, []tea.Msg{tea.QuitMsg{}}, collect(cmd), "outside the form it quits")
}

// The Queue tab's cancel confirm is one short question that fits the line:
// what the request asks, without its owner (it is one's own), and y/n.
func TestQueueCancelAsksAShortQuestion(t *testing.T) {
	w := newWorld(t, 1)
	w.book(bob, 0, "100%", 0, time.Hour)
	mine := w.enqueue(alice, 0, "50%", 2*time.Hour)
	m := press(t, w.model(80, 24), "tab", "tab", "x")
	require.Equal(t, cancelling, m.mode)
	require.Equal(t, fmt.Sprintf("Cancel request #%d (50%% of GPU 0 for 2h)? y/n", mine.ID), m.prompt.Question)
	require.Contains(t, m.View(), m.prompt.Question)
}

// Back from a GPU's history, the Queue tab says it is reading the line,
// not that nobody waits, and reads it at once.
func TestQueueAfterHistoryIsReadAgain(t *testing.T) {
	w := newWorld(t, 1)
	w.book(bob, 0, "100%", 0, time.Hour)
	w.enqueue(alice, 0, "50%", time.Hour)
	m := press(t, w.model(80, 24), "tab", "tab")
	require.Equal(t, "Queue (1)", m.queue.Title())
	m = press(t, m, "enter")
	require.Equal(t, viewingHistory, m.mode)
	run(t, m, m.load()) // a reading while the history is open leaves the line out
	_, cmd := m.Update(keyMsg("esc"))
	require.Equal(t, browsing, m.mode)
	v := m.View()
	require.NotContains(t, v, "Nobody is waiting")
	require.Contains(t, v, "reading…")
	run(t, m, cmd)
	require.Equal(t, "Queue (1)", m.queue.Title(), "the line is read on the way back")
	require.Len(t, m.queue.Table.Rows, 1)
}

// Before its first read the Queue tab says so, rather than that nobody waits.
func TestQueueSaysReadingUntilRead(t *testing.T) {
	w := newWorld(t, 1)
	w.book(bob, 0, "100%", 0, time.Hour)
	w.enqueue(alice, 0, "50%", time.Hour)
	m := press(t, w.model(80, 24), "tab")
	_, cmd := m.Update(keyMsg("tab"))
	require.Contains(t, m.View(), "reading…")
	require.NotContains(t, m.View(), "Nobody is waiting")
	run(t, m, cmd)
	require.Contains(t, m.View(), "#1")
}

// Each tab keeps its own order: s in the Processes tab leaves the Bookings
// tab as it was; the Queue tab's order (fair share) is not the person's to
// change, so s does nothing there.
func TestSortIsPerTab(t *testing.T) {
	w := newWorld(t, 4)
	w.seed()
	w.book(bob, 2, "100%", 0, time.Hour)
	w.enqueue(carol, 2, "50%", time.Hour)
	m := w.model(80, 24)
	ids := func() []uint64 {
		var out []uint64
		for _, r := range m.bookings.Table.Rows {
			out = append(out, r.ID)
		}
		return out
	}
	before := ids()
	m = press(t, m, "tab", "s")
	require.Contains(t, m.View(), "sort: memory ▼")
	m = press(t, m, "tab")
	require.False(t, m.keys.Sort.Enabled(), "the line's order is the point")
	require.NotContains(t, m.View(), "sort:")
	m = press(t, m, "s", "tab")
	require.Equal(t, tab(m.bookings), m.current())
	require.Equal(t, before, ids(), "the Bookings tab keeps its order")
	require.Contains(t, m.View(), "sort: time left ▲")
	m = press(t, m, "shift+tab")
	require.Equal(t, tab(m.queue), m.current(), "shift+tab goes back a tab")
	m = press(t, m, "shift+tab")
	require.Equal(t, tab(m.processes), m.current())
	require.Contains(t, m.View(), "sort: memory ▼")
}

// Processes sort by memory and by SM, biggest first, I turns the order
// round, , goes back a key; the sorted column's title carries ▲ or ▼.
// Bookings sort by the memory their processes use.
func TestSortByMemoryAndSMWithInvert(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.seed()
	m := w.model(120, 40)
	header := func() string { return lineWith(t, ansi.Strip(m.View()), "COMMAND") }
	memory := func() []uint64 {
		var out []uint64
		for _, r := range m.processes.Table.Rows {
			out = append(out, r.MemoryUsed)
		}
		return out
	}
	sm := func() []int {
		var out []int
		for _, r := range m.processes.Table.Rows {
			out = append(out, r.SM)
		}
		return out
	}
	m = press(t, m, "tab")
	require.Contains(t, header(), "BOOKING▲", "the default order is marked too")
	require.Greater(t, len(memory()), 2)

	m = press(t, m, "s")
	require.Contains(t, header(), "MEMORY▼")
	require.NotContains(t, header(), "BOOKING▲")
	require.True(t, slices.IsSortedFunc(memory(), func(a, b uint64) int { return cmp.Compare(b, a) }), "biggest first: %v", memory())
	m = press(t, m, "I")
	require.Contains(t, header(), "MEMORY▲")
	require.Contains(t, m.View(), "sort: memory ▲")
	require.True(t, slices.IsSorted(memory()), "smallest first: %v", memory())

	m = press(t, m, ".")
	require.Contains(t, header(), "SM▼")
	require.True(t, slices.IsSortedFunc(sm(), func(a, b int) int { return cmp.Compare(b, a) }), "busiest first: %v", sm())
	m = press(t, m, ",")
	require.Contains(t, header(), "MEMORY▼", ", goes back, in the key's own order")

	m = press(t, m, "shift+tab", ",") // Bookings: back from time left to memory
	require.Contains(t, m.View(), "sort: memory ▼")
	require.Contains(t, lineWith(t, ansi.Strip(m.View()), "OWNER"), "IN USE▼")
	rows := m.bookings.Table.Rows
	for i := 1; i < len(rows); i++ {
		require.GreaterOrEqual(t, rows[i-1].InUse, rows[i].InUse)
	}
	require.NotZero(t, rows[0].InUse)
}

// enter in the Queue tab opens the history of the GPU the selected request
// asks for, not the first GPU's.
func TestEnterOpensTheSelectedRequestsGPU(t *testing.T) {
	w := newWorld(t, 4)
	w.book(bob, 2, "100%", 0, time.Hour)
	w.enqueue(alice, 2, "50%", time.Hour)
	m := press(t, w.model(80, 24), "tab", "tab")
	require.Len(t, m.queue.Table.Rows, 1)
	require.Equal(t, "GPU 2 history", m.keys.History.Help().Desc)
	m = press(t, m, "enter")
	require.Equal(t, viewingHistory, m.mode)
	require.Equal(t, 2, m.history.Device)
}

// boxText is the text inside the form's box, its lines joined by spaces:
// what a person reads, wherever the lines broke.
func boxText(view string) string {
	var words []string
	for _, l := range strings.Split(view, "\n") {
		l = strings.Trim(l, " │╭╮╰╯─")
		words = append(words, strings.Fields(l)...)
	}
	return strings.Join(words, " ")
}

// A warning longer than the form is wide goes on to the box's free line,
// broken between words, not cut mid-word.
func TestFormWrapsItsWarning(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	w := newWorld(t, 2)
	_, err := w.client.Inventory()
	require.NoError(t, err)
	_, err = w.client.Stats(w.gpus, procfs.MPS{})
	require.NoError(t, err)
	m := press(t, w.model(80, 24), "n", "up", "0", "down", "80GiB")
	warning := m.form.Warning()
	require.Greater(t, len(warning), 80)
	v := m.View()
	require.Contains(t, boxText(v), strings.Join(strings.Fields(warning), " "))
	for _, l := range strings.Split(v, "\n") {
		require.LessOrEqual(t, ansi.StringWidth(l), 80)
	}
}

// The too-small message wraps to a narrow terminal instead of being cut.
func TestTooSmallWraps(t *testing.T) {
	w := newWorld(t, 1)
	m := w.model(80, 24)
	update(t, m, tea.WindowSizeMsg{Width: 20, Height: 10})
	v := m.View()
	require.Contains(t, boxText(v), "Terminal too small: 20×10. Chronos needs at least 60×16. q quits.")
	for _, l := range strings.Split(v, "\n") {
		require.LessOrEqual(t, ansi.StringWidth(l), 20)
	}
}

// At a narrow width a column with nothing to say (IN USE all "-") gives
// way before STATE is cut; rows that do not fit are counted on a last line.
func TestNarrowTableDropsEmptyColumnAndCountsHiddenRows(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	w := newWorld(t, 4)
	for i := range 25 {
		w.book(bob, 3, "3%", 0, time.Duration(i+1)*time.Hour)
	}
	m := w.model(60, 24)
	v := m.View()
	require.NotContains(t, v, "IN USE")
	require.Contains(t, v, "STATE")
	require.Contains(t, v, " live")
	shown := m.bookings.Table.Height - 2
	require.Contains(t, v, fmt.Sprintf("+%d more", 25-shown))
	m = press(t, m, "G")
	require.Contains(t, m.View(), "#25", "the selection stays in sight")
	require.Contains(t, m.View(), fmt.Sprintf("+%d more", 25-shown))
}

// A booking ahead shows under LEFT when it starts, not a length that reads
// as time left.
func TestBookingAheadShowsItsStartUnderLeft(t *testing.T) {
	w := newWorld(t, 2)
	_, err := w.client.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: 3 * time.Hour, Start: t0.Add(2 * time.Hour)})
	require.NoError(t, err)
	_, err = w.client.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour, Start: t0.Add(26 * time.Hour)})
	require.NoError(t, err)
	m := w.model(140, 40)
	require.Len(t, m.bookings.Table.Rows, 2)
	left := map[int]string{}
	for _, r := range m.bookings.Table.Rows {
		left[r.Device] = m.bookings.Cells(r, t0, m.bookings.Table.Cols).Left
	}
	require.Equal(t, leftAt(t0.Add(2*time.Hour)), left[1])
	require.Equal(t, t0.Add(26*time.Hour).Local().Format("Mon15:04"), left[0], "another day, in LEFT's 8 cells")
}

// leftAt is what LEFT shows at t0 for a booking starting at start: the
// time of day when that is t0's local day, else the weekday too (t0 is a
// UTC instant: in UTC+14 two hours later is the next day).
func leftAt(start time.Time) string {
	s, n := start.Local(), t0.Local()
	if s.YearDay() == n.YearDay() && s.Year() == n.Year() {
		return s.Format("15:04")
	}
	return s.Format("Mon15:04")
}

// Memory in use that no booking holds has a colour of its own: no owner
// is ever drawn in it.
func TestUnbookedMemoryHasItsOwnColour(t *testing.T) {
	st := widget.DefaultStyles()
	hot := st.BarHot.GetForeground()
	for _, c := range st.Owners {
		require.NotEqual(t, hot, c.GetForeground())
	}
	for i := range 200 {
		require.NotEqual(t, hot, st.Owner(fmt.Sprintf("user%d", i)).GetForeground())
	}
}

// ? shows, under the keys, what the bars' glyphs and colours and the
// bookings' states mean.
func TestHelpShowsALegend(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	w := newWorld(t, 2)
	m := press(t, w.model(120, 40), "?")
	v := m.View()
	for _, want := range []string{"█ memory in use", "▒ booked, not in use", "░ free", "in use, not booked",
		"the owner's colour", "ending soon", "upcoming", "idle"} {
		require.Contains(t, v, want)
	}
	for _, l := range strings.Split(v, "\n") {
		require.LessOrEqual(t, ansi.StringWidth(l), 120)
	}
}

// quitKey sends one key and reports whether the app quit.
func quitKey(t *testing.T, m *Model, k string) bool {
	t.Helper()
	_, cmd := m.Update(keyMsg(k))
	for _, msg := range collect(cmd) {
		if _, ok := msg.(tea.QuitMsg); ok {
			return true
		}
	}
	return false
}

// q or ctrl+c while a request this app waits for is in line asks first:
// quitting takes it out of the line (the app is its waiter).
func TestQuitWithARequestInLineAsksFirst(t *testing.T) {
	w := newWorld(t, 1)
	w.book(bob, 0, "80%", 0, time.Hour)
	m := press(t, w.model(80, 24), "n", "50%", "enter", "enter")
	line := waiting(t, w.client)
	require.Len(t, line, 1)
	id := line[0].ID
	for _, k := range []string{"q", "ctrl+c"} {
		require.False(t, quitKey(t, m, k), k)
		require.Equal(t, quitting, m.mode)
		want := fmt.Sprintf("Request #%d is waiting in line: quit and leave the line? [y] leave · [b] keep waiting in the background · [n] stay", id)
		require.Equal(t, want, m.prompt.Question)
		require.Contains(t, joined(m.View()), want)
		require.False(t, quitKey(t, m, "n"))
		require.Equal(t, browsing, m.mode)
		require.NoError(t, m.ctx.Err(), "the app goes on")
		require.Contains(t, m.status.text, fmt.Sprintf("Request #%d still waits", id))
	}
	require.False(t, quitKey(t, m, "q"))
	require.True(t, quitKey(t, m, "y"), "y leaves")
	r, err := w.client.LineRequest(id)
	require.NoError(t, err)
	require.Equal(t, domain.Cancelled, r.State, "the owner left the line, said so in the ledger")
	require.NotContains(t, r.Reason, "is gone")
}

// Without a request in line q quits at once, as before; a second ctrl+c at
// the question quits too.
func TestQuitAsksOnlyWithARequestInLine(t *testing.T) {
	w := newWorld(t, 1)
	require.True(t, quitKey(t, w.model(80, 24), "q"))
	w.book(bob, 0, "80%", 0, time.Hour)
	m := press(t, w.model(80, 24), "n", "50%", "enter", "enter")
	require.False(t, quitKey(t, m, "ctrl+c"))
	require.True(t, quitKey(t, m, "ctrl+c"), "ctrl+c twice means it")
}

// Staying after q in a GPU's history goes back to the history.
func TestQuitQuestionFromHistoryGoesBackToIt(t *testing.T) {
	w := newWorld(t, 1)
	w.book(bob, 0, "80%", 0, time.Hour)
	m := press(t, w.model(80, 24), "n", "50%", "enter", "enter", "enter")
	require.Equal(t, viewingHistory, m.mode)
	require.False(t, quitKey(t, m, "q"))
	require.Equal(t, quitting, m.mode)
	require.False(t, quitKey(t, m, "n"))
	require.Equal(t, viewingHistory, m.mode)
	require.NotNil(t, m.history)
}
