package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/view"
)

// waiterCmd is the real binary on the simulated backend, not yet started:
// a process that waits in line while the test acts on the ledger.
func waiterCmd(db string, args ...string) *exec.Cmd {
	cmd := exec.Command(chronosBin, args...)
	cmd.Env = append(os.Environ(), binEnv(db)...)
	return cmd
}

// saying starts cmd and returns what it says on stderr, line by line. Read
// it to the end before cmd.Wait.
func saying(t *testing.T, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return bufio.NewScanner(stderr)
}

// until reads what a waiter says up to the first line that contains s,
// and returns it: a waiter says where it stands only once it waits, so a
// test that acts after that line never races its joining the line.
func until(t *testing.T, said *bufio.Scanner, s string) string {
	t.Helper()
	var read strings.Builder
	for said.Scan() {
		read.WriteString(said.Text() + "\n")
		if strings.Contains(said.Text(), s) {
			return read.String()
		}
	}
	t.Fatalf("the waiter never said %q; it said:\n%s", s, read.String())
	return ""
}

// rest reads what a waiter says to the end.
func rest(said *bufio.Scanner) string {
	var read strings.Builder
	for said.Scan() {
		read.WriteString(said.Text() + "\n")
	}
	return read.String()
}

// `create --wait` joins the line when the GPU is full, says where it
// stands, and returns booked once a release makes room; `queue` shows it
// meanwhile.
func TestCreateWaitsInLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.8", "1h").code)
	cmd := waiterCmd(db, "create", "0", "50%", "2h", "--wait")
	var out bytes.Buffer
	cmd.Stdout = &out
	said := saying(t, cmd)
	require.Regexp(t, `^chronos: request 1 waits at position 1; should start at `+clockTime+` on GPU 0 \(GPU 0 has 20% free, 50% asked\)\n$`, until(t, said, "waits"))

	r := cli(t, db, "queue")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^1\s+1\s+root\s+0\s+50%\s+2h\s+\S+\s+[0-9.]+\s+`+clockTime+` \(GPU 0\)\s+GPU 0 has 20% free, 50% asked$`, r.stdout)
	r = cli(t, db, "queue", "--json")
	var line []view.QueueJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &line))
	require.Len(t, line, 1)
	require.Equal(t, 0, *line[0].Device)
	require.Equal(t, 7200.0, line[0].DurationSeconds)

	require.Equal(t, 0, cli(t, db, "release", "1").code)
	require.Empty(t, rest(said))
	require.NoError(t, cmd.Wait())
	require.Regexp(t, `^Booked 2: 50% \(40.0 GiB\) of GPU 0 for root, until .*\.\n$`, out.String())
	require.Equal(t, "Nobody is waiting.\n", cli(t, db, "queue").stdout)
}

// --timeout leaves the line unbooked, with exit status 1 and why.
func TestCreateWaitTimesOut(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "any", "1", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "any", "1", "1h").code, "any: the other GPU")
	r := cli(t, db, "create", "any", "0.5", "1h", "--wait", "--timeout", "1s")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "left the waiting line without a booking: request 1 timed out: waited 1s (--timeout)")
	r = cli(t, db, "events")
	require.Contains(t, r.stdout, "queued")
	require.Contains(t, r.stdout, "left")
}

// A booking made ahead shows in list with its start; it blocks a request
// that overlaps it and admits one that does not.
func TestBookingAheadFromTheCommandLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := cli(t, db, "create", "1", "60%", "3h", "--at", "+2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Booked 1: 60% \(48.0 GiB\) of GPU 1 for root, from .+ until .+\.\n$`, r.stdout, "no room is read for a booking ahead")
	parts := listJSON(t, db)
	require.Len(t, parts, 1)
	require.Equal(t, domain.StatusUpcoming, parts[0].State)
	require.InDelta(t, clock.Until(clock.System(), parts[0].Start).Hours(), 2, 0.01)
	r = cli(t, db, "list")
	require.Regexp(t, `(?m)^1\s+root\s+1\s+60%\s+48.0 GiB\s+3:00:00\s+.*upcoming\s+-$`, r.stdout)

	r = cli(t, db, "create", "1", "50%", "3h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "GPU 1 has 40% (32.0 GiB) free, 50% asked: held by root (60%, #1, from ")
	require.Contains(t, r.stderr, "GPU 0 has 100% free. It would fit at ")
	r = cli(t, db, "create", "1", "50%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	r = cli(t, db, "available", "1")
	require.Regexp(t, `^50% \(40.0 GiB\) free on GPU 1; 40% from .+ \(booked ahead\)\n$`, r.stdout)

	// show says when a booking ahead starts, not how long until its end.
	r = cli(t, db, "show", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  state\s+upcoming, starts in (1:59:\d\d|2:00:00), at .+, until .+$`, r.stdout) // a date when they cross midnight
	// An extension stays on its GPU: its refusal names who holds it, and
	// offers no other GPU.
	r = cli(t, db, "extend", "2", "90m")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "GPU 1 has 40% (32.0 GiB) free from ")
	require.Contains(t, r.stderr, ": held by root (60%, #1, from ")
	require.NotContains(t, r.stderr, "GPU 0 has")
}

// A booking ahead holds against other users too: nobody books GPU 0 from
// two hours on; daemon's request that overlaps it is refused, naming the
// booking ahead, and one that ends before it is admitted.
func TestBookingAheadBlocksAnotherUser(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	require.Equal(t, 0, cli(t, db, "stats").code, "root records the simulated GPUs")
	require.NoError(t, os.Chmod(db, 0o666))
	r := asNobody(t, bin, db, "create", "0", "60%", "2h", "--at", "+2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Booked 1: 60% \(48.0 GiB\) of GPU 0 for nobody, from .+ until .+\.\n$`, r.stdout)

	r = runChronos(t, bin, db, daemon, "create", "0", "50%", "3h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "GPU 0 has 40% (32.0 GiB) free, 50% asked: held by nobody (60%, #1, from ")
	r = runChronos(t, bin, db, daemon, "create", "0", "50%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Booked 2: 50% \(40.0 GiB\) of GPU 0 for daemon, until .+\.\n`, r.stdout)
	parts := listJSON(t, db)
	require.Len(t, parts, 2)
	require.Equal(t, domain.StatusUpcoming, parts[0].State)
}

// `run --at` waits for the booking's start, then runs the command in it.
func TestRunAtWaitsForTheStart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	start := time.Now()
	r := cli(t, db, "run", "0", "0.2", "1m", "--at", "+2s", "--", "sh", "-c", `echo "in $CHRONOS_BOOKING_ID"`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "in 1\n", r.stdout)
	require.Contains(t, r.stderr, "booking 1 starts at")
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second-100*time.Millisecond)
}

// Quotas hold for real uids: an ordinary user is refused past the
// policy's limit, told which limit, their figure and when it frees.
func TestQuotaRefusalAsAnotherUser(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	require.Equal(t, 0, cli(t, db, "stats").code, "root records the simulated GPUs")
	r := cli(t, db, "policy", "set", "user-gpus=1", "user-hours=none")
	require.Equal(t, 0, r.code, r.stderr)
	r = cli(t, db, "policy", "set", "user-gpus=0.5", "for=nobody")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "set: user-gpus=0.5 for=nobody")
	require.NoError(t, os.Chmod(db, 0o666))

	r = asNobody(t, bin, db, "create", "0", "40%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	r = asNobody(t, bin, db, "create", "1", "20%", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "over your quota: user-gpus=0.5: you would hold 0.6 GPUs at once (0.4 already, 0.2 asked). It would fit at ")
	r = asNobody(t, bin, db, "create", "1", "60%", "1h", "--wait")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "0.6 GPUs asked at once can never be granted")

	r = cli(t, db, "usage")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^nobody\s+0\.4\s+0\s+0\.1\s+no limit\s+0\.0\s+1\.000\s+0$`, r.stdout)
	var users []report.UserUsage
	require.NoError(t, json.Unmarshal([]byte(cli(t, db, "usage", "--json").stdout), &users))
	require.Len(t, users, 1)
	require.InDelta(t, 0.1, *users[0].GPUsLeft, 1e-9)
	require.Nil(t, users[0].HoursLeft)
}

// `run --wait` waits in line, then runs; SIGTERM while it waits leaves the
// line and runs nothing.
func TestRunWait(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "1", "1h").code)
	cmd := waiterCmd(db, "run", "0", "0.5", "1m", "--wait", "--", "sh", "-c", `echo "ran in $CHRONOS_BOOKING_ID"`)
	var out bytes.Buffer
	cmd.Stdout = &out
	said := saying(t, cmd)
	until(t, said, "request 1 waits at position 1")
	require.Equal(t, 0, cli(t, db, "release", "1").code)
	after := rest(said)
	require.NoError(t, cmd.Wait(), after)
	require.Equal(t, "ran in 2\n", out.String())

	ran := filepath.Join(t.TempDir(), "ran")
	require.Equal(t, 0, cli(t, db, "create", "1", "1", "1h").code)
	cmd = waiterCmd(db, "run", "1", "0.5", "1m", "--wait", "--", "touch", ran)
	said = saying(t, cmd)
	until(t, said, "waits at position 1")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Contains(t, rest(said), "left the waiting line without a booking: request 2: interrupted by SIGTERM")
	require.Error(t, cmd.Wait())
	require.NoFileExists(t, ran)
	require.Equal(t, "Nobody is waiting.\n", cli(t, db, "queue").stdout)
}

// Ctrl-C, SIGTERM or a hang-up while `create --wait` waits takes its
// request out of the line: exit 1, why, and nobody left waiting.
func TestCreateWaitLeavesOnSignal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "1", "1h").code)
	for sig, name := range map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"} {
		cmd := waiterCmd(db, "create", "0", "0.5", "1h", "--wait")
		said := saying(t, cmd)
		until(t, said, "waits at position 1")
		require.NoError(t, cmd.Process.Signal(sig))
		after := rest(said)
		var exit *exec.ExitError
		require.ErrorAs(t, cmd.Wait(), &exit)
		require.Equal(t, 1, exit.ExitCode(), "%s: %s", sig, after)
		require.Regexp(t, `left the waiting line without a booking: request \d+: interrupted by `+name+`\n$`, after)
		require.Equal(t, "Nobody is waiting.\n", cli(t, db, "queue").stdout, sig.String())
	}
}

// --at with a time of day that has passed today books tomorrow's, as at(1)
// does, and says so on stderr; 12-hour times are read too.
func TestAtATimePassedMeansTomorrow(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	now := clock.System().Now().Local()
	passed := now.Add(-2 * time.Minute) // today's, unless the day began within two minutes
	at := passed.Format("15:04")
	r := cli(t, db, "create", "0", "25%", "1h", "--at", at, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var p view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	start := p.Start.Local()
	require.Equal(t, at, start.Format("15:04"))
	if passed.YearDay() == now.YearDay() {
		require.Equal(t, passed.AddDate(0, 0, 1).Format("2006-01-02"), start.Format("2006-01-02"), "tomorrow's")
		require.Equal(t, "chronos: "+at+" has passed today: it starts tomorrow, ", r.stderr[:len("chronos: "+at+" has passed today: it starts tomorrow, ")])
	} else {
		require.Empty(t, r.stderr, "yesterday's "+at+" is today's still to come")
	}

	r = cli(t, db, "create", "1", "25%", "1h", "--at", "tomorrow 2pm", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	require.Equal(t, "14:00", p.Start.Local().Format("15:04"))
	require.Empty(t, r.stderr)
}

// queue --mine and --user keep one user's requests at their places in the
// whole line; queue cancel --mine takes all of one's own out (asking first,
// or with --yes), and --user NAME is root's. The requests wait on this
// test's process, so they stay in line while it runs.
func TestQueueMineAndCancelMine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	// daemon holds the GPU, so that no waiter's own use moves the line's
	// fair-share order while the test runs: it is the order they came in.
	require.Equal(t, 0, cli(t, db, "create", "0", "100%", "1h", "--user", "daemon").code)
	sim := core.BackendDevices("sim")
	for _, who := range []domain.Identity{{UID: 0, User: "root"}, {UID: 65534, User: "nobody"}, {UID: 0, User: "root"}} {
		c := core.NewClient(core.Options{Ledger: ledgerAt(db), Devices: sim, As: &who})
		_, e, err := c.Enqueue(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
		require.NoError(t, err)
		require.NotNil(t, e)
	}
	ids := func(args ...string) string {
		r := cli(t, db, append([]string{"queue", "--json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var line []view.QueueJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &line))
		var out []string
		for _, e := range line {
			out = append(out, fmt.Sprintf("%d@%d", e.ID, e.Position))
		}
		return strings.Join(out, " ")
	}
	require.Equal(t, "1@1 2@2 3@3", ids())
	require.Equal(t, "1@1 3@3", ids("--mine"), "at their places in the whole line")
	require.Equal(t, "2@2", ids("--user", "nobody"))
	r := cli(t, db, "queue", "--user", "nosuchuser")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `no such user: "nosuchuser"`)

	r = cli(t, db, "queue", "cancel", "--mine")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "queue cancel --mine would cancel 2 request(s) of root: #1 (position 1), #3 (position 3); add --yes to confirm")
	require.Equal(t, "1@1 2@2 3@3", ids(), "nothing cancelled without a yes")
	r = cli(t, db, "queue", "cancel", "--mine", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Request 1 left the line.\nRequest 3 left the line.\n", r.stdout)
	require.Equal(t, "2@1", ids())
	r = cli(t, db, "queue", "cancel", "--user", "nobody", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "", ids())
	require.Equal(t, "root has no requests waiting.\n", cli(t, db, "queue", "cancel", "--mine").stdout)
}

// root's release --user NAME ends all of NAME's live bookings, asking first
// as --mine does; another user may not.
func TestReleaseUser(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	for _, a := range [][]string{{"create", "0", "25%", "1h", "--user", "nobody"}, {"create", "1", "25%", "1h", "--user", "nobody"}, {"create", "0", "25%", "1h"}} {
		require.Equal(t, 0, cli(t, db, a...).code)
	}
	r := cli(t, db, "release", "--user", "nobody")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "release --user nobody would release 2 booking(s) of nobody: #1 (GPU 0, 25%), #2 (GPU 1, 25%); add --yes")
	r = cli(t, db, "release", "--user", "nobody", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Released 1.\nReleased 2.\n", r.stdout)
	require.Len(t, listJSON(t, db), 1, "root's own stays")
	r = cli(t, db, "release", "--user", "nobody", "--mine")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--mine or --user, not both")
}
