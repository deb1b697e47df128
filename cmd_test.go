package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
)

// cli runs a chronos command line in this process, as cobra's own tests
// do, against the ledger at db on two simulated GPUs (TestMain sets them).
func cli(t testing.TB, db string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), append([]string{"--db=" + db}, args...), &out, &errb)
	return result{out.String(), errb.String(), code}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "create", "0", "0.5", "3600")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 1: 50% (40.0 GiB) of GPU 0")

	r = cli(t, db, "create", "1", "40GiB", "2h30m")
	require.Equal(t, 0, r.code, r.stderr)
	r = cli(t, db, "create", "0", "25%", "90m", "--compute", "25%")
	require.Equal(t, 0, r.code, r.stderr)

	parts := listJSON(t, db)
	require.Len(t, parts, 3)
	require.Equal(t, uint64(2), parts[1].ID)
	require.Equal(t, 1, parts[1].Device)
	require.Equal(t, uint64(40<<30), parts[1].Bytes)
	require.InDelta(t, 9000, parts[1].RemainingSeconds, 5)
	require.Equal(t, 25, parts[2].ComputePercent)
	require.Equal(t, domain.StatusLive, parts[0].State)

	r = cli(t, db, "list")
	require.Equal(t, 0, r.code)
	require.Regexp(t, `(?m)^1\s+\S+\s+0\s+50%\s+40.0 GiB\s+1:00:00`, r.stdout)

	r = cli(t, db, "available", "0")
	require.Equal(t, "25% (20.0 GiB) free on GPU 0\n", r.stdout)

	r = cli(t, db, "extend", "1", "30m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Extended 1 by 30m")
	require.InDelta(t, 5400, listJSON(t, db)[0].RemainingSeconds, 5)

	r = cli(t, db, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, listJSON(t, db), 2)
	require.Len(t, listJSON(t, db, "--all"), 3)

	r = cli(t, db, "events")
	require.Equal(t, 0, r.code)
	for _, kind := range []string{"created", "extended", "released"} {
		require.Contains(t, r.stdout, kind)
	}
	r = cli(t, db, "version")
	require.Contains(t, r.stdout, "ledger schema 1")
}

