package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// withProfile draws with a colour profile for the rest of the test.
func withProfile(t *testing.T, p termenv.Profile) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(p)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })
}

// No line is wider than the terminal and the screen is exactly its height,
// whatever is open.
func TestEveryLineFitsTheTerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 8)
	w.seed()
	for _, size := range [][2]int{{60, 16}, {80, 24}, {100, 30}, {140, 40}, {220, 60}, {40, 10}} {
		for _, keys := range [][]string{nil, {"tab"}, {"n"}, {"?"}, {"x"}, {"e"}, {"/", "bo"}, {"enter"}, {"enter", "?"}} {
			m := press(t, w.model(size[0], size[1]), keys...)
			lines := strings.Split(m.View(), "\n")
			require.Len(t, lines, size[1], "%v after %v", size, keys)
			for i, line := range lines {
				require.LessOrEqual(t, ansi.StringWidth(line), size[0], "%v after %v, line %d: %q", size, keys, i, line)
			}
		}
	}
}

func TestTooSmall(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(59, 24)
	require.Contains(t, m.View(), "Terminal too small")
	update(t, m, tea.WindowSizeMsg{Width: 80, Height: 15})
	require.Contains(t, m.View(), "Terminal too small")
	update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	require.NotContains(t, m.View(), "Terminal too small")
}

// NO_COLOR takes colour away, and with it bold, underline and reverse
// video; what they meant stays on screen as text: a cursor in inputs, the
// active tab marked, placeholders that read as examples.
func TestNoColorKeepsStructure(t *testing.T) { // serial: sets the colour profile every test draws with
	withProfile(t, termenv.Ascii)
	w := newWorld(t, 2)
	w.book(alice, 0, "10%", 0, time.Hour)
	m := w.model(100, 30)
	v := m.View()
	require.Contains(t, v, "▸ Bookings (1)")
	require.Contains(t, v, "  Processes (")
	require.NotContains(t, v, "▸ Processes")
	require.Contains(t, v, "▸•#1", "the selected row is marked")
	m = press(t, m, "tab")
	require.Contains(t, m.View(), "▸ Processes (")

	m = press(t, m, "tab", "n")
	v = m.View()
	require.Contains(t, v, "Memory    ▏e.g. 50%", "the cursor, then an example, in the empty field")
	m = press(t, m, "40")
	require.Contains(t, m.View(), "Memory    40▏")
	m = press(t, m, "left")
	require.Contains(t, m.View(), "Memory    4▏0", "the cursor between characters")
	m = press(t, m, "tab")
	v = m.View()
	require.Contains(t, v, "Memory    40 ", "no cursor where the focus is not")
	require.Contains(t, v, "Duration  1h▏")
	m = press(t, m, "esc", "/")
	require.Contains(t, m.View(), "/▏e.g. bob, python or #12")
}

// In colour the cursor is a reverse-video cell and placeholders are
// faint italics, unlike typed text.
func TestColourCursorAndPlaceholder(t *testing.T) { // serial: sets the colour profile every test draws with
	withProfile(t, termenv.ANSI)
	w := newWorld(t, 1)
	m := press(t, w.model(100, 30), "n")
	st := &m.sh.Styles
	require.False(t, st.Plain)
	v := m.View()
	require.Contains(t, v, st.Cursor.Render(" ")+st.Placeholder.Render("e.g. 50%"))
	m = press(t, m, "40")
	require.Contains(t, m.View(), "40"+st.Cursor.Render(" "))
	require.NotEqual(t, st.Placeholder.Render("40"), "40", "placeholders are drawn unlike text")
}

// The bookings table says what each column is: BOOKED memory, the memory
// its processes have IN USE, and the time ELAPSED.
func TestBookingsShowMemoryInUse(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.seed()
	m := w.model(140, 40)
	v := m.View()
	require.Contains(t, v, "BOOKED")
	require.Contains(t, v, "IN USE")
	require.Contains(t, v, "ELAPSED")
	require.NotContains(t, v, "USED ")

	// Each booking's processes, added up from the GPU reading.
	want := map[uint64]uint64{}
	for _, a := range m.data.Attrs {
		if a.Partition != 0 {
			want[a.Partition] += a.MemoryUsed
		}
	}
	require.NotEmpty(t, want)
	for _, r := range m.bookings.Table.Rows {
		require.Equal(t, want[r.ID], r.InUse, "#%d", r.ID)
		c := m.bookings.Cells(r, t0, m.bookings.Table.Cols)
		if want[r.ID] == 0 {
			require.Equal(t, "-", c.InUse)
		} else {
			require.Equal(t, human.FormatBytes(want[r.ID]), c.InUse)
			require.Equal(t, want[r.ID] > r.Bytes, c.Over, "#%d", r.ID)
		}
	}
}

// The form shows, next to the chosen GPU's bookable share, the memory
// physically free there, and warns — in `chronos create`'s words — when a
// booking would take more than that, naming who holds it.
func TestFormWarnsOfMemoryInUse(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	// A reading stored in the ledger, as every monitor (the app's too)
	// and `chronos stats` store them: on GPU 0, alice's simulated
	// training job holds memory with no booking.
	_, err := w.client.Inventory()
	require.NoError(t, err)
	_, err = w.client.Stats(w.gpus, procfs.MPS{})
	require.NoError(t, err)
	s, err := w.sim.Sample()
	require.NoError(t, err)
	free := s.Devices[0].MemoryFree
	require.Greater(t, free, uint64(10<<30))
	require.Less(t, free, s.Devices[0].MemoryTotal)

	m := press(t, w.model(120, 30), "n", "up", "0")
	v := m.View()
	require.Contains(t, v, "100% (80.0 GiB) bookable, ")
	require.Contains(t, v, " physically free (read just now)")
	require.NotContains(t, v, "⚠")

	m = press(t, m, "down", "10GiB")
	require.NotContains(t, m.View(), "⚠", "10 GiB fits")
	m = press(t, m, "ctrl+u", "80GiB")
	v = m.View()
	require.Contains(t, v, "⚠ 80.0 GiB booked, but only ")
	require.Contains(t, v, "of GPU 0 is physically free")
	m = press(t, m, "ctrl+u", "100%")
	require.Contains(t, m.View(), "⚠ 80.0 GiB booked", "a share is warned of in bytes")
	require.Contains(t, m.form.Warning(), "alice uses ", "who holds the memory")

	// A warning, not a refusal: the ledger admits by booked shares.
	m = press(t, m, "enter")
	require.Equal(t, browsing, m.mode)
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, 0, parts[0].Device)
}

// A booking made ahead shows in the app's table as upcoming, counted down
// from its whole length with nothing of it elapsed; it can be released and
// extended; the table is read again when it starts.
func TestBookingAheadShowsUpcoming(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	p, err := w.client.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: 3 * time.Hour, Start: t0.Add(2 * time.Hour)})
	require.NoError(t, err)
	m := w.model(140, 40)
	require.Len(t, m.bookings.Table.Rows, 1)
	r := m.bookings.Table.Rows[0]
	require.True(t, r.Live, "not ended: it is yours to release or extend")
	c := m.bookings.Cells(r, t0, m.bookings.Table.Cols)
	require.Equal(t, domain.StatusUpcoming, c.Status)
	require.Equal(t, leftAt(t0.Add(2*time.Hour)), c.Left, "when it starts")
	require.Zero(t, c.Elapsed, "nothing of it has elapsed")
	require.Equal(t, p.Start, nextChange(m.data.Parts, t0), "read again when it starts")
	m.syncKeys()
	require.True(t, m.keys.Release.Enabled())
}
