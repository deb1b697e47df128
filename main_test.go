package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/supervisor"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// chronosBin is the real binary, built once for every test here: with the
// race detector when these tests have it, with coverage when they collect
// it (its runs write to GOCOVERDIR, merged with the in-process tests'), and
// with the testclock tag, so that a test can shift the clock of the
// processes it starts (core/clock; never in a shipped binary).
var chronosBin string

// coverDir is where the binary writes its coverage data: the test's own
// -test.gocoverdir when it has one, else a directory thrown away.
var coverDir string

func TestMain(m *testing.M) {
	flag.Parse()
	// In-process runs (cli) see two simulated 80 GiB GPUs, as binary runs
	// do (binEnv). The race detector's runtime sleeps a second as a
	// process exits (atexit_sleep_ms=1000), for reports from threads still
	// running; a Go program's race reports come before exit, so the
	// binary's runs need not wait: a second saved per process. Set once,
	// before any test; no test changes them.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	if strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		gorace = os.Getenv("GORACE") // as the person running the tests set it
	}
	for k, v := range map[string]string{"CHRONOS_BACKEND": "sim", "CHRONOS_SIM_GPUS": "2", "CHRONOS_SIM_MEMORY": "80GiB", "GORACE": gorace} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	dir, err := os.MkdirTemp("", "chronos-bin-")
	if err != nil {
		panic(err)
	}
	// Other users run the binary too (otherUserLedger).
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	coverDir = filepath.Join(dir, "cover")
	args := []string{"build", "-tags", "testclock"}
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		coverDir = f.Value.String()
		args = append(args, "-cover")
	}
	// The binary the end-to-end tests run is built without the race
	// detector: the same code runs under it in the in-process tests (cli,
	// the app's and core's), and a race-built binary made this package
	// 78 s against 48 s on 2 cores, most of make test's wall time.
	// CHRONOS_TEST_RACE_BIN=1 builds it with -race when the tests do
	// (make test-race-bin).
	if raceEnabled && os.Getenv("CHRONOS_TEST_RACE_BIN") == "1" {
		args = append(args, "-race")
	}
	if err := os.MkdirAll(coverDir, 0o755); err != nil {
		panic(err)
	}
	chronosBin = filepath.Join(dir, "chronos")
	build := exec.Command("go", append(args, "-o", chronosBin, ".")...)
	build.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build chronos: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	etcdtest.StopShared()
	os.Exit(code)
}

// patience is how long a test waits for something a real process does
// soon: generous, for a machine loaded by other tests and CPU hogs. A
// test that passes never waits it out.
const patience = 30 * time.Second

// clockTime matches an instant as core.FormatTime prints it, whatever the
// day and hour the test runs at: the time of day, with the weekday and
// date when it falls on another day (an hour from 23:30 does), and the
// year when it is months away.
const clockTime = `(?:\w{3} \w{3} \d{1,2} (?:\d{4} )?)?\d\d:\d\d:\d\d`

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
	return runWith(t, bin, db, cred, nil, 0, args...)
}

// runWith is runChronos with env added on top of the test environment, and
// SIGTERM sent after stopAfter when that is not zero (for --monitor).
func runWith(t testing.TB, bin, db string, cred *syscall.Credential, env []string, stopAfter time.Duration, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), binEnv(db)...)
	if cred != nil {
		dir, collect := otherUserCoverDir(t)
		defer collect()
		cmd.Env = append(cmd.Env, "HOME=/nonexistent", "GOCOVERDIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if stopAfter > 0 {
		stop := time.AfterFunc(stopAfter, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
		defer stop.Stop()
	}
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// otherUserCoverDir is a coverage directory for the binary run as another
// uid, which cannot write to the test's: collect moves its data over.
func otherUserCoverDir(t testing.TB) (dir string, collect func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "chronos-cover-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir, func() {
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			_ = os.Rename(filepath.Join(dir, f.Name()), filepath.Join(coverDir, f.Name()))
		}
		os.RemoveAll(dir)
	}
}

// binEnv is the environment the binary runs in: the ledger at db, two
// simulated 80 GiB GPUs, a webhook file beside db, and where to write
// coverage.
func binEnv(db string) []string {
	return []string{"CHRONOS_DB=" + db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "CHRONOS_SIM_MEMORY=80GiB", "GOCOVERDIR=" + coverDir,
		"CHRONOS_NOTIFY_FILE=" + filepath.Join(filepath.Dir(db), "notify")} // never the host's webhook
}

