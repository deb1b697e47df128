package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

func live(t *testing.T, c *core.Client) []core.Partition {
	t.Helper()
	parts, err := c.List(false)
	require.NoError(t, err)
	return parts
}

func TestNewBookingLandsInTheLedgerAndTheTable(t *testing.T) {
	w := newWorld(t, 4)
	m := w.model(80, 24)
	require.Empty(t, live(t, w.client))

	m = press(t, m, "n")
	require.Equal(t, booking, m.mode)
	require.Equal(t, fieldMemory, m.form.focus)
	require.Equal(t, 3, m.form.fields, "no 'for user' field for an ordinary user")

	m = press(t, m, "shift+tab", "right", "tab", "40GiB", "tab", "right", "enter")
	require.Equal(t, browsing, m.mode, "form closes once booked: %s", m.form.err)

	parts := live(t, w.client)
	require.Len(t, parts, 1)
	p := parts[0]
	require.Equal(t, 1, p.Device)
	require.Equal(t, uint64(40<<30), p.Bytes)
	require.Equal(t, 2*time.Hour, p.Expires.Sub(p.Created))
	require.Equal(t, "alice", p.User)

	row, ok := m.bookings.selected()
	require.True(t, ok)
	require.Equal(t, p.ID, row.ID, "the new booking is shown and selected at once")
	require.Contains(t, m.status, fmt.Sprintf("Booked #%d", p.ID))
	require.Contains(t, m.View(), "2:00:00")
}

func TestBookingFormPicksDevicesAndPresets(t *testing.T) {
	w := newWorld(t, 4)
	w.book(bob, 3, "60%", 0, time.Hour)
	m := w.model(80, 24)

	m = press(t, m, "n")
	require.Equal(t, 0, m.form.devices[m.form.device].Device.Index, "starts on the freest GPU")
	m = press(t, m, "up") // to the GPU field
	require.Equal(t, fieldDevice, m.form.focus)
	m = press(t, m, "3")
	require.Equal(t, 3, m.form.devices[m.form.device].Device.Index)
	require.Contains(t, m.View(), "40% (32.0 GiB) free")
	m = press(t, m, "h")
	require.Equal(t, 2, m.form.devices[m.form.device].Device.Index)

	m = press(t, m, "down", "down") // duration
	require.Equal(t, fieldDuration, m.form.focus)
	require.Equal(t, "1h", m.form.duration.Value())
	m = press(t, m, "right", "right")
	require.Equal(t, "4h", m.form.duration.Value())
	m = press(t, m, "left")
	require.Equal(t, "2h", m.form.duration.Value())
	m = press(t, m, "ctrl+u", "90m")
	require.Equal(t, "90m", m.form.duration.Value(), "free entry")

	m = press(t, m, "esc")
	require.Equal(t, browsing, m.mode)
	require.Len(t, live(t, w.client), 1, "cancelling books nothing")
}

func TestBookingFormExplainsInvalidInputAndStaysOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string
		field field
		want  string
	}{
		{"memory not a number", []string{"lots", "enter"}, fieldMemory, "not a fraction"},
		{"memory empty", []string{"enter"}, fieldMemory, "empty memory share"},
		{"memory over 100%", []string{"150%", "enter"}, fieldMemory, "at most 100%"},
		{"more than is free", []string{"90%", "enter"}, fieldMemory, "has only 70% (56.0 GiB) free"},
		{"duration zero", []string{"10%", "tab", "ctrl+u", "0", "enter"}, fieldDuration, "must be positive"},
		{"duration garbage", []string{"10%", "tab", "ctrl+u", "soon", "enter"}, fieldDuration, "not seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1)
			w.book(bob, 0, "30%", 0, time.Hour)
			m := w.model(80, 24)
			m = press(t, m, append([]string{"n"}, tc.keys...)...)
			require.Equal(t, booking, m.mode, "form stays open")
			require.Contains(t, m.form.err, tc.want)
			require.Equal(t, tc.field, m.form.focus, "focus goes to the field to fix")
			require.Contains(t, m.View(), "✗ ")
			require.Len(t, live(t, w.client), 1, "ledger untouched")
		})
	}
}

