package tui

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/tui/form"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// enqueue puts who's request in the waiting line, with this test process
// as its waiter (alive as long as the test).
func (w *world) enqueue(who domain.Identity, device int, memory string, d time.Duration) admission.QueueEntry {
	w.t.Helper()
	mem, err := human.ParseMemory(memory)
	require.NoError(w.t, err)
	p, e, err := w.as(who).Enqueue(core.Request{Device: device, Memory: mem, Duration: d}, admission.WaitOptions{})
	require.NoError(w.t, err)
	require.Nil(w.t, p, "it was meant to wait")
	return *e
}

// line is the seeded lab (see seed) with GPU 0 full, alice and carol
// waiting, and bob's booking ahead on GPU 2.
func (w *world) line() {
	w.seed()
	w.book(bob, 0, "50%", 0, 3*time.Hour)
	w.enqueue(alice, 0, "30%", 2*time.Hour)
	w.enqueue(carol, 1, "60%", time.Hour)
	mem, _ := human.ParseMemory("40%")
	_, err := w.as(bob).Create(core.Request{Device: 2, Memory: mem, Duration: time.Hour, Start: t0.Add(2 * time.Hour)})
	require.NoError(w.t, err)
}

func waiting(t *testing.T, c *core.Client) []admission.QueueEntry {
	t.Helper()
	q, err := c.Queue()
	require.NoError(t, err)
	return q
}

// The form says why a request does not fit now and when it would; enter
// again joins the line with the app as its waiter, and the request is
// booked when the holder releases.
func TestFormOffersToWaitInLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	held := w.book(bob, 0, "80%", 0, time.Hour)
	m := w.model(80, 24)

	m = press(t, m, "n", "50%", "enter")
	require.Equal(t, booking, m.mode, "the form stays open")
	require.NotNil(t, m.form.Later)
	require.Contains(t, m.form.Err, "GPU 0 has 20% (16.0 GiB) free, 50% asked")
	require.Contains(t, m.View(), "It would fit at "+human.FormatTime(held.Expires, t0)+": enter waits in line")
	require.Contains(t, m.footer(), "wait in line")
	require.Empty(t, waiting(t, w.client), "nothing joined yet")

	// A change to the request takes the offer back: it was for that one.
	m = press(t, m, "backspace", "%")
	require.Nil(t, m.form.Later)
	require.Contains(t, m.footer(), "enter book")
	m = press(t, m, "enter", "enter")

	require.Equal(t, browsing, m.mode)
	require.Equal(t, tab(m.queue), m.current(), "the Queue tab shows where it waits")
	line := waiting(t, w.client)
	require.Len(t, line, 1)
	require.Equal(t, "alice", line[0].User)
	require.Equal(t, os.Getpid(), line[0].Waiter.PID, "the app is its waiter: it leaves the line when the app is gone")
	require.Contains(t, m.status.text, fmt.Sprintf("Request #%d waits at position 1", line[0].ID))
	row, ok := m.queue.Selected()
	require.True(t, ok)
	require.Equal(t, line[0].ID, row.ID)

	_, err := w.as(bob).Release(held.ID)
	require.NoError(t, err)
	require.Empty(t, waiting(t, w.client), "the release booked it")
	m = update(t, m, ledgerChangedMsg{})
	require.Empty(t, m.queue.Table.Rows)
	booked := live(t, w.client)
	require.Len(t, booked, 1)
	requireLineCut(t, m.View(), fmt.Sprintf("✓ %s your booking #%d: booked from request #%d, 50%% of GPU 0 until %s",
		booked[0].Created.Local().Format("15:04"), booked[0].ID, line[0].ID, human.FormatTime(booked[0].Expires, t0)),
		"the app says when a request it waited for is booked")
	require.Equal(t, fmt.Sprintf("Request #%d is booked: #%d", line[0].ID, booked[0].ID), m.status.text)
	m = update(t, m, ledgerChangedMsg{})
	require.Len(t, m.notices, 1, "once")
	m = press(t, m, "tab")
	require.Equal(t, tab(m.bookings), m.current())
	rows := m.bookings.Table.Rows
	require.True(t, rows[0].Mine && rows[0].Live, "alice's booking is shown: %+v", rows)
}

// A start typed in the form is read by the parser --at uses; a booking
// ahead shows its start in the table and on the GPU panel, and stays
// releasable.
func TestFormBooksAhead(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(120, 40)
	m = press(t, m, "n", "50%", "tab", "tab", "yesterday", "enter")
	require.Equal(t, form.FieldStart, m.form.Focus)
	require.NotEmpty(t, m.form.Err)
	require.Empty(t, live(t, w.client))

	m = press(t, m, "ctrl+u", "+2h", "enter")
	require.Equal(t, browsing, m.mode, m.form)
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, t0.Add(2*time.Hour), parts[0].Start)

	start := widget.StartClock(parts[0].Start, t0)
	v := m.View()
	// "starts 11:30" that day; "on Sat 01:30" where 11:30 UTC is the next.
	require.Regexp(t, `(starts|on) `+regexp.QuoteMeta(start), v)
	require.Contains(t, v, "next: alice 50% at "+start)
	require.True(t, m.keys.Release.Enabled(), "a booking ahead can be released")
	press(t, m, "x", "y")
	require.Empty(t, live(t, w.client))
}

