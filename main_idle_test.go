package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// chronos hold: bad input is refused in words and changes nothing; a good
// hold shows in list, --json and the audit trail.
func TestHoldAndIdleOnTheCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.5", "8h").code)
	before, err := os.ReadFile(db)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"hold", "1", "2h"}, 2, "a hold needs a reason"},
		{[]string{"hold", "1", "2h", "--reason", " "}, 2, "a hold needs a reason"},
		{[]string{"hold", "1", "5h", "--reason", "x"}, 1, "the most is 4h"},
		{[]string{"hold", "1", "1h", "--reason", "a\x1b[2Jb"}, 2, "holds control characters"},
		{[]string{"hold", "7", "1h", "--reason", "x"}, 1, "no such booking: 7"},
		{[]string{"hold", "1", "--reason", "x"}, 2, "accepts 2 arg(s)"},
		{[]string{"hold", "1", "-1h", "--reason", "x"}, 2, "negative values are not allowed"},
		{[]string{"policy", "set", "reclaim=when-waiting"}, 2, "needs the waiting line (issue 12)"},
		{[]string{"policy", "set", "idle=1h", "idle-warn=2h"}, 2, "every warning must come before idle=1h"},
		{[]string{"policy", "set", "notify-url=file:///etc/passwd"}, 2, "expected an http(s) address"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := chronos(t, db, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, before, after, "the ledger changed")
		})
	}

	// What a monitor would have recorded: idle for 50 minutes, just now.
	now := time.Now()
	require.NoError(t, storage.New(db).Update(func(tx *storage.Tx) error {
		return tx.PutBookingUsage(storage.BookingUsage{Partition: 1, Through: now, Idle: 50 * time.Minute, IdleFor: 50 * time.Minute, MemoryPeak: 1 << 30})
	}))
	r := chronos(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID\s.*\sIDLE\s+STATE$`, r.stdout)
	require.Regexp(t, `(?m)^1\s.*\s50m\s+live$`, r.stdout)
	parts := listJSON(t, db)
	require.True(t, parts[0].Idle)
	require.Equal(t, 3000.0, parts[0].IdleSeconds)
	require.Equal(t, uint64(1<<30), parts[0].Usage.MemoryPeak)

	r = chronos(t, db, "hold", "1", "2h", "--reason", "tokenizing on CPU")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Held 1 until")
	require.Regexp(t, `(?m)^1\s.*\s50m \(held 2h\)\s+live$`, chronos(t, db, "list").stdout)
	parts = listJSON(t, db)
	require.Equal(t, 1, parts[0].Usage.Holds)
	require.InDelta(t, now.Add(2*time.Hour).Unix(), parts[0].Usage.HeldUntil.Unix(), 5)
	require.Regexp(t, `held\s+#1 by root: for 2h`, chronos(t, db, "events").stdout)
}