func TestBookingRefusedByTheLedgerKeepsTheForm(t *testing.T) {
	w := newWorld(t, 1)
	m := w.model(80, 24)
	m = press(t, m, "n")
	// Someone else books most of the GPU while the form is open.
	w.book(bob, 0, "80%", 0, time.Hour)
	m = press(t, m, "50%", "enter")
	require.Equal(t, booking, m.mode)
	require.Contains(t, m.form.err, core.ErrOverbooked.Error())
	require.True(t, m.statusErr)
	require.Len(t, live(t, w.client), 1)
}

func TestRootBooksForSomeoneElse(t *testing.T) {
	w := newWorld(t, 1)
	w.client = w.as(root)
	m := w.model(80, 24)
	m = press(t, m, "n")
	require.Equal(t, 4, m.form.fields)
	require.Contains(t, m.View(), "For user")
	m = press(t, m, "10%", "tab", "tab", "2002", "enter")
	require.Equal(t, browsing, m.mode, m.form.err)
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, 2002, parts[0].UID)
}

// selectBooking moves the selection to the booking with that id.
func selectBooking(t *testing.T, m Model, id uint64) Model {
	t.Helper()
	m = press(t, m, "g")
	for range len(m.bookings.rows) {
		if r, ok := m.bookings.selected(); ok && r.ID == id {
			return m
		}
		m = press(t, m, "j")
	}
	t.Fatalf("booking #%d not in the table", id)
	return m
}

func TestReleaseAsksFirst(t *testing.T) {
	w := newWorld(t, 2)
	mine := w.book(alice, 0, "50%", 0, time.Hour)
	w.book(bob, 1, "50%", 0, 2*time.Hour)
	m := selectBooking(t, w.model(80, 24), mine.ID)

	m = press(t, m, "x")
	require.Equal(t, releasing, m.mode)
	require.Contains(t, m.View(), fmt.Sprintf("Release #%d", mine.ID))
	m = press(t, m, "n") // anything but y keeps it
	require.Equal(t, browsing, m.mode)
	require.Len(t, live(t, w.client), 2)
	require.Contains(t, m.status, "not released")

	m = press(t, m, "x", "y")
	require.Equal(t, browsing, m.mode)
	got, err := w.client.Get(mine.ID)
	require.NoError(t, err)
	require.Equal(t, storage.Released, got.State)
	require.Contains(t, m.status, fmt.Sprintf("Released #%d", mine.ID))
	r, _ := m.bookings.selected()
	require.Equal(t, storage.Released, r.State, "the row shows it at once")
	require.False(t, m.c.keys.Release.Enabled(), "nothing to release on an ended row")
}

func TestReleasingSomeoneElsesIsRefusedInTheStatusLine(t *testing.T) {
	w := newWorld(t, 1)
	theirs := w.book(bob, 0, "50%", 0, time.Hour)
	m := selectBooking(t, w.model(80, 24), theirs.ID)
	m = press(t, m, "x", "y")
	require.True(t, m.statusErr)
	require.Contains(t, m.status, core.ErrNotOwner.Error())
	require.Contains(t, m.View(), "not your booking")
	require.Len(t, live(t, w.client), 1)
}

func TestExtend(t *testing.T) {
	w := newWorld(t, 1)
	mine := w.book(alice, 0, "50%", 0, time.Hour)
	m := selectBooking(t, w.model(80, 24), mine.ID)

	m = press(t, m, "e")
	require.Equal(t, extending, m.mode)
	m = press(t, m, "ctrl+u", "never", "enter")
	require.Equal(t, extending, m.mode, "bad input keeps the prompt open")
	require.Contains(t, m.promptErr, "not seconds")
	require.Contains(t, m.View(), "✗ duration")

	m = press(t, m, "ctrl+u", "30m", "enter")
	require.Equal(t, browsing, m.mode)
	got, err := w.client.Get(mine.ID)
	require.NoError(t, err)
	require.Equal(t, mine.Expires.Add(30*time.Minute), got.Expires)
	require.Contains(t, m.status, "1:30:00 left")
	require.Contains(t, m.View(), "1:30:00")

	m = press(t, m, "e", "esc")
	require.Equal(t, browsing, m.mode)
}

