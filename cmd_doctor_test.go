package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
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
	t.Parallel()
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
	d := doctorJSON(t, db, 1)
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

// A flipped byte in the newest meta page makes the ledger read as it was
// before its last write: writes are refused, and reads show what can be
// read with a warning that it may be old.
func TestRolledBackLedgerWarnsReaders(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.25", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "0", "0.5", "1h").code)
	r := cli(t, db, "list")
	require.Empty(t, r.stderr)
	page := flipNewestMeta(t, db)
	warning := fmt.Sprintf("chronos: warning: the ledger's newest write may be missing: meta page %d of %s is damaged; run `chronos doctor`\n", page, db)

	r = cli(t, db, "list", "-o", "ids")
	require.Equal(t, 0, r.code)
	require.Equal(t, "1\n", r.stdout, "the older state, without booking 2")
	require.Equal(t, warning, r.stderr)
	r = cli(t, db, "available", "0")
	require.Equal(t, 0, r.code)
	require.Equal(t, "75% (60.0 GiB) free on GPU 0\n", r.stdout)
	require.Equal(t, warning, r.stderr)
	r = cli(t, db, "create", "0", "0.1", "1h")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, "meta page")
}

// flipNewestMeta damages the newest of a ledger file's two meta pages (its
// root page id, which the page's checksum covers) and says which it was.
func flipNewestMeta(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	const header, pageSize, txid, root = 16, 8, 48, 16 // bbolt's page header and meta fields
	size := int(binary.LittleEndian.Uint32(data[header+pageSize:]))
	newest := 0
	if binary.LittleEndian.Uint64(data[size+header+txid:]) > binary.LittleEndian.Uint64(data[header+txid:]) {
		newest = 1
	}
	data[newest*size+header+root+4] ^= 0x01
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return newest
}

// A backup cut short is damage doctor reports with exit 1, saying that the
// ledger itself is healthy.
func TestDoctorOnDamagedBackup(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.1", "1h").code)
	require.FileExists(t, storage.BackupPath(db))
	r := cli(t, db, "doctor")
	require.Equal(t, 0, r.code, r.stdout)
	require.NoError(t, os.Truncate(storage.BackupPath(db), 12288))

	r = cli(t, db, "doctor")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "healthy. 1 bookings")
	require.Contains(t, r.stdout, "The backup is damaged; the ledger itself is healthy.")
	d := doctorJSON(t, db, 1)
	require.True(t, d.Healthy)
	require.True(t, d.BackupDamaged)

	require.NoError(t, os.Remove(storage.BackupPath(db)))
	require.Equal(t, 0, cli(t, db, "doctor").code, "no backup is no damage")
}

// doctorJSON runs doctor --json on db, expecting exit status code.
func doctorJSON(t *testing.T, db string, code int) storage.Diagnosis {
	t.Helper()
	r := cli(t, db, "doctor", "--json")
	require.Equal(t, code, r.code, r.stderr)
	var d storage.Diagnosis
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	return d
}
