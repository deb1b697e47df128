package core_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// TestMain lets the test binary play a chronos process (see
// servicetest.Main), with its own locks, as in production. It is an
// external test (package core_test), as the roles are, so that they can
// use servicetest's waiter, which imports core; the internal tests start
// the same binary.
func TestMain(m *testing.M) { servicetest.Main(m, playRole) }

// playRole acts on the store db names: a ledger file's path or an etcd URL.
func playRole(role, db, arg string) int {
	c := core.NewClient(core.Options{Ledger: coretest.OpenSpec(db), Devices: servicetest.Devices, Host: os.Getenv("CHRONOS_TEST_HOST")})
	switch role {
	case "book":
		return servicetest.PlayBook(c, arg)
	case "release":
		id, _ := strconv.ParseUint(arg, 10, 64)
		_, err := c.Release(id)
		if errors.Is(err, domain.ErrNotOwner) {
			return coretest.RoleNotOwner
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
	case "churn":
		// Write for ever; the test kills us at a random point.
		for {
			p, err := c.Create(core.Request{Device: 1, Memory: human.Fraction(0.01), Duration: time.Hour})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return coretest.RoleFailed
			}
			if p.ID%2 == 0 {
				if _, err := c.Release(p.ID); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return coretest.RoleFailed
				}
			}
		}
	case "hold":
		return coretest.PlayHold(c.Ledger(), arg)
	case "wait":
		return servicetest.PlayWaiter(c, arg)
	case "holdturn":
		return playHoldTurn(c, arg)
	case "whoami":
		fmt.Println(proc.RealRoot(), proc.CurrentIdentity().UID)
	case "pingwait":
		return playPingWaiter(c)
	default:
		return coretest.RoleFailed
	}
	return coretest.RoleOK
}

// Sixteen processes race to book 10% of one GPU each: exactly ten win.
func TestConcurrentProcessesNeverOverbook(t *testing.T) {
	// Not beside the other tests: on a loaded machine sixteen writers
	// racing for etcd lose often enough for some to give up busy.
	storetest.Each(t, testConcurrentProcessesNeverOverbook)
}

func testConcurrentProcessesNeverOverbook(t *testing.T, open storetest.Opener) {
	db := open().String()
	const n = 16
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = coretest.RoleCmd(t, "book", db, "")
	}
	// Start them all before waiting on any, so they really overlap.
	for _, cmd := range cmds {
		require.NoError(t, cmd.Start())
	}
	codes := map[int]int{}
	for _, cmd := range cmds {
		codes[coretest.ExitCode(cmd.Wait())]++
	}
	require.Equal(t, map[int]int{coretest.RoleOK: 10, coretest.RoleOverbooked: 6}, codes)

	c := servicetest.ClientOn(coretest.OpenSpec(db), nil, coretest.Alice)
	parts, err := c.List(true)
	require.NoError(t, err)
	require.Len(t, parts, 10)
	var sum int64
	for _, p := range parts {
		sum += p.SharePPM
	}
	require.Equal(t, int64(human.Ppm), sum)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 10)
}

// A writer killed with SIGKILL at random points, hundreds of times, never
// leaves a damaged ledger or half a booking: after every kill the ledger
// opens, passes bbolt's check and holds only whole records.
func TestKilledWriterLeavesWholeLedger(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testKilledWriterLeavesWholeLedger)
}

func testKilledWriterLeavesWholeLedger(t *testing.T, open storetest.Opener) {
	s := open()
	db := s.String()
	_, file := s.(*bolt.Ledger)
	rounds := 300
	if testing.Short() || !file {
		rounds = 30 // etcd: what it keeps whole is its own affair; this checks the transactions
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for i := range rounds {
		cmd := coretest.RoleCmd(t, "churn", db, "")
		cmd.Stderr = nil
		require.NoError(t, cmd.Start())
		// The role starts in a few ms; then it writes about once a ms.
		time.Sleep(time.Duration(rng.IntN(25_000)) * time.Microsecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		if file {
			if _, err := os.Stat(db); err != nil {
				continue // killed before its first write
			}
			l := bolt.New(db)
			problems, err := l.Check()
			require.NoError(t, err, "round %d", i)
			require.Empty(t, problems, "round %d", i)
		}
		requireWhole(t, db)
	}
}

// requireWhole checks that every booking is complete and that every booking
// has the event of its creation (the two are written in one transaction).
func requireWhole(t *testing.T, db string) {
	t.Helper()
	c := servicetest.ClientOn(coretest.OpenSpec(db), nil, coretest.Alice)
	parts, err := c.List(true)
	require.NoError(t, err)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	created := map[uint64]bool{}
	released := map[uint64]bool{}
	for _, e := range evs {
		switch e.Kind {
		case "created":
			created[e.Partition] = true
		case "released":
			released[e.Partition] = true
		}
	}
	for _, p := range parts {
		require.NotZero(t, p.ID)
		require.NotZero(t, p.SharePPM)
		require.False(t, p.Expires.IsZero())
		require.True(t, created[p.ID], "booking %d has no created event", p.ID)
		require.Equal(t, p.State == domain.Released, released[p.ID], "booking %d: state %s", p.ID, p.State)
	}
	require.Len(t, created, len(parts))
}

// A booking made by one uid cannot be released by another, even one that
// can write the file.
func TestOtherUserCannotRelease(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)

	db := filepath.Join(dir, "chronos.db")
	owner := servicetest.ClientAt(db, nil, domain.Identity{UID: 0, User: "root"})
	p, err := owner.Create(core.Request{Device: 0, Memory: human.Fraction(0.2), Duration: time.Hour})
	require.NoError(t, err)
	require.NoError(t, os.Chmod(db, 0o666))

	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=release", "CHRONOS_TEST_DB="+db, "CHRONOS_TEST_ARG="+strconv.FormatUint(p.ID, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	require.Equal(t, coretest.RoleNotOwner, coretest.ExitCode(cmd.Run()))

	got, err := owner.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State)
}