func TestViewKeys(t *testing.T) {
	w := newWorld(t, 4)
	w.seed()
	m := w.model(80, 24)
	require.Len(t, m.bookings.rows, 5)
	require.Equal(t, uint64(4), m.bookings.rows[0].ID, "time left: the one ending soonest first")
	require.Equal(t, uint64(5), m.bookings.rows[4].ID, "ended ones last")

	t.Run("tab", func(t *testing.T) {
		m := press(t, m, "tab")
		require.Equal(t, processesTab, m.view)
		require.False(t, m.c.keys.Release.Enabled())
		require.False(t, m.c.keys.Extend.Enabled())
		v := m.View()
		require.Contains(t, v, "UNBOOKED")
		require.Contains(t, v, "OVER BUDGET #1")
		m = press(t, m, "tab")
		require.Equal(t, bookingsTab, m.view)
	})
	t.Run("mine", func(t *testing.T) {
		m := press(t, m, "m")
		require.True(t, m.mineOnly)
		require.Len(t, m.bookings.rows, 2)
		for _, r := range m.bookings.rows {
			require.Equal(t, "alice", r.User)
		}
		require.Contains(t, m.View(), "mine only")
		m = press(t, m, "tab")
		require.Len(t, m.procs.rows, 1)
		m = press(t, m, "m")
		require.Len(t, m.procs.rows, 4)
	})
	t.Run("sort", func(t *testing.T) {
		var orders []sortKey
		for range 4 {
			m = press(t, m, "s")
			orders = append(orders, m.sortBy)
		}
		require.Equal(t, []sortKey{byOwner, byDevice, byID, byTimeLeft}, orders)
		m := press(t, m, "s")
		require.Equal(t, "alice", m.bookings.rows[0].User)
		require.Equal(t, "carol", m.bookings.rows[4].User)
		require.Contains(t, m.View(), "sort: owner")
		m = press(t, m, "s")
		require.Equal(t, 0, m.bookings.rows[0].Device)
		m = press(t, m, "s")
		for i, r := range m.bookings.rows {
			require.Equal(t, uint64(i+1), r.ID)
		}
	})
	t.Run("filter", func(t *testing.T) {
		m := press(t, m, "/")
		require.Equal(t, filtering, m.mode)
		m = press(t, m, "bob")
		require.Len(t, m.bookings.rows, 2, "filters as you type")
		m = press(t, m, "enter")
		require.Equal(t, browsing, m.mode)
		require.Contains(t, m.View(), `filter "bob"`)
		m = press(t, m, "tab")
		require.Len(t, m.procs.rows, 2)
		m = press(t, m, "esc")
		require.Len(t, m.procs.rows, 4, "esc clears the filter")

		m = press(t, m, "tab", "/", "llama")
		require.Len(t, m.bookings.rows, 1, "a booking matches its processes' commands")
		require.Equal(t, uint64(1), m.bookings.rows[0].ID)
		m = press(t, m, "esc")
		require.Equal(t, browsing, m.mode)
		require.Len(t, m.bookings.rows, 5)

		m = press(t, m, "/", "#3", "enter")
		require.Len(t, m.bookings.rows, 1)
	})
	t.Run("help", func(t *testing.T) {
		m := press(t, m, "?")
		require.True(t, m.fullHelp)
		require.Contains(t, m.View(), "page down")
		m = press(t, m, "?")
		require.False(t, m.fullHelp)
	})
	t.Run("move", func(t *testing.T) {
		m := press(t, m, "j", "down")
		require.Equal(t, 2, m.bookings.cur.at)
		m = press(t, m, "k")
		require.Equal(t, 1, m.bookings.cur.at)
		m = press(t, m, "G")
		require.Equal(t, 4, m.bookings.cur.at)
		m = press(t, m, "j")
		require.Equal(t, 4, m.bookings.cur.at)
		m = press(t, m, "g", "up")
		require.Equal(t, 0, m.bookings.cur.at)
	})
	t.Run("quit", func(t *testing.T) {
		for _, k := range []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("q")}, {Type: tea.KeyCtrlC}} {
			_, cmd := m.Update(k)
			require.NotNil(t, cmd)
			require.Equal(t, tea.QuitMsg{}, cmd())
		}
		// ctrl+c quits from inside the form too, where q is just a letter.
		f := press(t, m, "n", "q")
		require.Equal(t, booking, f.mode)
		_, cmd := f.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
		require.Equal(t, tea.QuitMsg{}, cmd())
	})
}

