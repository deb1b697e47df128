package monitor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// Only root keeps other users' records: these tests give a member's
// chronos a view of /proc in which another user's live processes look gone
// — a user and mount namespace with a boot id of its own, as any member
// can make with `unshare`, or /proc mounted hidepid=2 — and check that it
// leaves their records alone, while root's monitor still keeps them.

// keeperRig is a ledger file every uid may write, with the test binary
// where they may run it, and root's client.
type keeperRig struct {
	t     *testing.T
	dir   string
	bin   string
	s     storage.Store
	sim   *gpu.Sim
	root  *core.Client
	other domain.Identity // the user whose records the member must leave alone
}

func newKeeperRig(t *testing.T) *keeperRig {
	t.Helper()
	daemon := servicetest.UIDOf(t, "daemon")
	dir, bin := coretest.OtherUserDir(t)
	s := bolt.New(filepath.Join(dir, "chronos.db"))
	sim := gpu.NewSim(gpu.SimOptions{})
	r := &keeperRig{t: t, dir: dir, bin: bin, s: s, sim: sim, root: servicetest.SimClient(s, sim, coretest.Root, nil), other: domain.Identity{UID: daemon, User: "daemon"}}
	// The waiters' GPU is full, so their requests wait.
	_, err := r.root.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	coretest.LetAllWrite(t, s)
	return r
}

