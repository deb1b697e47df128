package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// chronosBin is the real binary, built once for every test here.
var chronosBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chronos-bin-")
	if err != nil {
		panic(err)
	}
	chronosBin = filepath.Join(dir, "chronos")
	build := exec.Command("go", "build", "-o", chronosBin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build chronos: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	etcdtest.StopShared()
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// chronos runs the real binary against db on the simulated backend.
func chronos(t testing.TB, db string, args ...string) result {
	t.Helper()
	return runChronos(t, chronosBin, db, nil, args...)
}

// runChronos runs bin against db on the simulated backend, as another user
// when cred is set, and returns its output and exit status.
func runChronos(t testing.TB, bin, db string, cred *syscall.Credential, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "CHRONOS_SIM_MEMORY=80GiB")
	if cred != nil {
		cmd.Env = append(cmd.Env, "HOME=/nonexistent")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func listJSON(t *testing.T, db string, args ...string) []core.PartitionJSON {
	t.Helper()
	r := chronos(t, db, append([]string{"list", "--json"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var out []core.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	return out
}

func TestCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := chronos(t, db, "create", "0", "0.5", "3600")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 1: 50% (40.0 GiB) of GPU 0")

	r = chronos(t, db, "create", "1", "40GiB", "2h30m")
	require.Equal(t, 0, r.code, r.stderr)
	r = chronos(t, db, "create", "0", "25%", "90m", "--compute", "25%")
	require.Equal(t, 0, r.code, r.stderr)

	parts := listJSON(t, db)
	require.Len(t, parts, 3)
	require.Equal(t, uint64(2), parts[1].ID)
	require.Equal(t, 1, parts[1].Device)
	require.Equal(t, uint64(40<<30), parts[1].Bytes)
	require.InDelta(t, 9000, parts[1].RemainingSeconds, 5)
	require.Equal(t, 25, parts[2].ComputePercent)
	require.Equal(t, core.StatusLive, parts[0].State)

	r = chronos(t, db, "list")
	require.Equal(t, 0, r.code)
	require.Regexp(t, `(?m)^1\s+\S+\s+0\s+50%\s+40.0 GiB\s+1:00:00`, r.stdout)

	r = chronos(t, db, "available", "0")
	require.Equal(t, "25% (20.0 GiB) free on GPU 0\n", r.stdout)

	r = chronos(t, db, "extend", "1", "30m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Extended 1 by 30m")
	require.InDelta(t, 5400, listJSON(t, db)[0].RemainingSeconds, 5)

	r = chronos(t, db, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, listJSON(t, db), 2)
	require.Len(t, listJSON(t, db, "--all"), 3)

	r = chronos(t, db, "events")
	require.Equal(t, 0, r.code)
	for _, kind := range []string{"created", "extended", "released"} {
		require.Contains(t, r.stdout, kind)
	}
	r = chronos(t, db, "version")
	require.Contains(t, r.stdout, "ledger schema 1")
}

// Every bad input names its problem, exits non-zero and changes nothing.
func TestBadInputChangesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.6", "1h").code)
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
			r := chronos(t, db, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			require.NotContains(t, r.stderr, "panic")
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, before, after, "the ledger changed")
		})
	}
}

// Sixteen real chronos processes race for 10% of GPU 0 each.
func TestSixteenProcessesNeverOverbook(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = chronos(t, db, "create", "0", "0.1", "1h").code
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 0 {
			ok++
		} else {
			require.Equal(t, 1, c)
		}
	}
	require.Equal(t, 10, ok)
	require.Len(t, listJSON(t, db), 10)
	require.Equal(t, "0% (0 MiB) free on GPU 0\n", chronos(t, db, "available", "0").stdout)
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
				r := chronos(t, db, args...)
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

func TestRunPassesStatusAndStopsAtDeadline(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := chronos(t, db, "run", "0", "0.2", "1h", "--", "sh", "-c", `echo "in $CHRONOS_PARTITION_ID"; exit 7`)
	require.Equal(t, 7, r.code, r.stderr)
	require.Equal(t, "in 1\n", r.stdout)
	require.Empty(t, listJSON(t, db), "the booking is released when the command ends")

	start := time.Now()
	r = chronos(t, db, "run", "0", "0.2", "2", "--grace", "300ms", "--warn-signal", "none", "--", "sleep", "30")
	require.Equal(t, core.ExitExpired, r.code, r.stderr)
	require.Contains(t, r.stderr, "booking 2 ended")
	require.Less(t, time.Since(start), 10*time.Second)
}

// The headless monitor expires bookings on time, logs each act with a
// timestamp, and stops cleanly on SIGTERM.
func TestHeadlessMonitor(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chronos.db")
	cmd := exec.Command(chronosBin, "--monitor", "--log-format", "json")
	cmd.Env = append(os.Environ(), "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan core.Act, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var a core.Act
			if json.Unmarshal(sc.Bytes(), &a) == nil {
				lines <- a
			}
		}
		close(lines)
	}()
	next := func(kind string) core.Act {
		t.Helper()
		for {
			select {
			case a, ok := <-lines:
				require.True(t, ok, "monitor exited early")
				if string(a.Kind) == kind {
					return a
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s act", kind)
			}
		}
	}
	next("started")
	require.Equal(t, 0, chronos(t, db, "create", "1", "0.3", "2").code)
	a := next("expired")
	require.Equal(t, uint64(1), a.Partition)
	parts := listJSON(t, db, "--all")
	require.Equal(t, core.StatusExpired, parts[0].State)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	next("stopped")
	require.NoError(t, cmd.Wait())
	_, _ = io.Copy(io.Discard, stderr)
}

func TestMonitorWithoutLedgerAccessFails(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "chronos.db")
	require.NoError(t, os.WriteFile(db, []byte("garbage garbage garbage"), 0o600))
	r := chronos(t, db, "--monitor")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cannot open the ledger")
}

// BenchmarkProcess times whole chronos processes against a ledger holding
// 1,000 live bookings: create and list, next to `chronos version` (process
// start alone) as the baseline.
func BenchmarkProcess(b *testing.B) {
	db := filepath.Join(b.TempDir(), "chronos.db")
	c := core.NewClient(core.Options{Ledger: ledgerAt(db), Devices: core.BackendDevices("sim")})
	for i := range 1000 {
		if _, err := c.Create(core.Request{Device: i % 2, Memory: core.Bytes(1 << 20), Duration: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	var version, create, list []time.Duration
	timeIt := func(into *[]time.Duration, args ...string) {
		t0 := time.Now()
		if r := chronos(b, db, args...); r.code != 0 {
			b.Fatal(r.stderr)
		}
		*into = append(*into, time.Since(t0))
	}
	b.ResetTimer()
	for range b.N {
		timeIt(&version, "version")
		timeIt(&create, "create", "3", "1MiB", "1h")
		timeIt(&list, "list")
	}
	b.StopTimer()
	b.ReportMetric(medianMS(version), "version-ms")
	b.ReportMetric(medianMS(create), "create-ms")
	b.ReportMetric(medianMS(list), "list-ms")
}

func ledgerAt(path string) *storage.Ledger { return storage.New(path) }

func medianMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
