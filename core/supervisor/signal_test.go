package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
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
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// uncaught is the signal each way of playUncaught sends itself: one that
// core caught before it left signals to its callers.
var uncaught = map[string]syscall.Signal{"wait": syscall.SIGHUP, "runwait": syscall.SIGTERM, "run": syscall.SIGTERM}

// playUncaught waits in line (arg "wait": BookOrWait; "runwait": Run with
// --wait) and signals itself once it has joined, or runs a command in its
// booking (arg "run": Run) that signals it — and catches no signal itself,
// as a program embedding core might not. A signal handler is the whole
// process's: the library installs none, so the signal ends this process
// by its default action.
func playUncaught(c *core.Client, arg string) int {
	req := core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}
	toMe := func(admission.QueueEntry) {
		_ = syscall.Kill(os.Getpid(), uncaught[arg])
		time.Sleep(2 * time.Second) // until it is delivered
	}
	var err error
	switch arg {
	case "wait":
		_, err = c.BookOrWait(context.Background(), req, &admission.WaitOptions{}, toMe, nil)
	case "runwait":
		_, err = Run(context.Background(), c, RunOptions{Command: []string{"true"}, Request: req, Wait: &admission.WaitOptions{},
			Say: func(format string, _ ...any) {
				if strings.HasPrefix(format, "waiting in line") {
					toMe(admission.QueueEntry{})
				}
			}})
	case "run":
		var p *core.Partition
		if p, err = c.Create(req); err != nil {
			break
		}
		// A moment first: before this change Run caught signals only from
		// just after it started the command.
		_, err = Run(context.Background(), c, RunOptions{Partition: p.ID, Grace: -1,
			Command: []string{"sh", "-c", "sleep 0.3; kill -TERM $PPID; sleep 2"}})
	}
	fmt.Fprintf(os.Stderr, "survived %s: %v\n", proc.SignalName(uncaught[arg]), err)
	return coretest.RoleFailed
}

// Neither waiting in line (BookOrWait, run --wait) nor running a command
// (Run) catches a signal: a process that embeds core and sets no handler
// of its own is ended by SIGHUP or SIGTERM, as by default. Before, core
// caught SIGHUP, SIGINT and SIGTERM for the whole process.
func TestCoreCatchesNoSignals(t *testing.T) {
	t.Parallel()
	if signal.Ignored(syscall.SIGHUP) || signal.Ignored(syscall.SIGTERM) {
		t.Skip("SIGHUP or SIGTERM is ignored here, and so in the processes the test starts")
	}
	for _, how := range []string{"wait", "runwait", "run"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "chronos.db")
			if how != "run" { // a full GPU: the request waits in line
				_, err := servicetest.ClientOn(bolt.New(db), nil, coretest.Root).Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
				require.NoError(t, err)
			}
			cmd := coretest.RoleCmd(t, "uncaught", db, how)
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 30 s after %s (then killed: %v)", proc.SignalName(uncaught[how]), <-done)
			}
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			ws := exit.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled(), "it exited with status %d: something caught %s", ws.ExitStatus(), proc.SignalName(uncaught[how]))
			require.Equal(t, uncaught[how], ws.Signal())
		})
	}
}

// The signals the caller passes to Run go on to the command's process
// group while it runs; the command decides when the run ends.
func TestRunPassesSignalsOn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunPassesSignalsOn)
}

func testRunPassesSignalsOn(t *testing.T, open storetest.Opener) {
	c := servicetest.ClientOn(open(), nil, proc.CurrentIdentity())
	log := filepath.Join(t.TempDir(), "signals")
	sigs := make(chan os.Signal, 1)
	o := runOpts(os.Args[0], "signal-logger", log)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}
	o.Signals = sigs
	done := runInBackground(c, o)
	logSays := logSaying(t, log)
	logSays("ready\n")
	sigs <- syscall.SIGINT
	logSays("ready\nINT\n")
	sigs <- syscall.SIGHUP
	logSays("ready\nINT\nHUP\n")
	sigs <- syscall.SIGTERM
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 7, r.res.ExitCode)
	p, err := c.Get(r.res.Partition)
	require.NoError(t, err)
	require.Equal(t, domain.Released, p.State)
}

// A signal passed to Run while it waits for a booking made ahead to start
// ends the wait and releases the booking, naming the signal; the command
// never runs.
func TestRunAheadLeavesOnSignal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunAheadLeavesOnSignal)
}

func testRunAheadLeavesOnSignal(t *testing.T, open storetest.Opener) {
	c := servicetest.ClientOn(open(), nil, proc.CurrentIdentity())
	ran := filepath.Join(t.TempDir(), "ran")
	sigs := make(chan os.Signal, 1)
	o := runOpts("touch", ran)
	o.Request = core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour, Start: c.Now().Add(time.Hour)}
	o.Signals = sigs
	o.Say = func(format string, _ ...any) {
		if strings.Contains(format, "waiting") {
			sigs <- syscall.SIGHUP
		}
	}
	res, err := Run(context.Background(), c, o)
	var why *proc.Interrupted
	require.ErrorAs(t, err, &why)
	require.Equal(t, syscall.SIGHUP, why.Signal)
	require.ErrorContains(t, err, "interrupted by SIGHUP")
	require.NoFileExists(t, ran)
	p, err := c.Get(res.Partition)
	require.NoError(t, err)
	require.Equal(t, domain.Released, p.State)
}

// Interruptible ends on the first signal with a cause naming it, and once
// stopped leaves the next signal to its caller.
func TestInterruptible(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 1)
	ctx, stop := proc.Interruptible(context.Background(), sigs)
	sigs <- syscall.SIGINT
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.EqualError(t, proc.WhyStopped(ctx), "interrupted by SIGINT")
	stop()

	ctx, stop = proc.Interruptible(context.Background(), sigs)
	stop()
	require.True(t, errors.Is(proc.WhyStopped(ctx), context.Canceled))
	sigs <- syscall.SIGTERM
	require.Equal(t, syscall.SIGTERM, <-sigs, "a stopped Interruptible still read the channel")
}

// signalLogger is the command TestRunPassesSignalsOn runs (this test
// binary, started as "signal-logger PATH"): it writes "ready", then each
// SIGINT and SIGHUP it gets, and exits 7 on SIGTERM. Go queues every
// signal it is notified of, where a shell's traps gave no such promise.
func signalLogger(path string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	say := func(line string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.WriteString(line + "\n")
			_ = f.Close()
		}
	}
	say("ready")
	for s := range sigs {
		switch s {
		case syscall.SIGINT:
			say("INT")
		case syscall.SIGHUP:
			say("HUP")
		case syscall.SIGTERM:
			say("TERM")
			return 7
		}
	}
	return 1
}
