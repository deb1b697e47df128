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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

// chronosBin is the real binary, built once for every test here, with
// the race detector and coverage: its runs write coverage data to
// GOCOVERDIR, which `make cover` merges with the in-process tests'.
var chronosBin string

// coverDir is where the binary writes its coverage data: the test's own
// -test.gocoverdir when it has one, else a directory thrown away.
var coverDir string

func TestMain(m *testing.M) {
	flag.Parse()
	// In-process runs (cli) see two simulated 80 GiB GPUs, as binary runs do.
	for k, v := range map[string]string{"CHRONOS_BACKEND": "sim", "CHRONOS_SIM_GPUS": "2", "CHRONOS_SIM_MEMORY": "80GiB"} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	dir, err := os.MkdirTemp("", "chronos-bin-")
	if err != nil {
		panic(err)
	}
	coverDir = filepath.Join(dir, "cover")
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		coverDir = f.Value.String()
	}
	if err := os.MkdirAll(coverDir, 0o755); err != nil {
		panic(err)
	}
	chronosBin = filepath.Join(dir, "chronos")
	build := exec.Command("go", "build", "-race", "-cover", "-o", chronosBin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build chronos: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
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
	cmd.Env = append(os.Environ(), binEnv(db)...)
	if cred != nil {
		// Another uid cannot write to the test's coverage directory: it
		// writes to its own, and its data is moved over afterwards.
		dir, err := os.MkdirTemp("", "chronos-cover-")
		require.NoError(t, err)
		require.NoError(t, os.Chmod(dir, 0o777))
		defer func() {
			files, _ := os.ReadDir(dir)
			for _, f := range files {
				_ = os.Rename(filepath.Join(dir, f.Name()), filepath.Join(coverDir, f.Name()))
			}
			os.RemoveAll(dir)
		}()
		cmd.Env = append(cmd.Env, "HOME=/nonexistent", "GOCOVERDIR="+dir)
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

// binEnv is the environment the binary runs in: the ledger at db, two
// simulated 80 GiB GPUs, and where to write coverage.
func binEnv(db string) []string {
	return []string{"CHRONOS_DB=" + db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "CHRONOS_SIM_MEMORY=80GiB", "GOCOVERDIR=" + coverDir}
}

func listJSON(t *testing.T, db string, args ...string) []core.PartitionJSON {
	t.Helper()
	r := cli(t, db, append([]string{"list", "--json"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var out []core.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	return out
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
	cmd.Env = append(os.Environ(), binEnv(db)...)
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

// The real binary: a mistyped command exits 2 with the nearest command,
// and --version works where scripts call it.
func TestBinaryExitStatuses(t *testing.T) {
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
