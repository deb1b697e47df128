package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

func runOpts(cmd ...string) RunOptions {
	return RunOptions{Command: cmd, Grace: -1}
}

// The command gets the warning signal it asked for, then SIGTERM at the
// deadline, then SIGKILL when it ignores SIGTERM; chronos reports the expiry
// status.
func TestRunWarnsTerminatesKills(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunWarnsTerminatesKills)
}

func testRunWarnsTerminatesKills(t *testing.T, open storetest.Opener) {
	// The deadline, the warning lead and the grace are the fake clock's:
	// each step is taken once the command has shown it took the last.
	clk := clock.NewFake(clock.System().Now())
	c := servicetest.ClientOn(open(), clk, proc.CurrentIdentity())
	log := filepath.Join(t.TempDir(), "signals")
	o := runOpts("sh", "-c", `trap 'echo USR1 >> "$0"' USR1; trap 'echo TERM >> "$0"' TERM; echo ready >> "$0"; while :; do sleep 0.05; done`, log)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Second}
	o.Grace = 1500 * time.Millisecond
	o.WarnSignal = human.WarnSignal{Signal: syscall.SIGUSR1}
	start := time.Now()
	done := runInBackground(c, o)
	logSays := logSaying(t, log)
	logSays("ready\n") // booked, and its traps set
	parts, err := c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	expires := parts[0].Expires
	clk.Set(expires.Add(-100 * time.Millisecond)) // inside the lead, a tenth: 0.2 s
	logSays("ready\nUSR1\n")
	clk.Set(expires)
	logSays("ready\nUSR1\nTERM\n")
	clk.Advance(o.Grace) // it ignored SIGTERM: SIGKILL
	var r runResult
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not end after the grace")
	}
	require.NoError(t, r.err)
	require.True(t, r.res.Expired)
	require.Equal(t, ExitExpired, r.res.ExitCode)
	require.Less(t, time.Since(start), 15*time.Second)

	p, err := c.Get(r.res.Partition)
	require.NoError(t, err)
	require.False(t, p.LiveAt(clk.Now()))
}

// A booking reclaimed for sitting idle ends its command as its deadline
// would: SIGTERM now, and the expiry status.
func TestRunStopsWhenReclaimed(t *testing.T) {
	t.Parallel()
	c := servicetest.ClientOn(bolt.New(filepath.Join(t.TempDir(), "chronos.db")), nil, proc.CurrentIdentity())
	started := filepath.Join(t.TempDir(), "started")
	o := runOpts("sh", "-c", `: > "$0"; exec sleep 60`, started)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}
	go func() {
		// Once the command runs, chronos run follows the ledger.
		for {
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(started); err == nil {
				break
			}
		}
		parts, err := c.List(false)
		if err == nil && len(parts) == 1 {
			err = c.Ledger().Update(context.Background(), func(tx *storage.Tx) error { return monitor.Reclaim(tx, &parts[0].Partition, c.Now()) })
		}
		if err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	res, err := Run(context.Background(), c, o)
	require.NoError(t, err)
	require.True(t, res.Expired)
	require.Equal(t, ExitExpired, res.ExitCode)
	require.Less(t, time.Since(start), 10*time.Second)
}

// A command that ends by itself passes on its status and its booking is
// released at once.
func TestRunReleasesAndPassesStatus(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunReleasesAndPassesStatus)
}

