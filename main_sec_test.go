package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// requirePrintable fails when out holds anything a terminal would obey.
func requirePrintable(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "bytes that are not UTF-8 reached the output: %q", out)
	for i, r := range out {
		bad := r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
		require.False(t, bad, "%q reached the terminal at byte %d: %q", r, i, out)
	}
}

// Names and details in the ledger are another user's text (a member can
// write anything there, and the monitor records other users' command
// lines): `list`, `events` and errors print them escaped, JSON exactly.
func TestLedgerTextIsEscapedOnTheTerminal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.1", "1h").code)
	const hostile = "\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J"
	now := time.Now()
	require.NoError(t, storage.New(db).Update(func(tx *storage.Tx) error {
		p := storage.Partition{Device: 1, SharePPM: 100_000, UID: 4242, User: "mal" + hostile, State: storage.Live, Created: now, Expires: now.Add(time.Hour)}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return tx.AddEvent(storage.Event{Time: now, Kind: storage.EventUnbooked, UID: 0, User: "root", Detail: "pid 7: " + hostile})
	}))

	r := chronos(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	requirePrintable(t, r.stdout)
	require.Contains(t, r.stdout, `mal\x1b]2;pwned\x07`)

	r = chronos(t, db, "events")
	require.Equal(t, 0, r.code, r.stderr)
	requirePrintable(t, r.stdout)
	require.Contains(t, r.stdout, `pid 7: \x1b]2;pwned\x07\x1b[2J`+"\ufffd"+`2J\u009b2J`) // JSON stored the lone byte as U+FFFD

	r = chronos(t, db, "events", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var evs []storage.Event
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &evs))
	require.Equal(t, "pid 7: "+strings.ToValidUTF8(hostile, "\ufffd"), evs[len(evs)-1].Detail, "JSON keeps the text as it is")

	if os.Geteuid() == 0 {
		// An error that names the booking's owner, to someone else.
		bin, shared := otherUserCopy(t)
		require.NoError(t, os.Rename(db, shared))
		require.NoError(t, os.Chmod(shared, 0o666))
		r = asNobody(t, bin, shared, "release", "2")
		require.Equal(t, 1, r.code)
		requirePrintable(t, r.stderr)
		require.Contains(t, r.stderr, `belongs to mal\x1b]2;pwned`)
	}
}

// otherUserCopy copies the binary into a directory any user may use, and
// returns it and a ledger path there.
func otherUserCopy(t *testing.T) (bin, db string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "chronos-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	data, err := os.ReadFile(chronosBin)
	require.NoError(t, err)
	bin = filepath.Join(dir, "chronos")
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	return bin, filepath.Join(dir, "chronos.db")
}
