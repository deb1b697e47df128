package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// joined is the screen's text with its lines run together, as a person
// reads wrapped text.
func joined(view string) string {
	return strings.Join(strings.Fields(ansi.Strip(view)), " ")
}

// A notice longer than the screen is wide wraps, whole words kept, and
// the screen keeps its height.
func TestLongNoticeWraps(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	p := w.book(alice, 0, "50%", 10*time.Minute, time.Hour)
	m := w.model(80, 24)
	detail := "idle for 3m on GPU 0: it will be released after 30m idle (in 27m) — do GPU work, or `chronos hold 1 2h --reason ...` to keep it"
	w.record(p.ID, domain.EventIdle, detail)
	reread(t, m)
	v := m.View()
	require.Equal(t, 23, strings.Count(v, "\n"), "the height stays")
	require.Contains(t, joined(v), "your booking #1: "+detail, "read in full")
	header := ansi.Strip(v)[:strings.Index(ansi.Strip(v), "GPU 0 ")]
	require.NotContains(t, header, "…", "nothing cut")
	for _, l := range strings.Split(v, "\n") {
		require.LessOrEqual(t, ansi.StringWidth(l), 80)
	}
}

// A long status wraps upward into the empty lines under the table, so the
// table does not move for it; the footer stays the last line.
func TestLongStatusWrapsIntoFreeLines(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.book(alice, 0, "50%", 10*time.Minute, time.Hour)
	m := w.model(80, 24)
	before := strings.Split(ansi.Strip(m.View()), "\n")
	text := "unbooked (bob) pid 4200096: python -m vllm.entrypoints.api_server --model mistralai/Mistral-7B-Instruct-v0.2 --port 8000 on GPU 1"
	update(t, m, actMsg(text))
	after := strings.Split(ansi.Strip(m.View()), "\n")
	require.Len(t, after, 24)
	require.Contains(t, joined(strings.Join(after, "\n")), text, "read in full")
	require.Equal(t, before[:len(before)-4], after[:len(after)-4], "nothing above the free lines moved")
	require.Equal(t, before[len(before)-1], after[len(after)-1], "the footer stays last")
}

// At 200×60 the extra width goes to content: the GPU bars grow past the 40
// cells of a 120-column screen, and the bookings table gets a COMMAND
// column that shows what each booking runs, in full.
func TestWideTerminalGivesRoomToBarsAndCommands(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.seed()
	barCells := func(m *Model) int {
		line := lineWith(t, ansi.Strip(m.View()), "alice 50%") // GPU 0's mem line
		return strings.Count(line, "█") + strings.Count(line, "▒") + strings.Count(line, "░")
	}
	require.Equal(t, 40, barCells(w.model(120, 40)))
	m := w.model(200, 60)
	require.Equal(t, 60, barCells(m))

	require.Contains(t, lineWith(t, ansi.Strip(m.View()), "ELAPSED"), "COMMAND")
	var train string
	for _, a := range m.data.Attrs {
		if a.User == "alice" {
			train = a.Command
		}
	}
	require.Greater(t, len(train), 30, "a command longer than a narrow column")
	require.Contains(t, lineWith(t, ansi.Strip(m.View()), "#1 "), train, "in full")
	require.NotContains(t, lineWith(t, ansi.Strip(w.model(120, 40).View()), "ELAPSED"), "COMMAND", "no room for it at 120")
}
