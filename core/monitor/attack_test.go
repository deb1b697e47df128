package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// within fails the test when fn has not returned after d: a hang.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s hung (still running after %s)", what, d)
	}
}

// A member swapping a FIFO with the ledger in a loop (renameat2 with
// RENAME_EXCHANGE, in a directory where they may rename it: the sticky
// shared directory forbids that, older ones did not) makes no reader, no
// monitor and no repair hang: opening never blocks, and what is not a
// regular file is refused. The monitor expires a booking meanwhile.
func TestFIFOSwapLoopHangsNothing(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)
	db := filepath.Join(dir, "chronos.db")
	c := servicetest.ClientAt(db, nil, coretest.Root)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: 2 * time.Second})
	require.NoError(t, err)
	for range 5 {
		_, err := c.Create(core.Request{Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
	}

	swap := exec.Command(bin, "-test.run=^$")
	swap.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=swap", "CHRONOS_TEST_ARG="+db)
	swap.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	swap.Stderr = os.Stderr
	require.NoError(t, swap.Start())
	t.Cleanup(func() { swap.Process.Kill(); swap.Wait() })

	quick := core.NewClient(core.Options{Ledger: &bolt.Ledger{Path: db, Timeout: time.Second}, Devices: servicetest.Devices, As: &coretest.Root})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); New(quick, Options{}).Run(ctx) }()

	listed := 0
	for range 40 {
		within(t, 10*time.Second, "list", func() {
			if _, err := quick.List(false); err == nil {
				listed++
			}
		})
	}
	require.NotZero(t, listed, "no list got through")
	require.Eventually(t, func() bool {
		got, err := quick.Get(p.ID)
		return err == nil && got.State == domain.Expired
	}, 20*time.Second, 50*time.Millisecond, "the monitor never expired the booking")
	cancel()
	within(t, 10*time.Second, "the monitor's stop", func() { <-stopped })
	for range 5 {
		within(t, 10*time.Second, "doctor", func() { _, _ = quick.Ledger().(*bolt.Ledger).Diagnose() })
	}
	within(t, 10*time.Second, "doctor --repair", func() { _, _ = quick.Ledger().(*bolt.Ledger).Repair() })
}

// Anyone can put CHRONOS_PARTITION_ID (or CHRONOS_BOOKING_ID) in their
// environment. A process of nobody's naming daemon's booking used to count
// against it: the root monitor stopped daemon's job as over budget, and the
// forged process escaped unbooked=terminate. Now the claim of a process
// that is not the booking owner's is ignored and named.
func TestForgedBookingIDIsUnbooked(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(bolt.New(filepath.Join(dir, "chronos.db")), sim, coretest.Root, nil)
	daemon := domain.Identity{UID: coretest.DaemonUID, User: proc.UserName(coretest.DaemonUID)}
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(2 << 30), Duration: time.Hour, For: daemon.User})
	require.NoError(t, err)
	id := strconv.FormatUint(p.ID, 10)

	job := startAs(t, bin, coretest.DaemonUID, nil, procfs.PartitionEnv+"="+id)
	forged := startAs(t, bin, coretest.NobodyUID, nil, procfs.BookingEnv+"="+id)
	sim.Attach(coretest.IdleGPU, job.Process.Pid, 1<<30)
	sim.Attach(coretest.IdleGPU, forged.Process.Pid, 20<<30)

	s, err := sim.Sample()
	require.NoError(t, err)
	atts := map[int]admission.Attribution{}
	for _, a := range admission.Attribute(s, []domain.Partition{p.Partition}, clock.System().Now()) {
		atts[a.PID] = a
	}
	require.Equal(t, admission.Booked, atts[job.Process.Pid].Verdict)
	require.Equal(t, admission.Unbooked, atts[forged.Process.Pid].Verdict)
	require.Equal(t, p.ID, atts[forged.Process.Pid].Claimed)
	require.Zero(t, atts[forged.Process.Pid].Partition)

	strict := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActTerminate, Unbooked: policy.ActTerminate, Grace: time.Minute, MaxLength: time.Hour}
	var log actLog
	_, err = New(c, Options{Backend: sim, Policy: &strict, OnAct: log.add}).Tick()
	require.NoError(t, err)
	ws := coretest.WaitStatus(t, forged, 2*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	time.Sleep(100 * time.Millisecond)
	require.True(t, coretest.Alive(job), "daemon's job was stopped for a process that only claimed its booking")
	require.Len(t, log.acts, 1)
	require.Equal(t, domain.EventSignalled, log.acts[0].Kind)
	require.Contains(t, log.acts[0].Detail, fmt.Sprintf("its environment names booking #%d, which is daemon's", p.ID))
}

