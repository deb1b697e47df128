//go:build testclock

package clock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A testclock build's system clock is shifted by a fixed offset and by the
// duration in a file; a write to the file moves its time, and fires its
// timers, within a few milliseconds.
func TestShiftedClockFollowsItsFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "shift")
	require.NoError(t, os.WriteFile(file, []byte("0s"), 0o644))
	s := &shifted{fixed: 24 * time.Hour, file: file}
	require.WithinDuration(t, time.Now().Add(24*time.Hour), s.Now(), time.Second, "the fixed offset")

	tm := s.NewTimer(time.Hour)
	tk := s.NewTicker(10 * time.Minute)
	select {
	case <-tm.C():
		t.Fatal("an hour has not passed")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, os.WriteFile(file, []byte("61m\n"), 0o644))
	select {
	case at := <-tm.C():
		require.WithinDuration(t, time.Now().Add(25*time.Hour+time.Minute), at, time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the timer did not fire after the clock moved an hour")
	}
	select {
	case <-tk.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the ticker did not tick")
	}
	tk.Stop()

	require.NoError(t, os.WriteFile(file, []byte("1m"), 0o644))
	s.mu.Lock()
	s.readAt = time.Time{} // read the file again now
	s.mu.Unlock()
	require.WithinDuration(t, time.Now().Add(25*time.Hour+time.Minute), s.Now(), time.Second, "it never goes back")
}
