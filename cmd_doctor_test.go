package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// chronos doctor: 0 on a healthy ledger, 1 with the problems named on a
// damaged one, and --repair brings it back (here from the rolling backup,
// which the first booking wrote).
func TestDoctorCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "not created yet")
	for range 3 {
		require.Equal(t, 0, cli(t, db, "create", "0", "0.1", "1h").code)
	}
	r = cli(t, db, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "healthy. 3 bookings (3 live)")
	require.FileExists(t, storage.BackupPath(db))

	require.NoError(t, os.WriteFile(db, make([]byte, 32<<10), 0o600))
	r = cli(t, db, "doctor")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "problem")
	require.Contains(t, r.stdout, "chronos doctor --repair")
	r = cli(t, db, "doctor", "--json")
	require.Equal(t, 1, r.code)
	var d storage.Diagnosis
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	require.False(t, d.Healthy)
	require.NotEmpty(t, d.Problems)

	r = cli(t, db, "doctor", "--repair")
	require.Equal(t, 0, r.code, "stdout %s stderr %s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "restored from the backup")
	require.Contains(t, r.stdout, "healthy")
	// The backup was taken at the first write (it is refreshed at most every
	// ten minutes): the two bookings made after it went with the file.
	require.Len(t, listJSON(t, db), 1)
	require.NotContains(t, r.stderr, "panic")
}
