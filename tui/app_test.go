package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/tui/form"
)

func live(t *testing.T, c *core.Client) []core.Partition {
	t.Helper()
	parts, err := c.List(false)
	require.NoError(t, err)
	return parts
}

func TestNewBookingLandsInTheLedgerAndTheTable(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	m := w.model(80, 24)
	require.Empty(t, live(t, w.client))

	m = press(t, m, "n")
	require.Equal(t, booking, m.mode)
	require.Equal(t, form.FieldMemory, m.form.Focus)
	require.Equal(t, 4, m.form.Fields, "no 'for user' field for an ordinary user")

	m = press(t, m, "shift+tab", "right", "tab", "40GiB", "tab", "right", "enter")
	require.Equal(t, browsing, m.mode, "form closes once booked")

	parts := live(t, w.client)
	require.Len(t, parts, 1)
	p := parts[0]
	require.Equal(t, 1, p.Device)
	require.Equal(t, uint64(40<<30), p.Bytes)
	require.Equal(t, 2*time.Hour, p.Expires.Sub(p.Created))
	require.Equal(t, "alice", p.User)

	row, ok := m.bookings.Selected()
	require.True(t, ok)
	require.Equal(t, p.ID, row.ID, "the new booking is shown and selected at once")
	require.Contains(t, m.status.text, fmt.Sprintf("Booked #%d", p.ID))
	require.Contains(t, m.View(), "2h00m")
}

func TestBookingFormPicksDevicesAndPresets(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.book(bob, 3, "60%", 0, time.Hour)
	m := w.model(80, 24)

	m = press(t, m, "n")
	require.Equal(t, 0, m.form.Devices[m.form.Device].Device.Index, "starts on the freest GPU")
	m = press(t, m, "up") // to the GPU field
	require.Equal(t, form.FieldDevice, m.form.Focus)
	m = press(t, m, "3")
	require.Equal(t, 3, m.form.Devices[m.form.Device].Device.Index)
	require.Contains(t, m.View(), "40% (32.0 GiB) bookable")
	m = press(t, m, "h")
	require.Equal(t, 2, m.form.Devices[m.form.Device].Device.Index)

	m = press(t, m, "down", "down") // duration
	require.Equal(t, form.FieldDuration, m.form.Focus)
	require.Equal(t, "1h", m.form.Duration.Value())
	m = press(t, m, "right", "right")
	require.Equal(t, "4h", m.form.Duration.Value())
	m = press(t, m, "left")
	require.Equal(t, "2h", m.form.Duration.Value())
	m = press(t, m, "ctrl+u", "90m")
	require.Equal(t, "90m", m.form.Duration.Value(), "free entry")

	m = press(t, m, "esc")
	require.Equal(t, browsing, m.mode)
	require.Len(t, live(t, w.client), 1, "cancelling books nothing")
}

func TestBookingFormExplainsInvalidInputAndStaysOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		keys  []string
		field form.Field
		want  string
	}{
		{"memory not a number", []string{"lots", "enter"}, form.FieldMemory, "not a fraction"},
		{"memory empty", []string{"enter"}, form.FieldMemory, "empty memory share"},
		{"memory over 100%", []string{"150%", "enter"}, form.FieldMemory, "at most 100%"},
		{"more than is free", []string{"90%", "enter"}, form.FieldMemory, "GPU 0 has 70% (56.0 GiB) free, 90% asked"},
		{"duration zero", []string{"10%", "tab", "ctrl+u", "0", "enter"}, form.FieldDuration, "must be positive"},
		{"duration garbage", []string{"10%", "tab", "ctrl+u", "soon", "enter"}, form.FieldDuration, "not seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1)
			w.book(bob, 0, "30%", 0, time.Hour)
			m := w.model(80, 24)
			m = press(t, m, append([]string{"n"}, tc.keys...)...)
			require.Equal(t, booking, m.mode, "form stays open")
			require.Contains(t, m.form.Err, tc.want)
			require.Equal(t, tc.field, m.form.Focus, "focus goes to the field to fix")
			require.Contains(t, m.View(), "✗ ")
			require.Len(t, live(t, w.client), 1, "ledger untouched")
		})
	}
}

func TestBookingRefusedByTheLedgerKeepsTheForm(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(80, 24)
	m = press(t, m, "n")
	// Someone else books most of the GPU while the form is open.
	w.book(bob, 0, "80%", 0, time.Hour)
	m = press(t, m, "50%", "enter")
	require.Equal(t, booking, m.mode)
	require.Contains(t, m.form.Err, domain.ErrOverbooked.Error())
	require.Empty(t, m.status.text, "the form says it; the status line does not repeat it")
	require.Len(t, live(t, w.client), 1)
}

func TestRootBooksForSomeoneElse(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.client = w.as(root)
	m := w.model(80, 24)
	m = press(t, m, "n")
	require.Equal(t, 5, m.form.Fields)
	require.Contains(t, m.View(), "For user")
	m = press(t, m, "10%", "tab", "tab", "tab", "2002", "enter")
	require.Equal(t, browsing, m.mode)
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, 2002, parts[0].UID)
}