// Every bad input names its problem, exits non-zero and changes nothing.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.6", "1h").code)
	before, err := os.ReadFile(db)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"create", "0", "0", "1h"}, 2, "more than 0"},
		{[]string{"create", "0", "1.5", "1h"}, 2, "at most 100%"},
		{[]string{"create", "0", "-0.5", "1h"}, 2, "negative values are not allowed"},
		{[]string{"create", "0", "0.1", "0"}, 2, "must be positive"},
		{[]string{"create", "0", "0.1", "-60"}, 2, "negative values are not allowed"},
		{[]string{"create", "0", "0.1", "-1h"}, 2, "negative values are not allowed"},
		{[]string{"create", "0", "0.1", "1000000000000"}, 2, "absurdly long"},
		{[]string{"create", "0", "0.1", "30d"}, 1, "the most is 7d"},
		{[]string{"create", "0", "lots", "1h"}, 2, "not a fraction"},
		{[]string{"create", "0", "0.1", "soon"}, 2, "not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)"},
		{[]string{"create", "9", "0.1", "1h"}, 1, "no such GPU: GPU 9"},
		{[]string{"create", "gpu0", "0.1", "1h"}, 2, "not a GPU index"},
		{[]string{"create", "0", "0.5", "1h"}, 1, "GPU 0 has 40% (32.0 GiB) free, 50% asked"},
		{[]string{"create", "0", "0.1"}, 2, "accepts 3 arg(s)"},
		{[]string{"create", "0", "0.1", "1h", "--compute", "300%"}, 2, "compute share"},
		{[]string{"release", "42"}, 1, "no such booking: 42"},
		{[]string{"release", "abc"}, 2, "not a booking id"},
		{[]string{"extend", "1", "-5m"}, 2, "negative values are not allowed"},
		{[]string{"release", "-3"}, 2, "negative values are not allowed"},
		{[]string{"extend", "99", "5m"}, 1, "no such booking"},
		{[]string{"run", "0", "0.1", "1h"}, 2, "no command after --"},
		{[]string{"run", "0", "0.1", "1h", "--", "/no/such/program"}, 2, "cannot run"},
		{[]string{"policy", "set", "expiry=explode"}, 2, "expected one of"},
		{[]string{"--monitor", "--log-format", "xml"}, 2, "use text or json"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"list", "--bogus"}, 2, "unknown flag"},
		// The line, bookings ahead and quotas.
		{[]string{"create", "0", "0.1", "1h", "--at", "2020-01-01 00:00:01"}, 2, "has passed"}, // a time of day alone means tomorrow
		{[]string{"create", "0", "0.1", "1h", "--at", "yesterday"}, 2, "is not a time"},
		{[]string{"create", "0", "0.1", "1h", "--at", "+30d"}, 1, "starts further ahead than the policy allows"},
		{[]string{"create", "0", "0.1", "1h", "--timeout", "5m"}, 2, "--timeout goes with --wait"},
		{[]string{"create", "0", "0.5", "1h", "--wait", "--timeout", "-5m"}, 2, "negative values"},
		{[]string{"create", "0", "0.5", "1h", "--wait", "--timeout", "0"}, 2, "--timeout goes with --wait, and must be positive (without it, --wait waits as long as it takes)"},
		{[]string{"create", "0", "0.1", "1h", "--at", ""}, 2, "--at needs a start"},
		{[]string{"run", "0", "0.1", "1h", "--at", " ", "--", "true"}, 2, "--at needs a start"},
		{[]string{"queue", "cancel", "abc"}, 2, `"abc" is not a request id (ids are numbers, as ` + "`chronos queue`" + ` shows them)`},
		{[]string{"create", "3", "0.5", "1h", "--wait"}, 1, "no such GPU: GPU 3"},
		{[]string{"create", "0", "100GiB", "1h", "--wait"}, 2, "more than GPU 0 has"},
		{[]string{"create", "0", "0.5", "8d", "--wait"}, 1, "the most is 7d"},
		{[]string{"queue", "cancel", "7"}, 1, "no such waiting request: 7"},
		{[]string{"policy", "set", "user-gpus=lots"}, 2, `user-gpus="lots": expected GPU-equivalents`},
		{[]string{"policy", "set", "share=2"}, 2, "add for=NAME"},
		{[]string{"policy", "set", "user-gpus=1", "for=no-such-user-x"}, 1, "no such user"},
		{[]string{"policy", "set", "user-gpus=1", "for=@no-such-group-x"}, 1, "no such group"},
		{[]string{"hold", "1", "2h"}, 2, "a hold needs a reason"},
		{[]string{"hold", "1", "2h", "--reason", " "}, 2, "a hold needs a reason"},
		{[]string{"hold", "1", "5h", "--reason", "x"}, 1, "the most is 4h"},
		{[]string{"hold", "1", "1h", "--reason", "a\x1b[2Jb"}, 2, "holds control characters"},
		{[]string{"hold", "7", "1h", "--reason", "x"}, 1, "no such booking: 7"},
		{[]string{"hold", "1", "--reason", "x"}, 2, "accepts 2 arg(s)"},
		{[]string{"hold", "1", "-1h", "--reason", "x"}, 2, "negative values are not allowed"},
		{[]string{"policy", "set", "idle=1h", "idle-warn=2h"}, 2, "every warning must come before idle=1h"},
		{[]string{"policy", "set", "notify-url=file:///etc/passwd"}, 2, "expected an http(s) address"},
		// A wrong command line exits 2 and says what to type instead.
		{[]string{"lst"}, 2, `unknown command "lst": did you mean list? (see chronos --help)`},
		{[]string{"stat"}, 2, "did you mean stats?"},
		{[]string{"policy", "sett"}, 2, "did you mean set? (see chronos policy --help)"},
		{[]string{"list", "foo"}, 2, `list: no arguments expected, got "foo" (see chronos list --help)`},
		{[]string{"--backend", "bogus", "list"}, 2, `--backend "bogus": use auto, nvml, drm or sim`},
		{[]string{"create", "0", "50", "1h"}, 2, "for 50 percent, write 50%"},
		{[]string{"create", "0", "0.5", "NaN"}, 2, `duration "NaN" is not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)`},
		{[]string{"create", "0", "0.5", "inf"}, 2, `duration "inf" is not seconds`},
		{[]string{"events", "-n", "abc"}, 2, `--last "abc": not a whole number (see chronos events --help)`},
		{[]string{"policy", "set"}, 2, "policy set: requires at least 1 arg(s), only received 0 (see chronos policy set --help)"},
		{[]string{"run", "--grace", "abc", "0", "0.1", "1h", "--", "true"}, 2, `--grace "abc": not a duration`},
		{[]string{"list", "--frob"}, 2, `unknown flag "--frob" (see chronos list --help)`},
		{[]string{"list", "--mne"}, 2, `unknown flag "--mne": did you mean --mine? (see chronos list --help)`},
		{[]string{"create", "0", "0.5", "1h", "--wiat"}, 2, `unknown flag "--wiat": did you mean --wait?`},
		{[]string{"list", "--stae", "live"}, 2, `did you mean --state or --store?`}, // nearest first
		{[]string{"events", "--dbb", "x"}, 2, `did you mean --db?`},                 // an inherited flag
		{[]string{"report", "--by", "host"}, 2, `--by "host": use user, group or gpu`},
		{[]string{"report", "--since", "soon"}, 2, `duration "soon" is not seconds`},
		{[]string{"report", "--json", "--csv"}, 2, "--json or --csv, not both"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, db, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			for _, internals := range []string{"panic", "strconv", "partition"} {
				require.NotContains(t, r.stderr, internals)
			}
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, before, after, "the ledger changed")
		})
	}
}

