package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// q with a request in line, then b: the app closes and says which process
// keeps waiting in the background and where it logs; that process (a
// `chronos create --wait --request`, in a session of its own) holds the
// same request in the same place, and when room comes it is booked there.
func TestAppLeavesItsRequestWaitingInTheBackground(t *testing.T) {
	t.Parallel()
	bin, db := rootsLedgerForAll(t, "1")
	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	state, err := os.MkdirTemp("", "chronos-state-") // outside the test's own 0700 directory
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	require.NoError(t, os.Chmod(state, 0o777)) // nobody's state directory
	env := append(binEnv(db), "GOCOVERDIR="+cover, "HOME=/nonexistent", "XDG_STATE_HOME="+state, "PS1=$ ")
	s := newTmux(t, 220, 30, env...) // the farewell on one line
	s.keys("runuser -u nobody -- "+bin, "Enter")
	s.waitFor("GPU 1  Simulated")
	pid, log := waitInBackground(t, s)
	require.Equal(t, filepath.Join(state, "chronos"), filepath.Dir(log))

	r := chronos(t, db, "queue")
	require.Regexp(t, `(?m)^1\s+1\s+nobody\s+0\s+50%\s+1h`, r.stdout, "the same request, first in line")
	require.NoError(t, syscall.Kill(pid, 0), "its waiter outlives the app")

	require.Equal(t, 0, chronos(t, db, "release", "1").code)
	var logged []byte
	require.Eventually(t, func() bool {
		logged, _ = os.ReadFile(log)
		return strings.Contains(string(logged), "Booked 2:")
	}, patience, 50*time.Millisecond, "the background waiter is booked and says so in its log")
	require.Contains(t, string(logged), "waiting for request 1 (pid "+strconv.Itoa(pid)+")")
	parts := listJSON(t, db)
	require.Len(t, parts, 1)
	require.Equal(t, "nobody", parts[0].Owner)
}
