package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/tui/tabs"
)

func TestViewKeys(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.seed()
	// Each case starts from its own model: one case's keys never reach
	// another's screen.
	seeded := func(t *testing.T) *Model {
		m := w.model(80, 24)
		require.Len(t, m.bookings.Table.Rows, 5)
		return m
	}

	t.Run("order", func(t *testing.T) {
		m := seeded(t)
		require.Equal(t, uint64(4), m.bookings.Table.Rows[0].ID, "time left: the one ending soonest first")
		require.Equal(t, uint64(5), m.bookings.Table.Rows[4].ID, "ended ones last")
	})
	t.Run("tab", func(t *testing.T) {
		m := press(t, seeded(t), "tab")
		require.Equal(t, tab(m.processes), m.current())
		require.False(t, m.keys.Release.Enabled())
		require.False(t, m.keys.Extend.Enabled())
		v := m.View()
		require.Contains(t, v, "UNBOOKED")
		require.Contains(t, v, "OVER BUDGET #1")
		m = press(t, m, "tab")
		require.Equal(t, tab(m.queue), m.current())
		m = press(t, m, "tab")
		require.Equal(t, tab(m.bookings), m.current())
	})
	t.Run("mine", func(t *testing.T) {
		m := press(t, seeded(t), "m")
		require.True(t, m.mineOnly)
		require.Len(t, m.bookings.Table.Rows, 2)
		for _, r := range m.bookings.Table.Rows {
			require.Equal(t, "alice", r.User)
		}
		require.Contains(t, m.View(), "mine only")
		m = press(t, m, "tab")
		require.Len(t, m.processes.Table.Rows, 1)
		m = press(t, m, "m")
		require.Len(t, m.processes.Table.Rows, 4)
	})
	t.Run("sort", func(t *testing.T) {
		m := seeded(t)
		var orders []tabs.SortKey
		for range 5 {
			m = press(t, m, "s")
			orders = append(orders, m.sortBy[m.active].By)
		}
		require.Equal(t, []tabs.SortKey{tabs.ByOwner, tabs.ByDevice, tabs.ByID, tabs.ByMemory, tabs.ByTimeLeft}, orders)
		m = press(t, m, "s")
		rows := m.bookings.Table.Rows
		require.Equal(t, "alice", rows[0].User)
		require.Equal(t, "carol", rows[4].User)
		require.Contains(t, m.View(), "sort: owner")
		m = press(t, m, "s")
		require.Equal(t, 0, m.bookings.Table.Rows[0].Device)
		m = press(t, m, "s")
		for i, r := range m.bookings.Table.Rows {
			require.Equal(t, uint64(i+1), r.ID)
		}
	})
	t.Run("filter", func(t *testing.T) {
		m := press(t, seeded(t), "/")
		require.Equal(t, filtering, m.mode)
		m = press(t, m, "bob")
		require.Len(t, m.bookings.Table.Rows, 2, "filters as you type")
		m = press(t, m, "enter")
		require.Equal(t, browsing, m.mode)
		require.Contains(t, m.View(), `filter "bob"`)
		m = press(t, m, "tab")
		require.Len(t, m.processes.Table.Rows, 2)
		m = press(t, m, "esc")
		require.Len(t, m.processes.Table.Rows, 4, "esc clears the filter")

		m = press(t, m, "tab", "/", "llama")
		require.Len(t, m.bookings.Table.Rows, 1, "a booking matches its processes' commands")
		require.Equal(t, uint64(1), m.bookings.Table.Rows[0].ID)
		m = press(t, m, "esc")
		require.Equal(t, browsing, m.mode)
		require.Len(t, m.bookings.Table.Rows, 5)

		m = press(t, m, "/", "#3", "enter")
		require.Len(t, m.bookings.Table.Rows, 1)
	})
	t.Run("help", func(t *testing.T) {
		m := press(t, seeded(t), "?")
		require.True(t, m.fullHelp)
		require.Contains(t, m.View(), "page down")
		m = press(t, m, "?")
		require.False(t, m.fullHelp)
		m = press(t, m, "?", "esc")
		require.False(t, m.fullHelp)
	})
	t.Run("move", func(t *testing.T) {
		m := press(t, seeded(t), "j", "down")
		at := func() int { return m.bookings.Table.Cur.At }
		require.Equal(t, 2, at())
		m = press(t, m, "k")
		require.Equal(t, 1, at())
		m = press(t, m, "G")
		require.Equal(t, 4, at())
		m = press(t, m, "j")
		require.Equal(t, 4, at())
		m = press(t, m, "g", "up")
		require.Equal(t, 0, at())
	})
	t.Run("quit", func(t *testing.T) {
		for _, k := range []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("q")}, {Type: tea.KeyCtrlC}} {
			_, cmd := seeded(t).Update(k)
			require.NotNil(t, cmd)
			require.Equal(t, tea.QuitMsg{}, cmd())
		}
	})
}