func listJSON(t *testing.T, db string, args ...string) []view.PartitionJSON {
	t.Helper()
	r := cli(t, db, append([]string{"list", "--json"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var out []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	return out
}

// Sixteen real chronos processes race for 10% of GPU 0 each.
func TestSixteenProcessesNeverOverbook(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	race(t, 16, func(int) result { return chronos(t, db, "create", "0", "0.1", "1h") })
	require.Len(t, listJSON(t, db), 10)
	require.Equal(t, "0% (0 MiB) free on GPU 0\n", chronos(t, db, "available", "0").stdout)
}

// race runs n processes at once (run(i) starts the i-th) that each book
// 10% of one GPU: exactly ten may win, and every other one is refused for
// want of room (status 1, saying so). A process that lost to the other
// writers until its time ran out (a lab's ledger on a loaded machine) says
// the ledger is busy and nothing was written: it is run again, as a person
// would, up to maxBusy times (were something written after all, an eleventh
// win or a full GPU short of ten wins would show it). Any other failure
// fails the test with what the process said.
func race(t *testing.T, n int, run func(i int) result) {
	t.Helper()
	const maxBusy = 3
	var wg sync.WaitGroup
	results := make([]result, n)
	busy := make([]int, n)
	for i := range results {
		wg.Go(func() {
			for results[i] = run(i); isBusy(results[i]) && busy[i] < maxBusy; results[i] = run(i) {
				busy[i]++
			}
		})
	}
	wg.Wait()
	ok := 0
	for i, r := range results {
		switch {
		case r.code == 0:
			ok++
		case r.code == 1 && strings.Contains(r.stderr, "free, 10% asked"):
			// refused: the GPU is full
		default:
			t.Errorf("process %d: exit %d (after %d busy tries), not booked nor refused for want of room:\n%s%s", i, r.code, busy[i], r.stdout, r.stderr)
		}
	}
	if tries := slices.Max(busy); tries > 0 {
		t.Logf("the ledger was busy for some: at most %d tries again", tries)
	}
	require.Equal(t, 10, ok)
}

// isBusy says whether r is a process that gave up for a busy ledger and
// wrote nothing.
func isBusy(r result) bool {
	return r.code == 1 && strings.Contains(r.stderr, "the ledger is busy") && strings.HasSuffix(r.stderr, "nothing was written\n")
}

func TestRunPassesStatusAndStopsAtDeadline(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := chronos(t, db, "run", "0", "0.2", "1h", "--", "sh", "-c", `echo "in $CHRONOS_PARTITION_ID"; exit 7`)
	require.Equal(t, 7, r.code, r.stderr)
	require.Equal(t, "in 1\n", r.stdout)
	require.Empty(t, listJSON(t, db), "the booking is released when the command ends")

	start := time.Now()
	r = chronos(t, db, "run", "0", "0.2", "2", "--grace", "300ms", "--warn-signal", "none", "--", "sleep", "30")
	require.Equal(t, supervisor.ExitExpired, r.code, r.stderr)
	require.Contains(t, r.stderr, "booking 2 ended")
	require.Less(t, time.Since(start), 10*time.Second)
}

// The headless monitor expires bookings on time, logs each act with a
// timestamp, and stops cleanly on SIGTERM.
func TestHeadlessMonitor(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	cmd := exec.Command(chronosBin, "--monitor", "--log-format", "json")
	cmd.Env = append(os.Environ(), binEnv(db)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan monitor.Act, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var a monitor.Act
			if json.Unmarshal(sc.Bytes(), &a) == nil {
				lines <- a
			}
		}
		close(lines)
	}()
	next := func(kind string) monitor.Act {
		t.Helper()
		for {
			select {
			case a, ok := <-lines:
				require.True(t, ok, "monitor exited early")
				if string(a.Kind) == kind {
					return a
				}
			case <-time.After(patience):
				t.Fatalf("no %s act", kind)
			}
		}
	}
	next("started")
	require.Equal(t, 0, chronos(t, db, "create", "1", "0.3", "2").code)
	a := next("expired")
	require.Equal(t, uint64(1), a.Partition)
	parts := listJSON(t, db, "--all")
	require.Equal(t, domain.StatusExpired, parts[0].State)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	next("stopped")
	require.NoError(t, cmd.Wait())
	_, _ = io.Copy(io.Discard, stderr)
}

// BenchmarkProcess times whole chronos processes against a ledger holding
// 1,000 live bookings: create and list, next to `chronos version` (process
// start alone) as the baseline.
func BenchmarkProcess(b *testing.B) {
	// The tests' binary carries the race detector and coverage counters:
	// time the binary people run.
	bin := filepath.Join(b.TempDir(), "chronos")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build chronos: %v\n%s", err, out)
	}
	db := filepath.Join(b.TempDir(), "chronos.db")
	c := core.NewClient(core.Options{Ledger: ledgerAt(db), Devices: core.BackendDevices("sim")})
	for i := range 1000 {
		if _, err := c.Create(core.Request{Device: i % 2, Memory: human.Bytes(1 << 20), Duration: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	var version, create, list []time.Duration
	timeIt := func(into *[]time.Duration, args ...string) {
		t0 := time.Now()
		if r := runChronos(b, bin, db, nil, args...); r.code != 0 {
			b.Fatal(r.stderr)
		}
		*into = append(*into, time.Since(t0))
	}
	b.ResetTimer()
	for range b.N {
		timeIt(&version, "version")
		timeIt(&create, "create", "1", "1MiB", "1h")
		timeIt(&list, "list")
	}
	b.StopTimer()
	b.ReportMetric(medianMS(version), "version-ms")
	b.ReportMetric(medianMS(create), "create-ms")
	b.ReportMetric(medianMS(list), "list-ms")
}

func ledgerAt(path string) *bolt.Ledger { return bolt.New(path) }

func medianMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// The real binary: a mistyped command exits 2 with the nearest command,
// and --version works where scripts call it.
func TestBinaryExitStatuses(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := chronos(t, db, "lst")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "chronos: unknown command \"lst\": did you mean list? (see chronos --help)\n", r.stderr)
	r = chronos(t, db, "--backend", "bogus", "list")
	require.Equal(t, exitUsage, r.code, r.stderr)
	r = chronos(t, db, "--version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "chronos dev (ledger schema 1)\n", r.stdout)
}

// By default `chronos run` sends no warning signal: a command with no
// SIGUSR1 handler, and a script that traps only TERM, both run to the
// booking's deadline and get SIGTERM there, not an early death.
func TestRunDefaultSendsNoWarningSignal(t *testing.T) {
	t.Parallel()
	// Short bookings: the warning lead (a tenth, 0.3 s) falls well inside
	// them. Each waits out its 3 s: side by side, on ledgers of their own.
	t.Run("no handler", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "chronos.db")
		r := chronos(t, db, "run", "0", "0.2", "3", "--grace", "3s", "--", "sleep", "30")
		require.Equal(t, supervisor.ExitExpired, r.code, "a command with no SIGUSR1 handler must live to the deadline: %s", r.stderr)
		require.NotContains(t, r.stderr, "SIGUSR1")
	})
	t.Run("traps TERM only", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "chronos.db")
		logf := filepath.Join(t.TempDir(), "log")
		r := chronos(t, db, "run", "0", "0.2", "3", "--grace", "3s", "--", "sh", "-c",
			`trap 'echo "TERM $(date +%s.%N) $CHRONOS_DEADLINE_UNIX" > "$0"; exit 0' TERM; while :; do sleep 0.05; done`, logf)
		require.Equal(t, supervisor.ExitExpired, r.code, r.stderr)
		var got string
		var at, deadline float64
		_, err := fmt.Sscan(readFile(t, logf), &got, &at, &deadline)
		require.NoError(t, err)
		at += clockShift().Seconds() // date(1) reads the kernel's clock
		require.Equal(t, "TERM", got)
		require.GreaterOrEqual(t, at, deadline, "SIGTERM came before the deadline")
	})
}