// selectBooking moves the selection to the booking with that id.
func selectBooking(t *testing.T, m *Model, id uint64) *Model {
	t.Helper()
	m = press(t, m, "g")
	for range len(m.bookings.Table.Rows) {
		if r, ok := m.bookings.Selected(); ok && r.ID == id {
			return m
		}
		m = press(t, m, "j")
	}
	t.Fatalf("booking #%d not in the table", id)
	return m
}

func TestReleaseAsksFirst(t *testing.T) {
	t.Parallel()
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
	require.Contains(t, m.status.text, "not released")

	m = press(t, m, "x", "y")
	require.Equal(t, browsing, m.mode)
	got, err := w.client.Get(mine.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Released, got.State)
	require.Contains(t, m.status.text, fmt.Sprintf("Released #%d", mine.ID))
	r, _ := m.bookings.Selected()
	require.Equal(t, domain.Released, r.State, "the row shows it at once")
	require.False(t, m.keys.Release.Enabled(), "nothing to release on an ended row")
}

// x or e on someone else's booking says at once that it is not theirs: no
// prompt to answer first.
func TestSomeoneElsesBookingIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"x", "e"} {
		t.Run(k, func(t *testing.T) {
			w := newWorld(t, 1)
			theirs := w.book(bob, 0, "50%", 0, time.Hour)
			m := selectBooking(t, w.model(80, 24), theirs.ID)
			m = press(t, m, k)
			require.Equal(t, browsing, m.mode, "no prompt")
			require.True(t, m.status.isErr)
			require.Contains(t, m.status.text, domain.ErrNotOwner.Error())
			require.Contains(t, m.View(), fmt.Sprintf("✗ not your booking: #%d is bob's", theirs.ID))
			press(t, m, "y", "1", "enter")
			require.Len(t, live(t, w.client), 1)
			got, err := w.client.Get(theirs.ID)
			require.NoError(t, err)
			require.Equal(t, theirs.Expires, got.Expires)
		})
	}
}

// Root may act on anyone's booking, so root is asked as for its own.
func TestRootReleasesAnyonesAfterAsking(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	theirs := w.book(bob, 0, "50%", 0, time.Hour)
	w.client = w.as(root)
	m := selectBooking(t, w.model(80, 24), theirs.ID)
	m = press(t, m, "x")
	require.Equal(t, releasing, m.mode)
	press(t, m, "y")
	require.Empty(t, live(t, w.client))
}

func TestExtend(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	mine := w.book(alice, 0, "50%", 0, time.Hour)
	m := selectBooking(t, w.model(80, 24), mine.ID)

	m = press(t, m, "e")
	require.Equal(t, extending, m.mode)
	m = press(t, m, "ctrl+u", "never", "enter")
	require.Equal(t, extending, m.mode, "bad input keeps the prompt open")
	require.Contains(t, m.prompt.Err, "not seconds")
	require.Contains(t, m.View(), "✗ duration")

	m = press(t, m, "ctrl+u", "30m", "enter")
	require.Equal(t, browsing, m.mode)
	got, err := w.client.Get(mine.ID)
	require.NoError(t, err)
	require.Equal(t, mine.Expires.Add(30*time.Minute), got.Expires)
	require.Contains(t, m.status.text, "1h30m left")
	require.Contains(t, m.View(), "1h30m")

	m = press(t, m, "e", "esc")
	require.Equal(t, browsing, m.mode)
}

// The form books several GPUs as one booking: space marks GPUs, and on
// "any" + asks for more of them.
func TestBookingFormBooksSeveralGPUs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	m := w.model(100, 30)
	m = press(t, m, "n", "up", "1", " ", "3", " ")
	require.Equal(t, map[int]bool{1: true, 3: true}, m.form.Marked)
	require.Contains(t, m.View(), "GPU 1,3 as one booking")
	m = press(t, m, "1", " ", "1", " ") // out and back in
	m = press(t, m, "tab", "25%", "enter")
	require.Equal(t, browsing, m.mode, "booked")
	parts := live(t, w.client)
	require.Len(t, parts, 1)
	require.Equal(t, []int{1, 3}, parts[0].GPUs())
	require.Contains(t, m.View(), "1,3", "the table's one row names both")

	m = press(t, m, "n", "up", "+", "+")
	require.Equal(t, 3, m.form.Count)
	require.Contains(t, m.View(), "any×3")
	m = press(t, m, "-", "tab", "100%", "enter")
	require.Equal(t, browsing, m.mode, "booked")
	parts = live(t, w.client)
	require.Len(t, parts, 2)
	require.Len(t, parts[1].GPUs(), 2, "any×2: two GPUs")
	require.NotContains(t, parts[1].GPUs(), 1, "GPU 1 is a quarter booked")
	require.NotContains(t, parts[1].GPUs(), 3)
}
