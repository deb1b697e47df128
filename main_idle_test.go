package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// A hold shows in list, --json and the audit trail, and so does what a
// monitor measured (bad input to hold is in TestBadInputChangesNothing).
func TestHoldAndIdleOnTheCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.5", "8h").code)

	// What a monitor would have recorded: idle for 50 minutes, just now.
	now := time.Now()
	require.NoError(t, storage.New(db).Update(func(tx *storage.Tx) error {
		return tx.PutBookingUsage(storage.BookingUsage{Partition: 1, Through: now, Idle: 50 * time.Minute, IdleFor: 50 * time.Minute, MemoryPeak: 1 << 30})
	}))
	r := chronos(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID\s.*\sIDLE\s+STATE\s+COMPUTE$`, r.stdout)
	require.Regexp(t, `(?m)^1\s.*\s50m\s+live\s+-$`, r.stdout)
	parts := listJSON(t, db)
	require.True(t, parts[0].Idle)
	require.Equal(t, 3000.0, parts[0].IdleSeconds)
	require.Equal(t, uint64(1<<30), parts[0].Usage.MemoryPeak)

	r = chronos(t, db, "hold", "1", "2h", "--reason", "tokenizing on CPU")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Held 1 until")
	require.Regexp(t, `(?m)^1\s.*\s50m \(held 2h\)\s+live\s+-$`, chronos(t, db, "list").stdout)
	parts = listJSON(t, db)
	require.Equal(t, 1, parts[0].Usage.Holds)
	require.InDelta(t, now.Add(2*time.Hour).Unix(), parts[0].Usage.HeldUntil.Unix(), 5)
	require.Regexp(t, `held\s+#1 by root: for 2h`, chronos(t, db, "events").stdout)
}