// A warning signal is opt-in, Slurm-style: --signal USR1@1s sends SIGUSR1
// a second before the end (never earlier), then SIGTERM at the end.
// --warn-signal is the same flag under its old name.
func TestRunSignalOptIn(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--signal", "--warn-signal"} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel() // each waits out a 3 s booking
			db := filepath.Join(t.TempDir(), "chronos.db")
			logf := filepath.Join(t.TempDir(), "log")
			r := chronos(t, db, "run", "0", "0.2", "3", "--grace", "3s", flag, "USR1@1s", "--", "sh", "-c",
				`trap 'echo "USR1 $(date +%s.%N) $CHRONOS_DEADLINE_UNIX" >> "$0"' USR1; trap 'echo "TERM $(date +%s.%N) $CHRONOS_DEADLINE_UNIX" >> "$0"; exit 0' TERM; while :; do sleep 0.05; done`, logf)
			require.Equal(t, supervisor.ExitExpired, r.code, r.stderr)
			lines := strings.Split(strings.TrimSpace(readFile(t, logf)), "\n")
			require.Len(t, lines, 2, lines)
			var kind string
			var at, deadline float64
			_, err := fmt.Sscan(lines[0], &kind, &at, &deadline)
			require.NoError(t, err)
			at += clockShift().Seconds() // date(1) reads the kernel's clock
			require.Equal(t, "USR1", kind)
			require.GreaterOrEqual(t, at, deadline-1, "the warning came earlier than asked")
			require.Less(t, at, deadline)
			require.True(t, strings.HasPrefix(lines[1], "TERM "), lines)
		})
	}
	db := filepath.Join(t.TempDir(), "chronos.db")
	for _, bad := range [][]string{{"--signal", "USR1@"}, {"--signal", "FOO@5m"}, {"--signal", "USR1@5m", "--warn-signal", "USR2"}, {"--signal", "USR1@1h"}} {
		r := chronos(t, db, append(append([]string{"run", "0", "0.2", "10m"}, bad...), "--", "true")...)
		require.Equal(t, 2, r.code, "%v: %s", bad, r.stderr)
	}
	require.NoFileExists(t, db, "a refused run books nothing")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A refusal says who holds the GPU, until when, and where there is room;