func TestDamagedLedgerIsReportedNotPanicked(t *testing.T) {
	t.Parallel()
	for name, content := range map[string][]byte{
		"text":  []byte("not a database at all, just some words\n"),
		"zeros": make([]byte, 16384),
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "chronos.db")
			require.NoError(t, os.WriteFile(db, content, 0o600))
			for _, args := range [][]string{{"list"}, {"create", "0", "0.1", "1h"}, {"stats"}} {
				r := cli(t, db, args...)
				require.Equal(t, 1, r.code, r.stderr)
				require.Contains(t, r.stderr, "damaged")
				require.NotContains(t, r.stderr, "panic")
			}
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, content, after)
		})
	}
}

func TestMonitorWithoutLedgerAccessFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "chronos.db")
	require.NoError(t, os.WriteFile(db, []byte("garbage garbage garbage"), 0o600))
	r := cli(t, db, "--monitor")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cannot open the ledger")
}

// `chronos backends` names the backend gpu.Open would pick, by the same
// decision, and the sharing mode by its one label.
func TestBackendsCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "--backend", "sim", "backends")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "active backend:      simulated\n")
	require.Contains(t, r.stdout, "mode:                time-sliced\n")

	r = cli(t, db, "--backend", "simulated", "backends", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, "simulated", rep["active_backend"])
	require.Equal(t, "time-sliced", rep["mode"])

	n, err := gpu.OpenNVML()
	if err == nil {
		require.NoError(t, n.Close())
		return // a GPU machine: nvml is available
	}
	r = cli(t, db, "--backend", "nvml", "backends")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "active backend:      none: nvml backend unavailable: "+err.Error()+"\n")
}