// In the form q is a letter like any other (ctrl+c closes the form:
// TestCtrlCInTheFormClosesTheForm).
func TestFormTakesQAsText(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := press(t, w.model(80, 24), "n", "q")
	require.Equal(t, booking, m.mode)
	require.Equal(t, "q", m.form.Memory.Value())
}

// A terminal too small to draw in shows no prompt, so no key but q and
// ctrl+c may act there: x then y releases nothing.
func TestTooSmallOnlyQuitActs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	mine := w.book(alice, 0, "50%", 0, time.Hour)
	for _, size := range [][2]int{{60, 15}, {59, 24}} {
		m := selectBooking(t, w.model(80, 24), mine.ID)
		update(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		require.Contains(t, m.View(), "Terminal too small")
		m = press(t, m, "x", "y", "e", "enter", "n", "50%", "enter", "/", "m", "s", "tab", "?")
		require.Equal(t, browsing, m.mode)
		require.Equal(t, "", m.filter)
		require.False(t, m.mineOnly)
		require.False(t, m.fullHelp)
		require.Equal(t, tabs.ByTimeLeft, m.sortBy[m.active].By)
		require.Equal(t, tab(m.bookings), m.current())
		got, err := w.client.Get(mine.ID)
		require.NoError(t, err)
		require.Equal(t, domain.Live, got.State)
		require.Equal(t, mine.Expires, got.Expires)
		require.Len(t, live(t, w.client), 1)

		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
		require.NotNil(t, cmd)
		require.Equal(t, tea.QuitMsg{}, cmd())
	}

	// The form open when the terminal shrinks: q quits rather than typing
	// into a form no one can see.
	m := press(t, w.model(80, 24), "n")
	update(t, m, tea.WindowSizeMsg{Width: 60, Height: 15})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	require.NotNil(t, cmd)
	require.Equal(t, tea.QuitMsg{}, cmd())
	require.Equal(t, "", m.form.Memory.Value())
}

func TestKeysTypedTogetherAreEachAKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(80, 24)
	update(t, m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n30%")})
	require.Equal(t, booking, m.mode)
	require.Equal(t, "30%", m.form.Memory.Value())
	press(t, m, "enter")
	require.Len(t, live(t, w.client), 1)
}

func TestKeysApplyOnlyWhereTheyMeanSomething(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(80, 24)
	require.False(t, m.keys.Release.Enabled(), "no booking selected")
	require.True(t, m.keys.New.Enabled())
	m = press(t, m, "x", "e")
	require.Equal(t, browsing, m.mode)

	m = press(t, m, "n")
	require.False(t, m.keys.New.Enabled())
	require.True(t, m.form.Keys.Submit.Enabled())
	footer := m.footer()
	require.Contains(t, footer, "book")
	require.NotContains(t, footer, "new booking")
	require.NotContains(t, footer, "quit", "q is text in the form")
	for _, b := range []key.Binding{m.keys.Mine, m.keys.Sort, m.keys.Filter, m.keys.Quit, m.keys.Help} {
		require.False(t, b.Enabled())
	}
	require.False(t, m.bookings.Table.Keys.Down.Enabled(), "the table's keys rest while the form is open")
}

// The help lists x and e only when there is a booking they would act on.
func TestHelpShowsOnlyKeysThatAct(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	m := press(t, w.model(100, 30), "?")
	v := m.View()
	require.Contains(t, v, "new booking")
	require.NotContains(t, v, "release")
	require.NotContains(t, v, "extend")
	require.NotContains(t, v, "page down", "nothing to move through")

	w.book(alice, 0, "10%", 0, time.Hour)
	w.book(bob, 1, "10%", 0, time.Hour)
	m = press(t, w.model(100, 30), "?")
	v = m.View()
	require.Contains(t, v, "release")
	require.Contains(t, v, "extend")
	require.Contains(t, v, "page down")
}

// The footer drops other keys before "? help" and "q quit".
func TestFooterKeepsHelpAndQuit(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.book(alice, 0, "10%", 0, time.Hour)
	w.book(alice, 1, "10%", 0, time.Hour)
	for _, width := range []int{60, 80, 100, 200} {
		m := press(t, w.model(width, 24), "/", "a", "enter") // esc clears the filter: one key more
		footer := m.footer()
		require.LessOrEqual(t, len([]rune(footer)), width)
		require.True(t, strings.HasSuffix(footer, "? help • q quit"), "at %d: %q", width, footer)
		require.Contains(t, footer, "n new booking", "at %d", width)
		if width < 200 {
			require.Contains(t, footer, "…", "at %d: the rest gave way", width)
		} else {
			require.Contains(t, footer, "esc clear filter", "at %d", width)
		}
		footer = press(t, m, "tab").footer()
		require.True(t, strings.HasSuffix(footer, "? help • q quit"), "processes at %d: %q", width, footer)
	}
}