// free figures are rounded as they are compared; far dates carry a year;
// a compute cap with no MPS daemon to apply it says so.
func TestCreateSaysWhatAPersonNeeds(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	noMPS := []string{"CUDA_MPS_PIPE_DIRECTORY=" + t.TempDir()} // no MPS daemon serves it
	chronos := func(t *testing.T, db string, args ...string) result {
		t.Helper()
		return runWith(t, chronosBin, db, nil, noMPS, 0, args...)
	}
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.6", "1h").code)
	r := chronos(t, db, "create", "0", "0.5", "1h")
	require.Equal(t, 1, r.code)
	require.Regexp(t, `GPU 0 has 40% \(32.0 GiB\) free, 50% asked: held by root \(60%, #1, until `+clockTime+`\)\. GPU 1 has 100% free\. `+
		`It would fit at `+clockTime+` \(--wait joins the line\)\n$`, r.stderr)

	require.Equal(t, 0, chronos(t, db, "create", "1", "0.000001", "1h").code)
	r = chronos(t, db, "create", "1", "100%", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "GPU 1 has 99.9% (79.9 GiB) free, 100% asked")
	require.Equal(t, "99.9% (79.9 GiB) free on GPU 1\n", chronos(t, db, "available", "1").stdout)

	r = chronos(t, db, "create", "1", "0.1", "1h", "--compute", "25%")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "the 25% compute cap is recorded but not applied: no MPS daemon runs")

	require.Equal(t, 0, chronos(t, db, "policy", "set", "max=200d").code)
	r = chronos(t, db, "create", "1", "0.1", "150d")
	require.Equal(t, 0, r.code, r.stderr)
	year := clock.System().Now().Add(150 * 24 * time.Hour).Local().Format("2006")
	require.Regexp(t, `until \w{3} \w{3} \d+ `+year+` \d\d:\d\d:\d\d\.\n`, r.stdout)
}

