package core

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A user whose home cannot be written (nobody's /nonexistent) still gets a
// log for a background wait: in a directory of their own in the temporary
// one, never in one another user made first.
func TestBackgroundWaitLogWithoutAHome(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_STATE_HOME", "")
	// A home under a file: no user, root included, can make it.
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	t.Setenv("HOME", filepath.Join(file, "home"))
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	log, err := BackgroundWaitLog(7, at)
	require.NoError(t, err)
	dir := filepath.Join(tmp, "chronos-"+strconv.Itoa(os.Getuid()))
	require.Equal(t, filepath.Join(dir, "wait-7-20300102T030405.log"), log)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	if os.Geteuid() != 0 {
		return // the rest needs another user's directory
	}
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err = BackgroundWaitLog(7, at)
	require.ErrorContains(t, err, "is not a private directory of uid 0")
}