// What scripts read: available --json and events --json, whose booking id
// is under "booking" and, for scripts written before, "partition".
func TestJSONForScripts(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "1", "25%", "1h").code)

	r := cli(t, db, "available", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `[{"device":0,"free":1,"free_bytes":85899345920,"bookings":0},
		{"device":1,"free":0.75,"free_bytes":64424509440,"bookings":1}]`, r.stdout)

	r = cli(t, db, "events", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var evs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &evs))
	require.Len(t, evs, 1)
	require.Equal(t, "created", evs[0]["kind"])
	require.Equal(t, 1.0, evs[0]["booking"])
	require.Equal(t, 1.0, evs[0]["partition"])
}

// --version and -v print what `chronos version` prints.
func TestVersionFlags(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	want := cli(t, db, "version")
	require.Equal(t, 0, want.code)
	require.Equal(t, "chronos dev (ledger schema 1)\n", want.stdout)
	for _, flag := range []string{"--version", "-v"} {
		r := cli(t, db, flag)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want.stdout, r.stdout)
	}
}

// Help shows no defaults that mean nothing to a person, names days, and
// the word for the thing is booking.
func TestHelpText(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "help", "run")
	require.Equal(t, 0, r.code)
	require.NotContains(t, r.stdout, "-1ns")
	require.Contains(t, r.stdout, "--booking string")
	require.Contains(t, r.stdout, "CHRONOS_BOOKING_ID")
	require.NotContains(t, r.stdout, "--partition string")
	require.Regexp(t, `--signal string +send SIG to the command LEAD before the end, as SIG@LEAD \(USR1@5m\) \(default "none"\)\n`, r.stdout, "the default said once")
	for _, command := range []string{"create", "run", "extend"} {
		r = cli(t, db, command, "--help")
		require.Contains(t, r.stdout, "2d", command)
	}
}

// A 100 kB argument is named, not echoed back whole, wherever it lands.
func TestHugeArgumentsAreNotEchoed(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.1", "1h").code)
	huge := strings.Repeat("x", 100_000)
	for _, args := range [][]string{
		{"create", huge, "0.5", "1h"}, {"create", "0", huge, "1h"}, {"create", "0", "0.5", huge},
		{"create", "0", "0.5", "1h", "--compute", huge}, {"create", "0", "0.5", "1h", "--user", huge},
		{"release", huge}, {"extend", "1", huge}, {"available", huge},
		{"policy", "set", huge}, {"policy", "set", "expiry=" + huge}, {"policy", "set", huge + "=1"},
		{"run", "--warn-signal", huge, "0", "0.1", "1h", "--", "true"}, {"run", "0", "0.1", "1h", "--", huge},
		{"run", "--booking", huge, "--", "true"},
		{huge}, {"list", huge}, {"policy", huge}, {"--backend", huge, "list"}, {"events", "-n", huge}, {"list", "--" + huge},
		{"--monitor", "--log-format", huge}, {"--monitor", "--policy", huge},
		{"create", "0", "0.5", "1h", "--at", huge}, {"create", "0", "0.5", "1h", "--at", "+" + huge},
		{"run", "0", "0.1", "1h", "--at", huge, "--", "true"}, {"queue", "cancel", huge}, {"queue", huge}, {"usage", huge},
		{"policy", "set", "user-gpus=" + huge}, {"policy", "set", "user-hours=" + huge}, {"policy", "set", "share=2", "for=" + huge},
		{"policy", "set", "share=2", "for=@" + huge}, {"policy", "set", "exempt=" + huge, "for=root"},
	} {
		r := cli(t, db, args...)
		require.NotEqual(t, 0, r.code)
		require.Less(t, len(r.stderr), 600, "%.60s… echoed: %.300s", strings.Join(args, " "), r.stderr)
		require.Contains(t, r.stderr, "xxxx…")
	}
}

// run --booking joins a booking (--partition, the old name, too), and the
// command finds its booking under both names.
func TestRunInABooking(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "1", "0.2", "1h").code)
	for _, flag := range []string{"--booking", "--partition"} {
		r := cli(t, db, "run", flag, "1", "--", "sh", "-c", `echo "$CHRONOS_BOOKING_ID $CHRONOS_PARTITION_ID"`)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "1 1\n", r.stdout, flag)
	}
	require.Len(t, listJSON(t, db), 1, "joining a booking leaves it live")
}