func testRunReleasesAndPassesStatus(t *testing.T, open storetest.Opener) {
	c := servicetest.ClientOn(open(), nil, proc.CurrentIdentity())
	var out bytes.Buffer
	o := runOpts("sh", "-c", `echo "$CHRONOS_PARTITION_ID $CUDA_VISIBLE_DEVICES $PATH"; exit 3`)
	o.Request = core.Request{Device: 1, Memory: human.Fraction(0.25), Duration: time.Hour}
	o.Stdout = &out
	res, err := Run(context.Background(), c, o)
	require.NoError(t, err)
	require.Equal(t, 3, res.ExitCode)
	require.False(t, res.Expired)
	// By UUID: CUDA and NVML may order GPUs differently. The rest of the
	// environment is the caller's.
	require.Equal(t, "1 GPU-1 "+os.Getenv("PATH")+"\n", out.String())
	p, err := c.Get(res.Partition)
	require.NoError(t, err)
	require.Equal(t, domain.Released, p.State)

	// A command killed by a signal reports 128+N.
	o = runOpts("sh", "-c", `kill -KILL $$`)
	o.Request = core.Request{Device: 1, Memory: human.Fraction(0.25), Duration: time.Hour}
	res, err = Run(context.Background(), c, o)
	require.NoError(t, err)
	require.Equal(t, 128+9, res.ExitCode)
}

func TestRunRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunRefusals)
}

func testRunRefusals(t *testing.T, open storetest.Opener) {
	s := open()
	c := servicetest.ClientOn(s, nil, domain.Identity{UID: 4243, User: "runner"})
	other := servicetest.ClientOn(open(), nil, domain.Identity{UID: 4242, User: "someone"})
	theirs, err := other.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)

	before := storetest.Fingerprint(t, s)
	for _, tc := range []struct {
		name string
		o    RunOptions
		want error
	}{
		{"no command", RunOptions{Request: core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour}}, domain.ErrInput},
		{"unrunnable", RunOptions{Command: []string{"/no/such/program"}, Request: core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour}}, domain.ErrInput},
		{"someone else's booking", RunOptions{Command: []string{"true"}, Partition: theirs.ID}, domain.ErrNotOwner},
		{"no such booking", RunOptions{Command: []string{"true"}, Partition: 999}, domain.ErrNoPartition},
		{"overbooked", RunOptions{Command: []string{"true"}, Request: core.Request{Device: 0, Memory: human.Fraction(0.95), Duration: time.Hour}}, domain.ErrOverbooked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), c, tc.o)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, before, storetest.Fingerprint(t, s), "the ledger changed")
		})
	}
}

// Running inside an existing booking leaves it live afterwards.
func TestRunInsideExistingBooking(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunInsideExistingBooking)
}

func testRunInsideExistingBooking(t *testing.T, open storetest.Opener) {
	c := servicetest.ClientOn(open(), nil, proc.CurrentIdentity())
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.3), Duration: time.Hour})
	require.NoError(t, err)
	o := runOpts("true")
	o.Partition = p.ID
	res, err := Run(context.Background(), c, o)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State)
}

