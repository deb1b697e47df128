package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/view"
)

// bookingsOfTwo is a ledger with root's bookings 1 (GPU 0) and 3 (GPU 1,
// released) and nobody's 2 (GPU 1), made by root.
func bookingsOfTwo(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "chronos.db")
	for _, a := range [][]string{
		{"create", "0", "0.5", "1h"}, {"create", "1", "0.25", "2h", "--user", "nobody"},
		{"create", "1", "0.25", "2h"}, {"release", "3"},
	} {
		r := cli(t, db, a...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	return db
}

func ids(t *testing.T, db string, args ...string) string {
	t.Helper()
	r := cli(t, db, append([]string{"list", "-o", "ids"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	return strings.Join(strings.Fields(r.stdout), " ")
}

// list's filters keep what they say, and -o and --no-headers shape it.
func TestListFiltersAndOutputs(t *testing.T) {
	t.Parallel()
	db := bookingsOfTwo(t)
	require.Equal(t, "1 2", ids(t, db))
	require.Equal(t, "1", ids(t, db, "--mine"), "root's live one")
	require.Equal(t, "2", ids(t, db, "--user", "nobody"))
	require.Equal(t, "2", ids(t, db, "--user", "65534"), "by uid")
	require.Equal(t, "2", ids(t, db, "--gpu", "1"))
	require.Equal(t, "2 3", ids(t, db, "--gpu", "1", "--all"))
	require.Equal(t, "3", ids(t, db, "--state", "released"), "an ended state reads the history")
	require.Equal(t, "1 2 3", ids(t, db, "--state", "LIVE,Released"))
	require.Empty(t, ids(t, db, "--state", "ending-soon"))
	require.Empty(t, ids(t, db, "--state", "upcoming"))

	r := cli(t, db, "list", "--mine", "-o", "wide")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^ID\s+OWNER.*COMPUTE\s+CREATED\s+GPU TIME\s+PEAK\s+UUID$`, lines[0])
	require.Regexp(t, `^1\s+\S+\s+0\s+50%.*\s-\s+-\s+SIM-\S+$`, lines[1])

	r = cli(t, db, "list", "--no-headers")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^1\s`, r.stdout)
	require.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 2)

	var parts []view.PartitionJSON
	r = cli(t, db, "list", "-o", "json", "--user", "nobody")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &parts))
	require.Len(t, parts, 1)
	require.Equal(t, "nobody", parts[0].Owner)

	require.Equal(t, "No bookings match.\n", cli(t, db, "list", "--gpu", "5").stdout)
	require.Empty(t, cli(t, db, "list", "--gpu", "5", "--no-headers").stdout)

	before, err := os.ReadFile(db)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"list", "-o", "yaml"}, `-o "yaml": use wide, json or ids`},
		{[]string{"list", "--json", "-o", "ids"}, "--json or -o ids, not both"},
		{[]string{"list", "--mine", "--user", "nobody"}, "--mine or --user, not both"},
		{[]string{"list", "--state", "asleep"}, `state "asleep": use upcoming, live, ending-soon, orphaned, gpu-gone, expired, reclaimed, released`},
		{[]string{"list", "--gpu", "zero"}, `"zero" is not a GPU index`},
		{[]string{"list", "--user", "nosuchuser"}, `no such user: "nosuchuser" has no account here and no booking in the ledger`},
	} {
		r := cli(t, db, tc.args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.msg)
	}
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// release --mine releases only yours, and never without a yes.
func TestReleaseMine(t *testing.T) {
	t.Parallel()
	db := bookingsOfTwo(t)
	require.Equal(t, 0, cli(t, db, "create", "1", "0.1", "1h").code) // 4, root's
	before, err := os.ReadFile(db)
	require.NoError(t, err)
	r := cli(t, db, "release", "--mine")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "release --mine would release 2 booking(s) of root: #1 (GPU 0, 50%), #4 (GPU 1, 10%); add --yes to confirm (there is no terminal to ask on)")
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.Equal(t, before, after, "refused: nothing changed")

	r = cli(t, db, "release", "--mine", "7")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `no arguments expected, got "7"`)

	r = cli(t, db, "release", "--mine", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Released 1.\nReleased 4.\n", r.stdout)
	require.Equal(t, "2", ids(t, db), "nobody's stays")
	r = cli(t, db, "release", "--mine", "-y")
	require.Equal(t, 0, r.code)
	require.Equal(t, "root has no live bookings.\n", r.stdout)
}

