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
	"github.com/chronos-gpu/chronos/gpu"
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
	w := newWorld(t, 8)
	w.seed()
	for _, size := range [][2]int{{60, 16}, {80, 24}, {100, 30}, {140, 40}, {220, 60}, {40, 10}} {
		for _, keys := range [][]string{nil, {"tab"}, {"n"}, {"?"}, {"x"}, {"e"}, {"/", "bo"}} {
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
func TestNoColorKeepsStructure(t *testing.T) {
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
func TestColourCursorAndPlaceholder(t *testing.T) {
	withProfile(t, termenv.ANSI)
	w := newWorld(t, 1)
	m := press(t, w.model(100, 30), "n")
	st := &m.sh.styles
	require.False(t, st.plain)
	v := m.View()
	require.Contains(t, v, st.Cursor.Render(" ")+st.Placeholder.Render("e.g. 50%"))
	m = press(t, m, "40")
	require.Contains(t, m.View(), "40"+st.Cursor.Render(" "))
	require.NotEqual(t, st.Placeholder.Render("40"), "40", "placeholders are drawn unlike text")
}

// The bookings table says what each column is: BOOKED memory, the memory
// its processes have IN USE, and the time ELAPSED.
func TestBookingsShowMemoryInUse(t *testing.T) {
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
	for _, a := range m.data.attrs {
		if a.Partition != 0 {
			want[a.Partition] += a.MemoryUsed
		}
	}
	require.NotEmpty(t, want)
	for _, r := range m.bookings.table.rows {
		require.Equal(t, want[r.ID], r.inUse, "#%d", r.ID)
		c := m.bookings.cells(r, t0, m.bookings.table.cols)
		if want[r.ID] == 0 {
			require.Equal(t, "-", c.inUse)
		} else {
			require.Equal(t, core.FormatBytes(want[r.ID]), c.inUse)
			require.Equal(t, want[r.ID] > r.Bytes, c.over, "#%d", r.ID)
		}
	}
}

// The form shows, next to each GPU's bookable share, the memory
// physically free there, and warns when a booking would take more than
// that, naming who holds the rest.
func TestFormWarnsOfMemoryInUse(t *testing.T) {
	w := newWorld(t, 2)
	m := w.model(100, 30)
	// 30 GiB held on GPU 1 by a process with no booking.
	s, err := w.sim.Sample()
	require.NoError(t, err)
	for i := range s.Devices {
		s.Devices[i].Processes = nil
		s.Devices[i].MemoryUsed, s.Devices[i].MemoryFree = 0, s.Devices[i].MemoryTotal
	}
	d := &s.Devices[1]
	d.Processes = []gpu.Process{{PID: 4242, UID: carol.UID, User: "carol", Command: "python hog.py", MemoryUsed: 30 << 30, SM: 50}}
	d.MemoryUsed, d.MemoryFree = 30<<30, d.MemoryTotal-30<<30
	update(t, m, sampleMsg{sample: s})

	m = press(t, m, "n", "up", "1")
	v := m.View()
	require.Contains(t, v, "100% (80.0 GiB) bookable · 50.0 GiB physically free")
	require.NotContains(t, v, "⚠")

	m = press(t, m, "down", "50%")
	require.NotContains(t, m.View(), "⚠", "40 GiB fits in 50 GiB")
	m = press(t, m, "ctrl+u", "60GiB")
	require.Contains(t, m.View(), "⚠ only 50.0 GiB of GPU 1 is physically free; in use: carol 30.0 GiB unbooked")
	m = press(t, m, "ctrl+u", "70%")
	require.Contains(t, m.View(), "⚠ only 50.0 GiB")

	// A warning, not a refusal: the ledger admits by booked shares.
	m = press(t, m, "enter")
	require.Equal(t, browsing, m.mode)
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, 1, parts[0].Device)
}