// runBooking is what `chronos run` as owner records: a booking on GPU 1
// whose wrapper is a live process of owner's (the leader of its own group).
func (r *keeperRig) runBooking(owner domain.Identity) (uint64, *exec.Cmd) {
	r.t.Helper()
	wrapper := exec.Command(r.bin, "-test.run=^$")
	wrapper.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=sleep", "CHRONOS_TEST_ARG=10m")
	coretest.AsUser(wrapper, owner.UID)
	wrapper.SysProcAttr.Setpgid = true
	require.NoError(r.t, wrapper.Start())
	r.t.Cleanup(func() { _ = wrapper.Process.Kill(); _ = wrapper.Wait() })
	p, err := r.as(owner).Create(core.Request{Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(r.t, err)
	proc, err := proc.ThisProcess(wrapper.Process.Pid)
	require.NoError(r.t, err)
	require.NoError(r.t, r.root.SetWrapper(p.ID, domain.Wrapper{Process: proc, Group: wrapper.Process.Pid}))
	return p.ID, wrapper
}

func (r *keeperRig) as(who domain.Identity) *core.Client {
	return servicetest.SimClient(r.s, r.sim, who, nil)
}

func (r *keeperRig) state(id uint64) domain.State {
	r.t.Helper()
	p, err := r.root.Get(id)
	require.NoError(r.t, err)
	return p.State
}

// A member's own, unmodified monitor, started in a user and mount
// namespace with another boot id (N2 of the security report), sees every
// process of the host as gone. It releases nothing of another user's —
// their `chronos run` keeps its booking — nor drops their waiting request;
// what is its own user's it keeps as before. Root's monitor, on the host,
// still releases the other user's booking and drops their request once
// their processes are really gone.
func TestMemberMonitorInANamespaceKeepsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	nobody := servicetest.UIDOf(t, "nobody")
	coretest.NeedUserNamespaces(t, nobody)
	r := newKeeperRig(t)
	theirs, wrapper := r.runBooking(r.other)
	waiter := servicetest.StartWaiter(t, r.bin, r.s.String(), r.other.UID, strconv.Itoa(coretest.IdleGPU)+" 0.5")
	member := domain.Identity{UID: nobody, User: "nobody"}
	mine, err := r.as(member).Create(core.Request{Device: 2, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	gone, err := proc.ThisProcess(os.Getpid())
	require.NoError(t, err)
	gone.Start++ // this pid, but not the process that started then
	require.NoError(t, r.root.SetWrapper(mine.ID, domain.Wrapper{Process: gone}))

	bootID := filepath.Join(r.dir, "boot_id")
	require.NoError(t, os.WriteFile(bootID, []byte("00000000-0000-4000-8000-000000000000\n"), 0o644))
	now := clock.System().Now()
	passes := now.Format(time.RFC3339Nano) + "," + now.Add(2*time.Second).Format(time.RFC3339Nano)
	mon := exec.Command("unshare", "-U", "-m", "--map-user="+strconv.Itoa(nobody), "--map-group="+strconv.Itoa(nobody), "--keep-caps",
		"sh", "-c", `mount --bind "$1" /proc/sys/kernel/random/boot_id && test "$(cat /proc/sys/kernel/random/boot_id)" = "$2" && exec "$0" -test.run='^$'`,
		r.bin, bootID, "00000000-0000-4000-8000-000000000000")
	mon.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=monitor", "CHRONOS_TEST_DB="+r.s.String(), "CHRONOS_TEST_ARG="+passes)
	coretest.AsUser(mon, nobody)
	out, err := mon.CombinedOutput()
	require.NoError(t, err, "the member's monitor: %s", out)

	require.Equal(t, domain.Live, r.state(theirs), "their chronos run still runs: %v", servicetest.EventKinds(t, r.root, theirs))
	require.Equal(t, domain.Waiting, waiter.RequestIn(t, r.root).State)
	require.Equal(t, domain.Released, r.state(mine.ID), "its own user's dead wrapper: released as before")

	// Root's monitor keeps everyone's: once the other user's processes
	// are really gone, it releases their booking and drops their request.
	require.NoError(t, wrapper.Process.Kill())
	_ = wrapper.Wait()
	require.NoError(t, waiter.Cmd.Process.Kill())
	_ = waiter.Cmd.Wait()
	rootMon := New(r.root, Options{Backend: r.sim})
	_, err = rootMon.Tick()
	require.NoError(t, err)
	require.Equal(t, domain.Released, r.state(theirs))
	require.Equal(t, []string{"created", "run", "released"}, servicetest.EventKinds(t, r.root, theirs))
	req := waiter.RequestIn(t, r.root)
	require.Equal(t, domain.Cancelled, req.State)
	require.Contains(t, req.Reason, "its waiting process")
}

// On a host whose /proc is mounted hidepid=2 (N3 of the security report),
// a member's ordinary create sees no process of another user's: it books,
// and leaves their waiting request in line.
func TestCreateUnderHidepidLeavesOthersWaiting(t *testing.T) {
	t.Parallel()
	nobody := servicetest.UIDOf(t, "nobody")
	r := newKeeperRig(t)
	waiter := servicetest.StartWaiter(t, r.bin, r.s.String(), r.other.UID, strconv.Itoa(coretest.IdleGPU)+" 0.5")

	// A private mount namespace with /proc mounted hidepid=2, where the
	// member checks that the waiter is hidden, then books GPU 1.
	book := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid="$1" --regid="$1" --clear-groups sh -c 'test ! -e /proc/$1 && exec "$0" -test.run="^$"' "$0" "$2"`,
		r.bin, strconv.Itoa(nobody), strconv.Itoa(waiter.Cmd.Process.Pid))
	book.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=book", "CHRONOS_TEST_DB="+r.s.String(), "CHRONOS_TEST_ARG=1")
	out, err := book.CombinedOutput()
	require.NoError(t, err, "the member's create: %s", out)

	parts, err := r.root.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 2, "root's hold and the member's booking")
	require.Equal(t, nobody, parts[1].UID)
	req := waiter.RequestIn(t, r.root)
	require.Equal(t, domain.Waiting, req.State, "dropped: %s", req.Reason)
}

// A member's monitor sees no process of another user's booking (hidden
// from it, or in another namespace): it never counts the booking idle,
// warns or reclaims it. Its own user's idle booking it reclaims as
// before, and root's monitor reclaims anyone's.
func TestMemberMonitorNeverReclaimsOthersIdleBookings(t *testing.T) {
	t.Parallel()
	member, keeper := false, true
	for _, c := range []struct {
		name      string
		owner     domain.Identity
		root      *bool
		reclaimed bool
	}{
		{"another user's, a member's monitor", coretest.Alice, &member, false},
		{"its own user's, a member's monitor", domain.Identity{UID: proc.HostUID(), User: "me"}, &member, true},
		{"another user's, root's monitor", coretest.Alice, &keeper, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newIdleRig(t, c.owner)
			id, _ := r.book(false)
			m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{Root: c.root})
			r.run(10*time.Minute, 10*time.Second, m)
			got, err := r.c.Get(id)
			require.NoError(t, err)
			if !c.reclaimed {
				require.Equal(t, domain.Live, got.State)
				require.Equal(t, []string{"created"}, servicetest.EventKinds(t, r.c, id))
				require.Zero(t, r.usage(id).IdleFor)
				return
			}
			require.Equal(t, []string{"created", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
		})
	}
}

// goneSignaller finds every process gone, as a member's monitor finds
// another user's process hidden from its /proc (hidepid=2).
type goneSignaller struct{}

func (goneSignaller) Signal(pid int, _ uint64, _ syscall.Signal) error {
	return fmt.Errorf("%w: pid %d", proc.ErrProcessGone, pid)
}

// A member's monitor that finds another user's process gone as it comes to
// signal it at expiry leaves the signal to root's monitor, as one it may
// not send, rather than taking it as done: root's monitor sends it.
func TestMemberMonitorLeavesOthersGoneProcessesToRoot(t *testing.T) {
	t.Parallel()
	owner := domain.Identity{UID: servicetest.UIDOf(t, "daemon"), User: "daemon"}
	sim := gpu.NewSim(gpu.SimOptions{})
	clk := clock.NewFake(clock.System().Now())
	c := servicetest.SimClient(bolt.New(filepath.Join(t.TempDir(), "chronos.db")), sim, owner, clk)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Second})
	require.NoError(t, err)
	job := exec.Command("sleep", "60")
	job.Env = append(os.Environ(), procfs.PartitionEnv+"="+strconv.FormatUint(p.ID, 10))
	coretest.AsUser(job, owner.UID)
	require.NoError(t, job.Start())
	t.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(job.Process.Pid)
		return err == nil && info.PartitionID != ""
	}, 2*time.Second, 5*time.Millisecond)
	sim.Attach(coretest.IdleGPU, job.Process.Pid, 1<<30)
	clk.Set(p.Expires)

	member := false
	_, err = New(c, Options{Backend: sim, Root: &member, Signaller: goneSignaller{}}).Tick()
	require.NoError(t, err)
	require.Nil(t, job.ProcessState)
	require.Equal(t, []string{"created", "expired", "denied"}, servicetest.EventKinds(t, c, p.ID))

	keeper := true
	_, err = New(c, Options{Backend: sim, Root: &keeper}).Tick()
	require.NoError(t, err)
	require.Equal(t, syscall.SIGTERM, coretest.WaitStatus(t, job, 2*time.Second).Signal())
	require.Equal(t, []string{"created", "expired", "denied", "signalled"}, servicetest.EventKinds(t, c, p.ID))
}