func TestRunEnv(t *testing.T) {
	p := domain.Partition{ID: 7, Device: 2, DeviceUUID: "GPU-abc", Bytes: 2 << 30, ComputePct: 25,
		Expires: time.Date(2026, 11, 29, 12, 0, 0, 500_000_000, time.UTC)}
	base := []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1", "HOME=/root"}
	env := strings.Join(core.RunEnv(base, p, procfs.MPS{}), "\n")
	require.Contains(t, env, "PATH=/bin\nHOME=/root\n")
	require.Contains(t, env, "CUDA_VISIBLE_DEVICES=GPU-abc\n")
	require.NotContains(t, env, "CUDA_VISIBLE_DEVICES=0,1")
	require.Contains(t, env, "CHRONOS_PARTITION_ID=7\n")
	require.Contains(t, env, "CHRONOS_BOOKING_ID=7\n")
	require.Contains(t, env, "CHRONOS_EXPIRES_AT=2026-11-29T12:00:00.5Z\n")
	require.Contains(t, env, "CHRONOS_DEADLINE_UNIX=1795953600.500000")
	require.NotContains(t, env, "CUDA_MPS")

	env = strings.Join(core.RunEnv(base, p, procfs.MPS{Running: true}), "\n")
	require.Contains(t, env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M")
	require.Contains(t, env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25")
}

// A booking carries its id under both names, so either can be passed into
// a container; each vendor's runtime is shown only the booked GPU.
func TestRunEnvNamesBookingAndVendorGPU(t *testing.T) {
	t.Setenv(gpu.DRMRootEnv, filepath.Join("..", "..", "gpu", "testdata", "drm", "multi"))
	base := []string{"PATH=/bin", "HIP_VISIBLE_DEVICES=2,3", "ZE_AFFINITY_MASK=1", procfs.BookingEnv + "=1"}
	amd := domain.Partition{ID: 7, Device: 3, DeviceUUID: "amdgpu-0000:83:00.0", Expires: time.Now().Add(time.Hour)}
	env := core.RunEnv(base, amd, procfs.MPS{})
	require.Contains(t, env, procfs.BookingEnv+"=7")
	require.Contains(t, env, procfs.PartitionEnv+"=7")
	require.NotContains(t, env, procfs.BookingEnv+"=1")
	require.Subset(t, env, []string{"ROCR_VISIBLE_DEVICES=1", "HIP_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=0", "ZE_AFFINITY_MASK=1"})
	require.Contains(t, env, procfs.RunEnv+"="+strconv.Itoa(os.Getpid()), "the chronos run that wraps it")
	require.NotContains(t, env, "HIP_VISIBLE_DEVICES=2,3")

	intel := domain.Partition{ID: 8, Device: 2, DeviceUUID: "xe-0000:0a:00.0", Expires: time.Now().Add(time.Hour)}
	env = core.RunEnv(base, intel, procfs.MPS{})
	require.Subset(t, env, []string{"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1", "ZE_AFFINITY_MASK=1", "HIP_VISIBLE_DEVICES=2,3"})
	require.Equal(t, 1, strings.Count(strings.Join(env, "\n"), "ZE_AFFINITY_MASK="))
	for _, kv := range env {
		require.False(t, strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES="), "nothing for CUDA on an Intel GPU: %s", kv)
	}
}

// With a monitor watching the same process, the command still gets each
// signal once: chronos run and the monitor take the same claims.
func TestRunAndMonitorSignalOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunAndMonitorSignalOnce)
}

func testRunAndMonitorSignalOnce(t *testing.T, open storetest.Opener) {
	sim := gpu.NewSim(gpu.SimOptions{})
	// Run and the monitor share a fake clock, stepped to the deadline and
	// past the grace once the command shows it took the signal before.
	clk := clock.NewFake(clock.System().Now())
	c := servicetest.SimClient(open(), sim, proc.CurrentIdentity(), clk)
	dir := t.TempDir()
	log, pidFile := filepath.Join(dir, "signals"), filepath.Join(dir, "pid")
	o := runOpts("sh", "-c", `echo $$ > "$1"; trap 'echo TERM >> "$0"' TERM; echo ready >> "$0"; while :; do sleep 0.05; done`, log, pidFile)
	o.Request = core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: 2 * time.Second}
	o.Grace = 1500 * time.Millisecond

	pol := policy.Default()
	pol.Grace = o.Grace
	m := monitor.New(c, monitor.Options{Backend: sim, Policy: &pol, SampleEvery: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	done := runInBackground(c, o)
	logSays := logSaying(t, log)
	logSays("ready\n")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	sim.Attach(coretest.IdleGPU, pid, 1<<30)
	parts, err := c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	clk.Set(parts[0].Expires)
	logSays("ready\nTERM\n")
	var r runResult
	coretest.AdvanceUntil(t, clk, 100*time.Millisecond, 15*time.Second, func() bool { // past the grace: SIGKILL
		select {
		case r = <-done:
			return true
		default:
			return false
		}
	})
	require.NoError(t, r.err)
	require.Equal(t, ExitExpired, r.res.ExitCode)
	got, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "ready\nTERM\n", string(got))
	// A monitor records a signal after sending it, in a transaction of its
	// own: the SIGKILL's event may land a moment after Run has returned.
	var kinds []string
	require.Eventually(t, func() bool {
		kinds = servicetest.EventKinds(t, c, r.res.Partition)
		return strings.Count(strings.Join(kinds, " "), "signalled") >= 2
	}, 15*time.Second, 10*time.Millisecond, "TERM and KILL recorded")
	require.Equal(t, 1, strings.Count(strings.Join(kinds, " "), "expired"), kinds)
	require.Equal(t, 2, strings.Count(strings.Join(kinds, " "), "signalled"), kinds)
}

// A context that ends while the command runs stops Run watching the ledger,
// not the command; it must not leave Run spinning on the closed watch,
// re-reading the ledger as fast as it can.
func TestRunOutlivesItsContextQuietly(t *testing.T) {
	t.Parallel()
	store := &coretest.CountingStore{Store: bolt.New(filepath.Join(t.TempDir(), "chronos.db"))}
	c := core.NewClient(core.Options{Ledger: store, Devices: servicetest.Devices})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := runOpts("sleep", "0.5")
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour}
	res, err := Run(ctx, c, o)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Less(t, store.Views.Load(), int64(20), "Run read the ledger in a loop")
}

