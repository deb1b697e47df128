package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A hold shows in list, --json and the audit trail, and so does what a
// monitor measured (bad input to hold is in TestBadInputChangesNothing).
func TestHoldAndIdleOnTheCommandLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.5", "8h").code)

	// What a monitor would have recorded: idle for 50 minutes, just now.
	now := clock.System().Now()
	require.NoError(t, bolt.New(db).Update(context.Background(), func(tx *storage.Tx) error {
		return tx.PutBookingUsage(domain.BookingUsage{Partition: 1, Through: now, Idle: 50 * time.Minute, IdleFor: 50 * time.Minute, MemoryPeak: 1 << 30})
	}))
	r := chronos(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID\s.*\sIDLE\s+STATE\s+COMPUTE$`, r.stdout)
	require.Regexp(t, `(?m)^1\s.*\s50m\s+live\s+-$`, r.stdout)
	parts := listJSON(t, db)
	require.True(t, parts[0].Idle)
	require.Equal(t, 3000.0, parts[0].IdleSeconds)
	require.Equal(t, uint64(1<<30), parts[0].Usage.MemoryPeak)

	r = chronos(t, db, "hold", "1", "2h", "--reason", "tokenizing on CPU")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Held 1 until")
	require.Regexp(t, `(?m)^1\s.*\s50m \(held 2h\)\s+live\s+-$`, chronos(t, db, "list").stdout)
	parts = listJSON(t, db)
	require.Equal(t, 1, parts[0].Usage.Holds)
	require.InDelta(t, now.Add(2*time.Hour).Unix(), parts[0].Usage.HeldUntil.Unix(), 5)
	require.Regexp(t, `held\s+#1 by root: for 2h`, chronos(t, db, "events").stdout)
}

// reclaim=when-waiting end to end, with real processes: root's two idle
// bookings (no GPU work) fill GPU 0 and GPU 1; nobody waits with `create
// --wait` for GPU 0. The real monitor, with the ladder shortened to a
// minute, warns both, reclaims the one on GPU 0 and in the same pass books
// its room for nobody, whose create returns booked; the one on GPU 1, which
// nobody waits for, is only warned. That takes two or three of the
// monitor's one-minute accounting windows, aligned to its clock: the test
// moves the clock of the waiter and the monitor ahead in small steps
// (shiftFile) instead of waiting real minutes.
func TestWhenWaitingReclaimsForARealWaiter(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	// In-process setup first: cli keeps the test's own, unshifted clock.
	r := cli(t, db, "policy", "set", "reclaim=when-waiting", "idle=1m", "idle-warn=10s", "idle-start=0s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, cli(t, db, "create", "0", "80%", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "80%", "1h").code)
	require.NoError(t, os.Chmod(db, 0o666))
	shift := newShiftFile(t, filepath.Dir(db)) // nobody reads it there

	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	waiter := exec.Command(bin, "create", "0", "50%", "10m", "--wait")
	waiter.Env = append(os.Environ(), append(binEnv(db), append(shift.Env(), "HOME=/nonexistent", "GOCOVERDIR="+cover)...)...)
	waiter.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	var booked bytes.Buffer
	waiter.Stdout = &booked
	said := saying(t, waiter)
	require.Contains(t, until(t, said, "waits"), "GPU 0 has 20% free, 50% asked")

	monitor := waiterCmd(db, "--monitor", "--log-format", "json")
	monitor.Env = append(monitor.Env, shift.Env()...)
	acts := saying(t, monitor)
	t.Cleanup(func() { _ = monitor.Process.Signal(syscall.SIGTERM); _ = monitor.Wait() })
	started := make(chan struct{})
	go func() {
		for acts.Scan() {
			if strings.Contains(acts.Text(), `"started"`) {
				close(started)
				break
			}
		}
		rest(acts)
	}()
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the monitor never started")
	}

	done := make(chan error, 1)
	go func() { rest(said); done <- waiter.Wait() }()
	// Five seconds of the shifted clock at a time, so that the monitor
	// samples every window early enough to judge it, paced so that it
	// keeps up (one that misses a step only judges a window later); the
	// waiter's booking ends the steps.
	const step, most = 5 * time.Second, 10 * time.Minute
	for waited := false; !waited; {
		select {
		case err := <-done:
			require.NoError(t, err, "nobody's create --wait")
			waited = true
		case <-time.After(150 * time.Millisecond):
			if shift.Advance(step) > most {
				t.Fatalf("nobody still waits after %v of shifted time; events:\n%s", most, shifted(t, db, shift, "events", "-n", "0").stdout)
			}
		}
	}
	require.Regexp(t, `^Booked 3: 50% \(40.0 GiB\) of GPU 0 for nobody, until .*\.\n$`, booked.String())

	var events []view.EventJSON
	require.NoError(t, json.Unmarshal([]byte(shifted(t, db, shift, "events", "-n", "0", "--json").stdout), &events))
	kinds := map[uint64][]string{}
	for _, e := range events {
		if e.Booking != 0 {
			kinds[e.Booking] = append(kinds[e.Booking], string(e.Kind))
			if e.Kind == domain.EventIdle {
				require.Regexp(t, `^idle for [1-9]\d*[sm] on GPU \d: it will be released after 1m idle if someone is waiting for the GPU`, e.Detail)
			}
		}
	}
	require.Equal(t, []string{"created", "idle", "reclaimed"}, kinds[1], "warned, then reclaimed for the waiter")
	require.Equal(t, "created", kinds[3][0], "nobody's booking")
	require.NotContains(t, kinds[2], "reclaimed", "nobody waits for GPU 1")
	require.Contains(t, kinds[2], "idle", "warned all the same")
	r = shifted(t, db, shift, "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var live []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &live))
	require.Len(t, live, 2)
	require.Equal(t, uint64(2), live[0].ID)
	require.Equal(t, uint64(3), live[1].ID)
	require.Equal(t, "nobody", live[1].Owner)

	// The reclaimed booking is reclaimed, not expired, with its deadline.
	r = shifted(t, db, shift, "list", "--all", "--state", "reclaimed", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var reclaimed []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &reclaimed))
	require.Len(t, reclaimed, 1)
	require.Equal(t, uint64(1), reclaimed[0].ID)
	require.Equal(t, domain.StatusReclaimed, reclaimed[0].State)
	require.True(t, reclaimed[0].Ended.Before(reclaimed[0].Expires), "ended before the deadline it keeps")
	require.Contains(t, shifted(t, db, shift, "show", "1").stdout, "reclaimed at ")
}

// shifted runs the binary, as root, on the clock shift moves.
func shifted(t *testing.T, db string, shift *shiftFile, args ...string) result {
	t.Helper()
	return runWith(t, chronosBin, db, nil, shift.Env(), 0, args...)
}
