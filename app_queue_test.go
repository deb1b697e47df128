package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// In the real binary, as nobody while root holds all of GPU 0: the form
// says the request would only fit later and joins the line on a second
// enter; the Queue tab shows it; when the holder releases, the release
// books it, and the app shows the booking.
func TestAppJoinsTheLineFromTheForm(t *testing.T) {
	t.Parallel()
	bin, db := rootsLedgerForAll(t, "1")
	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	env := append(binEnv(db), "GOCOVERDIR="+cover, "HOME=/nonexistent", "PS1=$ ")
	s := newTmux(t, 100, 30, env...)
	s.keys("runuser -u nobody -- "+bin, "Enter")
	s.waitFor("nobody")
	s.waitFor("GPU 1  Simulated")

	// GPU 0, 50%, enter: refused with why and when; enter again waits.
	s.keys("n")
	s.waitFor("New booking")
	s.keys("Up", "0", "Down", "5", "0", "%", "Enter")
	s.waitFor("enter waits in line")
	s.waitFor("GPU 0 has 0% (0 MiB) free, 50% asked")
	s.keys("Enter")
	// The status line says so for a few seconds, then clears: look for it
	// first; the Queue tab's count stays.
	s.waitFor("waits at position 1")
	s.waitFor("Queue (1)")
	r := chronos(t, db, "queue")
	require.Regexp(t, `(?m)^1\s+1\s+nobody\s+0\s+50%\s+1h`, r.stdout)

	require.Equal(t, 0, chronos(t, db, "release", "1").code)
	s.waitFor("Queue (0)")
	parts := listJSON(t, db)
	require.Len(t, parts, 1)
	require.Equal(t, "nobody", parts[0].Owner)
	s.keys("Tab")
	scr := s.waitFor("▸ Bookings (2)") // the released one stays a while
	require.Regexp(t, `#2\s+nobody\s+0\s+50%`, scr)
	s.keys("q")
}