// Signal names come from the system's table, both ways.
func TestSignalNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]syscall.Signal{"SIGRTMIN": 0, "sigcont": syscall.SIGCONT, "PWR": syscall.SIGPWR, "SIGSTKFLT": syscall.SIGSTKFLT} {
		got, err := human.ParseSignal(in)
		if want == 0 {
			require.ErrorIs(t, err, domain.ErrInput, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		require.Equal(t, "SIG"+strings.TrimPrefix(strings.ToUpper(in), "SIG"), proc.SignalName(got))
	}
	require.Equal(t, "SIGCHLD", proc.SignalName(syscall.SIGCHLD))
	require.Equal(t, "signal 40", proc.SignalName(syscall.Signal(40)))
}

// A release that meets a busy ledger is retried until it lands: here a
// process the command left behind holds the ledger's lock for a second
// after the command exits.
func TestRunReleaseRetriesBusyLedger(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	path := filepath.Join(t.TempDir(), "chronos.db")
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: &bolt.Ledger{Path: path, Timeout: 200 * time.Millisecond}, Devices: servicetest.Devices, As: &me})
	pidFile := filepath.Join(t.TempDir(), "holder")
	var said bytes.Buffer
	o := runOpts("sh", "-c", `flock -x -o "$0" sleep 1 & echo $! > "$1"; sleep 0.3`, path, pidFile)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}
	o.Say = func(f string, a ...any) { fmt.Fprintf(&said, f+"\n", a...) }
	res, err := Run(context.Background(), c, o)
	require.NoError(t, err, said.String())
	require.Equal(t, 0, res.ExitCode)
	p, err := c.Get(res.Partition)
	require.NoError(t, err)
	require.Equal(t, domain.Released, p.State, said.String())
	require.Contains(t, said.String(), "busy")

	// A lock held for longer than the retries last: the run fails, saying
	// the booking is still held and how to release it.
	o = runOpts("sh", "-c", `flock -x -o "$0" sleep 5 & echo $! > "$1"; sleep 0.3`, path, pidFile)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}
	o.ReleaseWithin = 600 * time.Millisecond
	res, err = Run(context.Background(), c, o)
	holder, _ := os.ReadFile(pidFile)
	if pid, perr := strconv.Atoi(strings.TrimSpace(string(holder))); perr == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	require.ErrorIs(t, err, storage.ErrBusy)
	require.ErrorContains(t, err, fmt.Sprintf("chronos release %d", res.Partition))
	require.Eventually(t, func() bool {
		p, err = c.Get(res.Partition)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, domain.Live, p.State)
}

// runResult is what Run returned.
type runResult struct {
	res RunResult
	err error
}

// runInBackground runs o through c and hands back what Run returns.
func runInBackground(c *core.Client, o RunOptions) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		res, err := Run(context.Background(), c, o)
		done <- runResult{res, err}
	}()
	return done
}

// logSaying waits until the command's log at path says exactly want.
func logSaying(t *testing.T, path string) func(want string) {
	return func(want string) {
		t.Helper()
		require.Eventually(t, func() bool { b, _ := os.ReadFile(path); return string(b) == want }, 15*time.Second, 5*time.Millisecond)
	}
}