// x on one's own waiting request asks, then takes it out of the line;
// on someone else's it is refused at once.
func TestQueueTabCancelsOnlyOwnRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.book(bob, 0, "100%", 0, time.Hour)
	mine := w.enqueue(alice, 0, "50%", time.Hour)
	w.clock.Set(t0.Add(time.Second))
	theirs := w.enqueue(carol, 0, "50%", time.Hour)
	m := press(t, w.model(80, 24), "tab", "tab")
	require.Equal(t, tab(m.queue), m.current())
	require.Equal(t, "Queue (2)", m.queue.Title())
	require.Equal(t, []uint64{mine.ID, theirs.ID}, []uint64{m.queue.Table.Rows[0].ID, m.queue.Table.Rows[1].ID}, "in fair-share order")
	require.True(t, m.queue.Table.Rows[0].Mine)
	require.Contains(t, m.View(), " •")

	m = press(t, m, "down", "x")
	require.Equal(t, browsing, m.mode)
	require.True(t, m.status.isErr)
	require.Contains(t, m.status.text, fmt.Sprintf("request #%d is carol's", theirs.ID))
	require.Len(t, waiting(t, w.client), 2)

	m = press(t, m, "up", "x")
	require.Equal(t, cancelling, m.mode)
	m = press(t, m, "n")
	require.Len(t, waiting(t, w.client), 2, "any other key keeps it")
	m = press(t, m, "x", "y")
	line := waiting(t, w.client)
	require.Len(t, line, 1)
	require.Equal(t, theirs.ID, line[0].ID)
	require.Contains(t, m.status.text, fmt.Sprintf("Request #%d left the line", mine.ID))
	require.Len(t, m.queue.Table.Rows, 1)
}

// The line is read only while its tab is shown.
func TestQueueReadOnlyWhenShown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.book(bob, 0, "100%", 0, time.Hour)
	w.enqueue(alice, 0, "50%", time.Hour)
	m := w.model(80, 24)
	for _, msg := range collect(m.load()) {
		require.False(t, msg.(ledgerMsg).withQueue)
	}
	require.Equal(t, "Queue", m.queue.Title(), "not counted: not read")
	m = press(t, m, "tab", "tab")
	for _, msg := range collect(m.load()) {
		require.True(t, msg.(ledgerMsg).withQueue)
	}
	require.Equal(t, "Queue (1)", m.queue.Title())
	m = press(t, m, "tab")
	require.Empty(t, m.data.Queue, "dropped once off screen")
}

// TestGoldenQueue is the Queue tab and the form offering to wait in line,
// at the sizes the app must read at. Regenerate with:
// go test ./tui -run TestGoldenQueue -update
func TestGoldenQueue(t *testing.T) {
	if elsewhereThanUTC(t) {
		return
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, keys := range [][]string{{"tab", "tab"}, {"n", "up", "0", "down", "30%", "enter"}} {
			name := "queue"
			if keys[0] == "n" {
				name = "form"
			}
			t.Run(fmt.Sprintf("%dx%d_%s", size[0], size[1], name), func(t *testing.T) {
				w := newWorld(t, 4)
				w.line()
				m := press(t, w.model(size[0], size[1]), keys...)
				golden.RequireEqual(t, []byte(m.View()))
			})
		}
	}
}

// requireLineCut checks that view shows want on a line, or wrapped over
// the lines that follow it, or as much of it as the screen's width holds,
// cut with "…": an end on another day (in the test's zone) prints its
// date, which may not fit on one line.
func requireLineCut(t *testing.T, view, want string, msgAndArgs ...any) {
	t.Helper()
	lines := strings.Split(ansi.Strip(view), "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, " ")
		if strings.Contains(line, want) {
			return
		}
		for j := i + 1; j < len(lines) && j <= i+noticeMaxLines; j++ {
			line += " " + strings.TrimSpace(lines[j])
			if strings.Contains(line, want) {
				return
			}
		}
		line = strings.TrimRight(lines[i], " ")
		if cut, ok := strings.CutSuffix(line, "…"); ok && len(cut) > len(want)/2 {
			if i := strings.Index(cut, want[:len(want)/2]); i >= 0 && strings.HasPrefix(want, cut[i:]) {
				return
			}
		}
	}
	require.Fail(t, "no line shows "+want, msgAndArgs...)
}