// On a terminal, release --mine asks, and only y releases.
func TestReleaseMineAsksOnATerminal(t *testing.T) {
	t.Parallel()
	db := bookingsOfTwo(t)
	s := newTmux(t, 120, 20, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR="+coverDir, "PS1=$ ")
	s.keys(chronosBin+" release --mine; echo status=$?", "Enter")
	s.waitFor("Release 1 booking(s) of root: #1 (GPU 0, 50%)? [y/N]")
	s.keys("n", "Enter")
	s.waitFor("status=1")
	require.Contains(t, s.screen(), "chronos: nothing released")
	require.Equal(t, "1 2", ids(t, db))
	s.keys("clear; "+chronosBin+" release --mine; echo status=$?", "Enter")
	s.waitFor("[y/N]")
	s.keys("y", "Enter")
	s.waitFor("status=0")
	require.Contains(t, s.screen(), "Released 1.")
	require.Equal(t, "2", ids(t, db))
}

// show tells everything about one booking; events filter the trail.
func TestShowAndEventFilters(t *testing.T) {
	t.Parallel()
	db := bookingsOfTwo(t)
	require.Equal(t, 0, cli(t, db, "extend", "2", "30m").code)
	r := cli(t, db, "show", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^Booking 2: 25% \(20.0 GiB\) of GPU 1 for nobody$`, r.stdout)
	require.Regexp(t, `(?m)^  state\s+live, 2:(29:\d\d|30:00) left, until `, r.stdout)
	require.Regexp(t, `(?m)^  usage\s+not measured`, r.stdout)
	require.Contains(t, r.stdout, "Processes now:\n  no compute processes\n")
	require.Regexp(t, `(?s)Events:\n.*created\s+#2 by root: 25% \(20.0 GiB\) of GPU 1 for 2h for nobody\n.*extended\s+#2 by root: 30m more`, r.stdout)

	var b view.BookingJSON
	r = cli(t, db, "show", "3", "--json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &b))
	require.Equal(t, uint64(3), b.ID)
	require.Equal(t, domain.StatusReleased, b.State)
	require.Len(t, b.Events, 2)
	require.Equal(t, "released", string(b.Events[1].Kind))
	require.NotNil(t, b.Processes)

	r = cli(t, db, "show", "9")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, "no such booking: 9")

	kinds := func(args ...string) string {
		r := cli(t, db, append([]string{"events", "--json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var evs []view.EventJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &evs))
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%s#%d", e.Kind, e.Booking))
		}
		return strings.Join(out, " ")
	}
	require.Equal(t, "created#2 extended#2", kinds("--booking", "2"))
	require.Equal(t, "created#2 extended#2", kinds("--user", "nobody"))
	require.Equal(t, "created#3 released#3", kinds("--booking", "3", "--since", "1h"))
	require.Equal(t, "extended#2", kinds("-n", "1"))
	require.Empty(t, kinds("--user", "daemon"))
	require.Equal(t, "No events match.\n", cli(t, db, "events", "--user", "daemon").stdout)
	r = cli(t, db, "events", "--since", "-1h")
	require.Equal(t, exitUsage, r.code)

	// --kind picks kinds; -n says when it left older events out.
	require.Equal(t, "released#3 extended#2", kinds("--kind", "extended,RELEASED"), "in the order they happened")
	r = cli(t, db, "events", "--kind", "made")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `event kind "made": use created, extended, released, expired`)
	r = cli(t, db, "events", "-n", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "(the newest 1; older events are left out: -n 0 shows them all, --since narrows by time)\n", r.stderr)
	require.Empty(t, cli(t, db, "events", "-n", "0").stderr)
	require.Empty(t, cli(t, db, "events", "-n", "50").stderr, "all of them fit")
}