func TestKeysTypedTogetherAreEachAKey(t *testing.T) {
	w := newWorld(t, 1)
	m := w.model(80, 24)
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n30%")})
	m = run(t, next.(Model), cmd)
	require.Equal(t, booking, m.mode)
	require.Equal(t, "30%", m.form.memory.Value())
	m = press(t, m, "enter")
	require.Len(t, live(t, w.client), 1)
}

func TestKeysApplyOnlyWhereTheyMeanSomething(t *testing.T) {
	w := newWorld(t, 1)
	m := w.model(80, 24)
	require.False(t, m.c.keys.Release.Enabled(), "no booking selected")
	require.True(t, m.c.keys.New.Enabled())
	m = press(t, m, "x", "e")
	require.Equal(t, browsing, m.mode)

	m = press(t, m, "n")
	require.False(t, m.c.keys.New.Enabled())
	require.True(t, m.c.keys.Submit.Enabled())
	help := m.help.ShortHelpView(m.c.keys.ShortHelp())
	require.Contains(t, help, "book")
	require.NotContains(t, help, "new booking")
	for _, b := range []key.Binding{m.c.keys.Mine, m.c.keys.Sort, m.c.keys.Filter} {
		require.False(t, b.Enabled())
	}
}

func TestOtherProcessesChangesAppear(t *testing.T) {
	w := newWorld(t, 2)
	m := w.model(80, 24)
	require.Empty(t, m.bookings.rows)
	w.book(bob, 1, "25%", 0, time.Hour)
	next, cmd := m.Update(ledgerChangedMsg{})
	m = run(t, next.(Model), cmd)
	require.Len(t, m.bookings.rows, 1)
	require.Contains(t, m.View(), "bob")
}

// A stream of change notices is read at once, then at most once per
// changeSpacing, and nothing is lost at the end of the stream.
func TestChangeNoticesAreSpaced(t *testing.T) {
	w := newWorld(t, 2)
	m := w.model(80, 24)
	next, first := m.Update(ledgerChangedMsg{})
	m = next.(Model)
	require.NotNil(t, first)
	w.book(bob, 1, "25%", 0, time.Hour)
	next, cmd := m.Update(ledgerChangedMsg{})
	m = next.(Model)
	m = run(t, m, cmd) // only re-arms the wait: no read yet
	require.Empty(t, m.bookings.rows)
	next, cmd = m.Update(changeSpacingMsg{})
	m = run(t, next.(Model), cmd)
	require.Len(t, m.bookings.rows, 1, "the held notice is read when the spacing ends")
	next, cmd = m.Update(changeSpacingMsg{})
	require.Nil(t, cmd, "no notice came meanwhile: nothing to read")
	_ = next
}

func TestTickRefreshesAndCountsDown(t *testing.T) {
	w := newWorld(t, 1)
	w.book(alice, 0, "50%", 0, time.Hour)
	m := w.model(80, 24)
	require.Contains(t, m.View(), "1:00:00")
	w.clock.Set(t0.Add(90 * time.Second))
	require.Contains(t, m.View(), "0:58:30", "countdowns come from the clock, not from a refresh")

	next, cmd := m.Update(tickMsg(t0))
	m = run(t, next.(Model), cmd)
	require.Equal(t, 2, len(m.gpus.history[0].last(10)), "a new reading at a new instant")

	w.clock.Set(t0.Add(time.Hour + time.Minute))
	next, cmd = m.Update(tickMsg(t0))
	m = run(t, next.(Model), cmd)
	require.Contains(t, m.View(), "expired")
}