// A FIFO named control and a process named like the MPS control daemon,
// both nobody's, used to make a root monitor believe MPS held every
// booking to its memory, and skip overbudget=terminate; then (the red
// team's N1) a member's own such fake still switched the check off for
// the member's own bookings. Now only root's daemon, or the booking
// owner's in a pipe directory the policy names, is trusted, and only for
// processes `chronos run` started with its limits.
func TestFakeMPSDaemonIsNotTrusted(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)
	fake := filepath.Join(dir, "nvidia-cuda-mps-control")
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	coretest.WriteExecutable(t, fake, data)

	for i, tc := range []struct {
		name            string
		daemon, booking int
		named, enforced bool
	}{
		{"another member's daemon", coretest.NobodyUID, coretest.DaemonUID, true, false},
		{"the owner's own fake daemon", coretest.NobodyUID, coretest.NobodyUID, false, false},
		{"the owner's daemon in a pipe directory root named", coretest.DaemonUID, coretest.DaemonUID, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pipeDir := filepath.Join(dir, "owner-"+strconv.Itoa(i), "nvidia-mps")
			require.NoError(t, os.MkdirAll(pipeDir, 0o755))
			require.NoError(t, os.Chown(pipeDir, tc.daemon, tc.daemon))
			out, err := coretest.AsOther(t, tc.daemon, pipeDir, "mkfifo control")
			require.NoError(t, err, out)
			startAs(t, fake, tc.daemon, []string{"-d"})
			mps := procfs.DetectMPS(pipeDir)
			require.True(t, mps.Running, mps.Detail)
			require.Equal(t, tc.daemon, mps.Owner)

			sim := gpu.NewSim(gpu.SimOptions{})
			c := servicetest.SimClient(bolt.New(filepath.Join(dir, "chronos-"+strconv.Itoa(i)+".db")), sim, coretest.Root, nil)
			p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(2 << 30), Duration: time.Hour, For: proc.UserName(tc.booking)})
			require.NoError(t, err)
			// As `chronos run` starts it, in a user's environment that
			// names the daemon's pipe directory: 30 GiB on 2 GiB.
			job := startAs(t, bin, tc.booking, nil, append(core.RunEnv(nil, p.Partition, mps), "CUDA_MPS_PIPE_DIRECTORY="+pipeDir)...)
			sim.Attach(coretest.IdleGPU, job.Process.Pid, 30<<30)

			strict := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActTerminate, Unbooked: policy.ActWarn, Grace: time.Minute, MaxLength: time.Hour}
			if tc.named {
				strict.MPSUserDirs = []string{pipeDir}
			}
			_, err = New(c, Options{Backend: sim, Policy: &strict}).Tick()
			require.NoError(t, err)
			if tc.enforced {
				time.Sleep(100 * time.Millisecond)
				require.True(t, coretest.Alive(job), "MPS holds this job to its booking: it was not ours to stop")
				return
			}
			ws := coretest.WaitStatus(t, job, 2*time.Second)
			require.Equal(t, syscall.SIGTERM, ws.Signal())
		})
	}
}

