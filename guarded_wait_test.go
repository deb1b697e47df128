package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
)

// A member's waiter keeps its place when root's keeper is killed: it waits
// for the next keeper and hands itself to it, and is booked when room
// comes, whether room came while no keeper ran (root released directly)
// or after the next one started.
func TestGuardedWaiterOutlivesItsKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	keeper := lab.startKeeper(t)
	for _, gpu := range []string{"0", "1"} {
		r := lab.as(t, nil, "create", gpu, "1", "1h")
		require.Equal(t, 0, r.code, r.stderr)
	}
	waiting := func(n int) func() bool {
		return func() bool {
			r := lab.as(t, nil, "queue", "--json")
			return r.code == 0 && strings.Count(r.stdout, `"position"`) == n
		}
	}
	var outs [2]strings.Builder
	var waiters [2]*exec.Cmd
	for i, gpu := range []string{"0", "1"} {
		cmd := lab.command(member, nil, "create", gpu, "0.5", "1h", "--wait")
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waiters[i] = cmd
		require.Eventually(t, waiting(i+1), patience, 20*time.Millisecond, "waiter %d joined the line", i)
	}

	// Killed mid-wait; the next keeper takes the waiters over.
	require.NoError(t, keeper.Process.Signal(syscall.SIGKILL))
	require.Error(t, keeper.Wait())
	keeper = lab.startKeeper(t)
	r := lab.as(t, nil, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, waiters[0].Wait(), outs[0].String())
	require.Contains(t, outs[0].String(), "Booked 3: 50% (40.0 GiB) of GPU 0 for nobody")

	// Room comes while no keeper runs: root's release books the request;
	// its waiter, back with the next keeper, gets the booking.
	require.NoError(t, keeper.Process.Signal(syscall.SIGKILL))
	require.Error(t, keeper.Wait())
	r = lab.as(t, nil, "release", "2")
	require.Equal(t, 0, r.code, r.stderr)
	lab.startKeeper(t)
	require.NoError(t, waiters[1].Wait(), outs[1].String())
	require.Contains(t, outs[1].String(), "Booked 4: 50% (40.0 GiB) of GPU 1 for nobody")
	require.Eventually(t, waiting(0), patience, 20*time.Millisecond)
}

// A member's app on a guarded ledger runs no monitor of its own and says
// root's keeper keeps the ledger; it joins the line through the keeper,
// and on q, b hands its request to a background waiter (create --wait
// --request), which waits through the keeper in the same place and is
// booked when room comes.
func TestGuardedAppHandsItsRequestToTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	lab.startKeeper(t)
	r := lab.as(t, nil, "create", "0", "1", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	state := openDir(t) // nobody's state directory
	env := append(binEnv(lab.db), "GOCOVERDIR="+cover, "HOME=/nonexistent", "XDG_STATE_HOME="+state, "CHRONOS_SOCKET="+lab.sock, "PS1=$ ")
	s := newTmux(t, 220, 30, env...)
	s.keys("runuser -u nobody -G daemon -- "+chronosBin, "Enter")
	s.waitFor("guarded: root's keeper keeps this ledger; your writes go through it")
	s.waitFor("GPU 1  Simulated")
	pid, log := waitInBackground(t, s)

	var logged []byte
	require.Eventually(t, func() bool {
		logged, _ = os.ReadFile(log)
		return strings.Contains(string(logged), "waiting for request 1 (pid "+strconv.Itoa(pid)+")")
	}, patience, 50*time.Millisecond, "the background waiter took the request over through the keeper")
	c := core.NewClient(core.Options{Ledger: ledgerAt(lab.db), Devices: core.BackendDevices("sim")})
	line, err := c.LineRequest(1)
	require.NoError(t, err)
	require.Equal(t, domain.Waiting, line.State)
	require.Equal(t, pid, line.Waiter.PID, "the request's waiter is the background one")
	r = lab.as(t, nil, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Eventually(t, func() bool {
		logged, _ = os.ReadFile(log)
		return strings.Contains(string(logged), "Booked 2:")
	}, patience, 50*time.Millisecond, "the background waiter is booked and says so in its log")
	parts := listJSON(t, lab.db)
	require.Len(t, parts, 1)
	require.Equal(t, "nobody", parts[0].Owner)
}