func TestMonitorActsAndErrorsShowInTheStatusLine(t *testing.T) {
	w := newWorld(t, 1)
	acts := make(chan string, 1)
	opts := w.options()
	opts.Acts = acts
	m := New(opts)
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	acts <- "#3 expired; SIGTERM sent to pid 4242 (bob)"
	m = run(t, m, waitActCmd(acts))
	require.Contains(t, m.View(), "#3 expired; SIGTERM")
	m = update(t, m, clearStatusMsg{seq: m.statusSeq})
	require.Empty(t, m.status)

	m = update(t, m, sampleMsg{err: errors.New("nvml: GPU is lost")})
	require.True(t, m.statusErr)
	require.Contains(t, m.View(), "GPU is lost")
	m = update(t, m, ledgerMsg{err: fmt.Errorf("%w: another chronos process has held it for 3s", storage.ErrBusy)})
	require.Contains(t, m.View(), "the ledger is busy")
}

func TestEveryLineFitsTheTerminal(t *testing.T) {
	w := newWorld(t, 8)
	w.seed()
	for _, size := range [][2]int{{60, 16}, {80, 24}, {100, 30}, {140, 40}, {220, 60}, {40, 10}} {
		for _, keys := range [][]string{nil, {"tab"}, {"n"}, {"?"}, {"x"}, {"e"}, {"/", "bo"}} {
			m := press(t, w.model(size[0], size[1]), keys...)
			lines := strings.Split(m.View(), "\n")
			require.Len(t, lines, size[1], "%v after %v", size, keys)
			for i, line := range lines {
				require.Equal(t, size[0], ansi.StringWidth(line), "%v after %v, line %d: %q", size, keys, i, line)
			}
		}
	}
}

func TestTooSmall(t *testing.T) {
	w := newWorld(t, 1)
	m := w.model(59, 24)
	require.Contains(t, m.View(), "Terminal too small")
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 15})
	require.Contains(t, m.View(), "Terminal too small")
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	require.NotContains(t, m.View(), "Terminal too small")
}

func TestCountdownStillFormats(t *testing.T) {
	require.Equal(t, "0:00:01", Countdown(400*time.Millisecond))
	require.Equal(t, "1d+2:03:04", Countdown(26*time.Hour+3*time.Minute+4*time.Second))
	require.Equal(t, "0:00:00", Countdown(-time.Second))
}

// tickReads is what one tick at the clock's time asks to read.
func tickReads(t *testing.T, m Model) (Model, []string) {
	t.Helper()
	next, cmd := m.Update(tickMsg(t0))
	m = next.(Model)
	var reads []string
	for _, msg := range collect(cmd) {
		switch msg.(type) {
		case sampleMsg:
			reads = append(reads, "gpus")
		case ledgerMsg:
			reads = append(reads, "ledger")
		}
		next, _ := m.Update(msg)
		m = next.(Model)
	}
	return m, reads
}

func TestTickReadsOnlyWhatIsDue(t *testing.T) {
	w := newWorld(t, 1)
	w.book(alice, 0, "50%", 0, 5*time.Second)
	w.book(alice, 0, "10%", 0, time.Hour)
	m := w.model(80, 24)

	for _, step := range []struct {
		at   time.Duration
		want []string
	}{
		{time.Second, nil},
		{2 * time.Second, []string{"gpus"}},
		{3 * time.Second, nil},
		{5 * time.Second, []string{"gpus", "ledger"}}, // the first booking ended
		{6 * time.Second, nil},
		{14 * time.Second, []string{"gpus"}},
		{15 * time.Second, []string{"ledger"}}, // the safety net
	} {
		w.clock.Set(t0.Add(step.at))
		var reads []string
		m, reads = tickReads(t, m)
		require.ElementsMatch(t, step.want, reads, "at %s", step.at)
	}
	require.Contains(t, m.View(), "expired")
}