// A process stopped (SIGSTOP) while it holds the ledger makes the others
// fail with "busy" within their timeout — readers and writers, never a
// hang — and once it runs again (SIGCONT) everyone carries on.
func TestStoppedHolderMakesOthersBusyNotStuck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "chronos.db")
	c := servicetest.ClientAt(db, nil, coretest.Alice)
	_, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)

	holder, marker := coretest.HoldLedger(t, db)
	require.NoError(t, holder.Process.Signal(syscall.SIGSTOP))

	quick := core.NewClient(core.Options{Ledger: &bolt.Ledger{Path: db, Timeout: 500 * time.Millisecond}, Devices: servicetest.Devices, As: &coretest.Alice})
	for name, op := range map[string]func() error{
		"create": func() error {
			_, err := quick.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
			return err
		},
		"list":    func() error { _, err := quick.List(false); return err },
		"release": func() error { _, err := quick.Release(1); return err },
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		require.ErrorIs(t, err, storage.ErrBusy, name)
		require.ErrorContains(t, err, "another chronos process has held")
		// Busy, not stuck: the holder never runs again in this loop, so a
		// stuck call would wait forever. Ten lock timeouts leave a loaded
		// machine's scheduling room.
		require.Less(t, took, 5*time.Second, "%s waited %s on a 500ms timeout", name, took)
	}

	require.NoError(t, holder.Process.Signal(syscall.SIGCONT))
	require.NoError(t, os.WriteFile(marker+".go", nil, 0o600))
	require.NoError(t, holder.Wait())
	p, err := quick.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, uint64(2), p.ID)
	_, err = quick.Release(1)
	require.NoError(t, err)
	evs, err := quick.Events(0, 0)
	require.NoError(t, err)
	require.Equal(t, domain.EventKind("held"), evs[1].Kind, "the stopped process's transaction committed once it ran again")
}

// playHoldTurn is a writer that books 10% of GPU 0 in one transaction and,
// at each try, after its reads and before its commit, writes arg.N (N the
// try) and waits for arg.goN: a test makes its first tries lose, so that
// it takes the writers' turn, and kills it there.
func playHoldTurn(c *core.Client, arg string) int {
	try := 0
	err := c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
		try++
		if _, err := tx.LivePartitions(); err != nil {
			return err
		}
		now := c.Now()
		p := domain.Partition{Host: c.Host(), SharePPM: 100_000, State: domain.Live, Created: now, Start: now, Expires: now.Add(time.Hour)}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		if err := tx.AddEvent(domain.Event{Kind: domain.EventCreated, Partition: p.ID, Time: now}); err != nil {
			return err
		}
		if err := os.WriteFile(fmt.Sprintf("%s.%d", arg, try), nil, 0o600); err != nil {
			return err
		}
		for range 1000 {
			if _, err := os.Stat(fmt.Sprintf("%s.go%d", arg, try)); err == nil {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return errors.New("never told to go on")
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	return coretest.RoleOK
}

// playPingWaiter waits in line each time it reads a line: it asks for all
// of GPU 0, says "queued", waits, says "booked" the moment it learns it is
// booked, then releases the booking and says "released".
func playPingWaiter(c *core.Client) int {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		p, entry, err := c.Enqueue(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour}, admission.WaitOptions{})
		if err != nil || p != nil {
			fmt.Fprintln(os.Stderr, "not queued:", err)
			return coretest.RoleFailed
		}
		fmt.Println("queued")
		if p, err = c.Wait(context.Background(), entry.ID, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
		fmt.Println("booked")
		if _, err := c.Release(p.ID); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
		fmt.Println("released")
	}
	return coretest.RoleOK
}
