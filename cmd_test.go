package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
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
	require.Equal(t, core.StatusLive, parts[0].State)

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
		{[]string{"create", "0", "0.1", "soon"}, 2, "not seconds"},
		{[]string{"create", "9", "0.1", "1h"}, 1, "no such GPU: GPU 9"},
		{[]string{"create", "gpu0", "0.1", "1h"}, 2, "not a GPU index"},
		{[]string{"create", "0", "0.5", "1h"}, 1, "GPU 0 has 40% (32.0 GiB) free, 50% asked"},
		{[]string{"create", "0", "0.1"}, 2, "accepts 3 arg(s)"},
		{[]string{"create", "0", "0.1", "1h", "--compute", "300%"}, 2, "compute share"},
		{[]string{"release", "42"}, 1, "no such booking: 42"},
		{[]string{"release", "abc"}, 2, "not a partition id"},
		{[]string{"extend", "1", "-5m"}, 2, "negative values are not allowed"},
		{[]string{"release", "-3"}, 2, "negative values are not allowed"},
		{[]string{"extend", "99", "5m"}, 1, "no such booking"},
		{[]string{"run", "0", "0.1", "1h"}, 2, "no command after --"},
		{[]string{"run", "0", "0.1", "1h", "--", "/no/such/program"}, 2, "cannot run"},
		{[]string{"policy", "set", "expiry=explode"}, 2, "expected one of"},
		{[]string{"--monitor", "--log-format", "xml"}, 2, "use text or json"},
		{[]string{"frobnicate"}, 1, "unknown command"},
		{[]string{"list", "--bogus"}, 2, "unknown flag"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, db, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			require.NotContains(t, r.stderr, "panic")
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, before, after, "the ledger changed")
		})
	}
}

func TestDamagedLedgerIsReportedNotPanicked(t *testing.T) {
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