// list shows the compute cap, when an ended booking ended, and, with only
// history left, that --all shows it; an empty audit trail says so.
func TestListAndEventsSayWhatIsThere(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "events")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "No events yet in "+db+": creating, extending or releasing a booking records one.\n", r.stdout)

	require.Equal(t, 0, cli(t, db, "create", "0", "0.2", "1h", "--compute", "25%").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "0.2", "1h").code)
	r = cli(t, db, "list")
	require.Regexp(t, `(?m)^ID\s+OWNER\s+GPU\s+SHARE\s+MEMORY\s+LEFT\s+STARTS\s+EXPIRES\s+IDLE\s+STATE\s+COMPUTE$`, r.stdout)
	require.Regexp(t, `(?m)^1\s.*\slive\s+25% of SMs$`, r.stdout)
	require.Regexp(t, `(?m)^2\s.*\slive\s+-$`, r.stdout)

	released := clock.System().Now().Truncate(time.Second)
	require.Equal(t, 0, cli(t, db, "release", "1", "2").code)
	var when []string // the second it was released in, however long that took
	for at, after := released, clock.System().Now(); !at.After(after); at = at.Add(time.Second) {
		when = append(when, at.Local().Format("Jan 2 15:04:05"))
	}
	r = cli(t, db, "list")
	require.Equal(t, 0, r.code)
	require.Equal(t, "No live bookings; 2 ended (chronos list --all shows them).\n", r.stdout)
	r = cli(t, db, "list", "--all")
	require.Regexp(t, `(?m)^ID\s.*\sSTATE\s+COMPUTE\s+ENDED$`, r.stdout)
	require.Regexp(t, `(?m)^1\s.*\sreleased\s+25% of SMs\s+(`+strings.Join(when, "|")+`)$`, r.stdout)
	require.NotContains(t, cli(t, filepath.Join(t.TempDir(), "empty.db"), "list").stdout, "--all")
}

// A damaged ledger's error points at chronos doctor; a ledger path that
// cannot be used says which and why, in words.
func TestLedgerProblemsInWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.db")
	require.NoError(t, os.WriteFile(damaged, []byte("not a database at all, just some words\n"), 0o600))
	for _, args := range [][]string{{"list"}, {"create", "0", "0.1", "1h"}, {"events"}, {"--monitor"}} {
		r := cli(t, damaged, args...)
		require.Equal(t, exitError, r.code)
		require.Contains(t, r.stderr, "damaged")
		require.Contains(t, r.stderr, "\n`chronos doctor` says what is wrong", args)
		require.NotContains(t, r.stderr, `\x0a`, args)
	}
	// A line break in the ledger's own words (here its path) stays escaped;
	// only the break before our advice is one.
	odd := filepath.Join(dir, "dam\naged.db")
	require.NoError(t, os.WriteFile(odd, []byte("not a database at all, just some words\n"), 0o600))
	r := cli(t, odd, "list")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, `dam\x0aaged.db`)
	require.Equal(t, 2, strings.Count(r.stderr, "\n"), r.stderr)

	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct {
		db, want string
	}{
		{filepath.Join(dir, "no", "such", "chronos.db"), "its directory " + filepath.Join(dir, "no", "such") + " does not exist"},
		{filepath.Join(file, "chronos.db"), "a part of the path is a file, not a directory"},
	} {
		for _, args := range [][]string{{"create", "0", "0.1", "1h"}, {"stats"}, {"list"}, {"events"}, {"available"}} {
			r := cli(t, tc.db, args...)
			require.Equal(t, exitError, r.code)
			require.Equal(t, "chronos: cannot use the ledger "+tc.db+" (--db): "+tc.want+"\n", r.stderr)
		}
	}
}