// An unbooked process is recorded as its owner's, not as the monitor's: the
// simulated GPU 0 runs "alice"'s python with no booking, and a booking on
// GPU 0 makes the monitor note it.
func TestEventsNameTheProcessOwner(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.1", "1h").code)
	mon := exec.Command(chronosBin, "--monitor")
	mon.Env = append(os.Environ(), binEnv(db)...)
	require.NoError(t, mon.Start())
	t.Cleanup(func() { mon.Process.Kill(); mon.Wait() })
	var evs []domain.Event
	require.Eventually(t, func() bool {
		r := chronos(t, db, "events", "--json")
		evs = nil
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &evs) == nil && slices.ContainsFunc(evs, func(e domain.Event) bool { return e.Kind == domain.EventUnbooked })
	}, patience, 100*time.Millisecond)
	i := slices.IndexFunc(evs, func(e domain.Event) bool { return e.Kind == domain.EventUnbooked })
	require.NotNil(t, evs[i].Process)
	require.Equal(t, "alice", evs[i].Process.User)
	require.Equal(t, 2001, evs[i].Process.UID)
	require.Equal(t, 4_200_000, evs[i].Process.PID)

	r := chronos(t, db, "events")
	require.Regexp(t, `unbooked\s+alice's pid 4200000: python train.py .* with no booking \(recorded by \S+\)\n`, r.stdout)
	require.NotRegexp(t, `unbooked\s+by `, r.stdout)
}

// create shows the memory physically free next to the bookable share and
// warns when a booking promises memory in use: the simulated GPU 0 runs
// "alice"'s unbooked python, which `chronos stats` reads and stores. With
// admit=physical the warning is a refusal.
func TestCreateWarnsOfMemoryInUse(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := chronos(t, db, "create", "0", "80GiB", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "GPU 0 had 100% (80.0 GiB) bookable, physically free memory unknown")
	require.Equal(t, 0, chronos(t, db, "release", "1").code)

	require.Equal(t, 0, chronos(t, db, "stats").code)
	r = chronos(t, db, "create", "0", "80GiB", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `GPU 0 had 100% \(80.0 GiB\) bookable, \d+\.\d GiB physically free \(read [^)]+\)\.\n`, r.stdout)
	require.Regexp(t, `chronos: warning: 80.0 GiB booked, but only \d+\.\d GiB of GPU 0 is physically free \(read [^)]+\): alice uses \d+\.\d GiB with no booking \(pid 4200000\)\n`, r.stderr)
	require.Equal(t, 0, chronos(t, db, "release", "2").code)

	r = chronos(t, db, "policy", "set", "admit=physical")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^admit +physical +booked `, r.stdout)
	before := readFile(t, db)
	r = chronos(t, db, "create", "0", "80GiB", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "not enough memory physically free on that GPU (the policy admits only what is physically free): 80.0 GiB booked, but only")
	require.Equal(t, before, readFile(t, db), "a refusal changes nothing")
	require.Equal(t, 0, chronos(t, db, "create", "0", "10GiB", "1h").code)
}

// A `chronos run` killed with SIGKILL no longer keeps its booking until the
// deadline. While its command still runs, list shows the booking orphaned;
// once nothing of it runs, the monitor releases it and says why.
func TestDeadWrapperReleasesItsBooking(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	mark := filepath.Join(t.TempDir(), "started")
	run := exec.Command(chronosBin, "run", "0", "0.3", "1h", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, mark)
	run.Env = append(os.Environ(), binEnv(db)...)
	require.NoError(t, run.Start())
	t.Cleanup(func() { run.Process.Kill(); run.Wait() })
	var child int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(mark)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	}, patience, 20*time.Millisecond)
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })

	mon := exec.Command(chronosBin, "--monitor", "--sample-every", "100ms")
	mon.Env = run.Env
	require.NoError(t, mon.Start())
	t.Cleanup(func() { mon.Process.Kill(); mon.Wait() })

	// The wrapper alive: the booking is just live, whatever the monitor sees.
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, domain.StatusLive, listJSON(t, db)[0].State)

	require.NoError(t, run.Process.Signal(syscall.SIGKILL))
	require.Error(t, run.Wait())
	require.Eventually(t, func() bool {
		parts := listJSON(t, db)
		return len(parts) == 1 && parts[0].State == domain.StatusOrphaned
	}, patience, 50*time.Millisecond, "its command still runs: orphaned, not released")
	require.Regexp(t, `(?m)^1\s.*\sorphaned\s+-$`, chronos(t, db, "list").stdout)

	require.NoError(t, syscall.Kill(child, syscall.SIGKILL))
	require.Eventually(t, func() bool { return len(listJSON(t, db)) == 0 }, patience, 50*time.Millisecond)
	parts := listJSON(t, db, "--all")
	require.Equal(t, domain.StatusReleased, parts[0].State)
	r := chronos(t, db, "events")
	require.Regexp(t, `released\s+#1 by \S+: its chronos run \(pid \d+ on \S+\) is gone and nothing of its command runs any more`, r.stdout)
}