// MPS was detected once, when the monitor started: a daemon started later
// went unseen, and one that stopped was still trusted. Now it is checked at
// every sample that finds a process over budget.
func TestMPSIsCheckedAtEverySample(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)
	fake := filepath.Join(dir, "nvidia-cuda-mps-control")
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	coretest.WriteExecutable(t, fake, data)
	pipeDir := filepath.Join(dir, "nvidia-mps")
	require.NoError(t, os.Mkdir(pipeDir, 0o755))

	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(bolt.New(filepath.Join(dir, "chronos.db")), sim, coretest.Root, nil)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(2 << 30), Duration: time.Hour, For: proc.UserName(coretest.DaemonUID)})
	require.NoError(t, err)
	env := append(core.RunEnv(nil, p.Partition, procfs.MPS{Running: true}), "CUDA_MPS_PIPE_DIRECTORY="+pipeDir)
	strict := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActTerminate, Unbooked: policy.ActWarn, Grace: time.Minute, MaxLength: time.Hour}
	m := New(c, Options{Backend: sim, Policy: &strict})
	sample := func() {
		t.Helper()
		m.nextSample = time.Time{}
		_, err := m.Tick()
		require.NoError(t, err)
	}

	// No daemon yet: nothing holds the job to its booking.
	before := startAs(t, bin, coretest.DaemonUID, nil, env...)
	sim.Attach(coretest.IdleGPU, before.Process.Pid, 3<<30)
	sample()
	require.Equal(t, syscall.SIGTERM, coretest.WaitStatus(t, before, 2*time.Second).Signal())

	// Root's multi-user daemon starts after the monitor did: seen.
	require.NoError(t, syscall.Mkfifo(filepath.Join(pipeDir, "control"), 0o600))
	daemon := startAs(t, fake, 0, []string{"-d", "-M"})
	job := startAs(t, bin, coretest.DaemonUID, nil, env...)
	sim.Attach(coretest.IdleGPU, job.Process.Pid, 3<<30)
	sample()
	time.Sleep(100 * time.Millisecond)
	require.True(t, coretest.Alive(job), "root's daemon holds the job to its booking")

	// It stops: the next sample checks the job again.
	require.NoError(t, daemon.Process.Kill())
	_, _ = daemon.Process.Wait()
	sample()
	require.Equal(t, syscall.SIGTERM, coretest.WaitStatus(t, job, 2*time.Second).Signal())
}

// A process's command line reaches the audit trail exactly as it is (JSON
// and `events --json` stay exact; terminals get it escaped) but bounded:
// one event used to hold a 220 KB command line.
func TestEventsHoldABoundedCommandLine(t *testing.T) {
	t.Parallel()
	dir, _ := coretest.OtherUserDir(t)
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(bolt.New(filepath.Join(dir, "chronos.db")), sim, coretest.Root, nil)
	_, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	long := "\x1b]2;pwned\x07" + strings.Repeat("ü", 55_000) // 110 KB each
	proc := exec.Command("sh", "-c", "sleep 60; :", long, long)
	proc.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: coretest.NobodyUID, Gid: coretest.NobodyUID}}
	require.NoError(t, proc.Start())
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(proc.Process.Pid)
		return err == nil && len(info.Command) > 200_000
	}, 5*time.Second, 5*time.Millisecond)
	sim.Attach(coretest.IdleGPU, proc.Process.Pid, 1<<30)

	var log actLog
	_, err = New(c, Options{Backend: sim, OnAct: log.add}).Tick()
	require.NoError(t, err)
	evs, err := c.LastEvents(1)
	require.NoError(t, err)
	require.Equal(t, domain.EventUnbooked, evs[0].Kind)
	require.LessOrEqual(t, len(evs[0].Detail), domain.MaxDetail+40)
	require.Contains(t, evs[0].Detail, "sh -c sleep 60; : \x1b]2;pwned\x07üü")
	require.Contains(t, evs[0].Detail, "more bytes)")
	require.True(t, utf8.ValidString(evs[0].Detail), "cut inside a character")
	require.Len(t, log.acts, 1)
	require.LessOrEqual(t, len(log.acts[0].Detail), domain.MaxDetail+40)
}

// startAs starts bin (a copy of this test binary) as uid, sleeping in the
// "sleep" role with args and env, and waits until /proc shows its
// environment.
func startAs(t *testing.T, bin string, uid int, args []string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(coretest.RoleEnv("CHRONOS_TEST_ROLE=sleep", "CHRONOS_TEST_ARG=60s"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	booked := slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, procfs.PartitionEnv+"=") || strings.HasPrefix(kv, procfs.BookingEnv+"=")
	})
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(cmd.Process.Pid)
		return err == nil && info.UID == uid && strings.Contains(info.Command, filepath.Base(bin)) && (!booked || info.PartitionID != "")
	}, 5*time.Second, 5*time.Millisecond)
	return cmd
}
