package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

// ExitExpired is the status `chronos run` exits with when it stopped the
// command because its booking ended (as timeout(1) does).
const ExitExpired = 124

// RunOptions describe one `chronos run`.
type RunOptions struct {
	// Partition runs inside an existing live booking of the caller's; zero
	// books Request instead, and releases it when the command ends.
	Partition uint64
	Request   core.Request
	Command   []string
	// WarnSignal, when set, goes to the command's group at its lead before
	// the end. None by default: the deadline is in the environment.
	WarnSignal human.WarnSignal
	// Grace is the time between SIGTERM and SIGKILL; negative: the policy's.
	Grace time.Duration
	// Wait, when set, joins the waiting line if the request cannot start
	// now; OnQueue hears its place in line as it changes.
	Wait    *admission.WaitOptions
	OnQueue func(admission.QueueEntry)
	// ReleaseWithin bounds how long a release that meets a busy ledger is
	// retried; zero means a minute.
	ReleaseWithin time.Duration
	// MPS is the MPS daemon as detected; when it runs, the booking's limits
	// are passed to the command's CUDA clients.
	MPS procfs.MPS
	// Signals are the signals the caller caught for the run (chronos run
	// catches SIGINT, SIGTERM and SIGHUP): until the command starts, one
	// ends the wait in line or for the booking's start; then each goes on
	// to the command's process group. Run catches no signal itself; nil
	// passes none on.
	Signals        <-chan os.Signal
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Say            func(format string, args ...any) // chronos's own messages
	// Writes makes the run's writes; nil: the Client itself.
	Writes RunWriter
}

// RunResult is how a run ended.
type RunResult struct {
	Partition uint64
	// ExitCode is the command's status, 128+N if a signal ended it, or
	// ExitExpired when chronos stopped it at the booking's end.
	ExitCode int
	Expired  bool
}

// Run books (or joins) a partition, runs the command in it with the
// partition's environment, warns it before the deadline, stops it at the
// deadline (SIGTERM, then SIGKILL after the grace period, to its whole
// process group), and releases the booking it made when the command ends.
// The end of ctx ends a wait, as a signal does; once the command runs it
// only stops Run following the ledger (extensions and releases made
// elsewhere), and the command still runs to its deadline.
//
//nolint:funlen,gocyclo // the supervisor's select loop and the booking around it share the timers and claims; it splits with the supervisor's move out of core (docs/code.md)
func Run(ctx context.Context, c *core.Client, o RunOptions) (RunResult, error) {
	c = c.Lasting() // a signal goes on to the command, and the booking is released after
	w := o.Writes
	if w == nil {
		w = c
	}
	if len(o.Command) == 0 {
		return RunResult{}, domain.InputErr("no command to run (chronos run 0 0.5 1h -- python train.py)")
	}
	path, err := exec.LookPath(o.Command[0])
	if err != nil {
		return RunResult{}, domain.InputErr("cannot run %s: %v", human.Quote(o.Command[0]), errors.Unwrap(err))
	}
	if lead := o.WarnSignal.Lead; o.Partition == 0 && lead > 0 && lead >= o.Request.Duration {
		return RunResult{}, domain.InputErr("--signal %s: the lead %s is not shorter than the booking (%s)", o.WarnSignal, human.FormatDuration(lead), human.FormatDuration(o.Request.Duration))
	}
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	pol, err := c.Policy()
	if err != nil {
		return RunResult{}, err
	}
	grace := o.Grace
	if grace < 0 {
		grace = pol.Grace
	}

	var p domain.Partition
	booked := false
	if o.Partition != 0 {
		err = c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
			p, err = c.Mine(tx, o.Partition, "run in")
			return err
		})
		if err != nil {
			return RunResult{}, err
		}
		if p.Host != c.Host() {
			return RunResult{}, elsewhere(c, fmt.Sprintf("booking %d", p.ID), p.Host, p.Device)
		}
	} else {
		if host, err := c.GPUHost(o.Request.Host); err != nil {
			return RunResult{}, err
		} else if host != c.Host() {
			return RunResult{}, elsewhere(c, "GPU "+human.FormatGPU(host, o.Request.Device), host, o.Request.Device)
		}
		got, err := bookForRun(ctx, w, o, say)
		if err != nil {
			return RunResult{}, err
		}
		p, booked = got.Partition, true
		say("booked %d: %s (%s) of GPU %s until %s", p.ID, human.FormatPercent(p.SharePPM), human.FormatBytes(p.Bytes), human.FormatGPUs("", p.GPUs()), human.FormatTime(p.Expires, c.Now()))
		if w := got.Room.Warning(p.Bytes); w != "" {
			say("warning: %s", w)
		}
	}
	release := func() error {
		if !booked {
			return nil
		}
		return releaseRetrying(c, w, p, o.ReleaseWithin, say)
	}
	if err := awaitStart(ctx, c, p, o.Signals, say); err != nil {
		return RunResult{Partition: p.ID}, errors.Join(err, release())
	}

	if note := c.ComputeCapNote(p, o.MPS); note != "" {
		say("%s", note)
	}

	cmd := exec.Command(path, o.Command[1:]...)
	cmd.Args[0] = o.Command[0]
	cmd.Env = core.RunEnv(os.Environ(), p, o.MPS)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	// Its own process group, so that signals reach everything it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return RunResult{}, errors.Join(fmt.Errorf("start %s: %w", o.Command[0], err), release())
	}
	pgid := cmd.Process.Pid
	// The start time names this exact process in claims, as monitors name it.
	childStart, _ := procfs.ProcStartTime(pgid)
	if booked {
		// Should this process die without releasing, a monitor will.
		if err := w.RecordWrapper(p.ID, pgid); err != nil {
			say("could not record this chronos run in booking %d (%v): if it is killed, the booking stays until its end", p.ID, err)
		}
	}
	// signalOnce sends sig to the command's group unless a monitor has
	// already signalled the command for the same reason: both take the same
	// claim in the ledger, so the command gets each signal once.
	signalOnce := func(sig syscall.Signal, why string) bool {
		won, err := w.ClaimSignal(p.ID, sig, pgid, childStart, fmt.Sprintf("%s to %s (process group): %s", proc.SignalName(sig), o.Command[0], why))
		if err != nil {
			say("could not record the signal in the ledger (%v); sending it anyway", err)
			won = true
		}
		if won {
			_ = syscall.Kill(-pgid, sig)
		}
		return won
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	changes := c.Ledger().Changes(watchCtx, time.Second)

	// warnAt is when the warning signal is due; zero: none is.
	warnAt := func() time.Time {
		switch {
		case o.WarnSignal.Signal == 0:
			return time.Time{}
		case o.WarnSignal.Lead > 0:
			return p.Expires.Add(-o.WarnSignal.Lead)
		default:
			return p.Expires.Add(-domain.WarnLead(p, pol.WarnLead))
		}
	}
	warned := o.WarnSignal.Signal == 0
	var termAt time.Time // when SIGTERM went out
	expired := false
	timer := c.Clock().NewTimer(0)
	defer timer.Stop()
	var waitErr error
	// follow follows the ledger: extended, released or reclaimed elsewhere.
	follow := func() {
		got, err := c.Get(p.ID)
		if err != nil || !termAt.IsZero() {
			return
		}
		switch {
		case got.State == domain.Released:
			say("booking %d was released: stopping the command", p.ID)
			p.Expires = c.Now()
		case got.ReclaimedEarly():
			// Reclaimed for sitting idle: it ends now, as at its deadline.
			say("booking %d was reclaimed for being idle: stopping the command", p.ID)
			p.Expires = c.Now()
		case got.State == domain.Live && got.Expires.After(p.Expires):
			p.Expires = got.Expires
			warned = o.WarnSignal.Signal == 0 // warn again before the new end
		}
	}
	// The ledger may have changed between the booking and the watch (a
	// reclaim, a release): look once at the start, then on each change.
	lookNow := make(chan struct{}, 1)
	lookNow <- struct{}{}
loop:
	for {
		now := c.Now()
		switch {
		case termAt.IsZero() && !now.Before(p.Expires):
			expired, warned = true, true
			termAt = now
			if signalOnce(syscall.SIGTERM, fmt.Sprintf("booking #%d ended", p.ID)) {
				say("booking %d ended: sent SIGTERM (SIGKILL in %s)", p.ID, human.FormatDuration(grace))
			} else {
				say("booking %d ended: a monitor sent SIGTERM (SIGKILL in %s)", p.ID, human.FormatDuration(grace))
			}
		case !termAt.IsZero() && !now.Before(termAt.Add(grace)):
			if signalOnce(syscall.SIGKILL, fmt.Sprintf("still running %s after SIGTERM", human.FormatDuration(grace))) {
				say("still running %s after SIGTERM: sent SIGKILL", human.FormatDuration(grace))
			}
			termAt = now.Add(24 * time.Hour) // once
		case !warned && !now.Before(warnAt()):
			warned = true
			say("booking %d %s: sending %s", p.ID, human.EndsIn(p.Expires.Sub(now)), proc.SignalName(o.WarnSignal.Signal))
			_ = syscall.Kill(-pgid, o.WarnSignal.Signal)
		}
		next := p.Expires
		if !warned {
			next = warnAt()
		}
		if !termAt.IsZero() {
			next = termAt.Add(grace)
		}
		timer.Reset(min(max(clock.Until(c.Clock(), next), 0), clock.MaxSleep))
		select {
		case waitErr = <-exited:
			break loop
		case s := <-o.Signals:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig)
			}
		case _, open := <-changes:
			if !open { // ctx ended: stop watching; the command still decides when Run ends
				changes = nil
				break
			}
			follow()
		case <-lookNow:
			follow()
		case <-timer.C():
		}
	}
	res := RunResult{Partition: p.ID, ExitCode: exitCodeOf(waitErr), Expired: expired}
	if expired {
		res.ExitCode = ExitExpired
	}
	if err := release(); err != nil {
		return res, fmt.Errorf("the command ended (status %d), but %w", res.ExitCode, err)
	}
	return res, nil
}

// bookForRun books o's request, waiting in line when o says so. A signal
// the caller passes on (o.Signals) would go on to the command; while it
// waits in line it takes its request out instead.
func bookForRun(ctx context.Context, w RunWriter, o RunOptions, say func(string, ...any)) (*core.Partition, error) {
	if o.Wait != nil {
		var stop context.CancelFunc
		ctx, stop = proc.Interruptible(ctx, o.Signals)
		defer stop()
	}
	joined := func(e admission.QueueEntry) { say("waiting in line: request %d", e.ID) }
	return w.BookOrWait(ctx, o.Request, o.Wait, joined, o.OnQueue)
}

// awaitStart waits for a booking made ahead to start. The end of ctx or a
// signal on sigs ends the wait; the caller releases what it booked.
func awaitStart(ctx context.Context, c *core.Client, p domain.Partition, sigs <-chan os.Signal, say func(string, ...any)) error {
	wait := p.Start.Sub(c.Now())
	if wait <= 0 {
		return nil
	}
	say("booking %d starts at %s: waiting %s", p.ID, human.FormatTime(p.Start, c.Now()), human.FormatDuration(wait))
	ctx, stop := proc.Interruptible(ctx, sigs)
	defer stop()
	for {
		// Wall-clock deadlines: look again each second, so a step of the
		// clock (NTP) does not move the start.
		left := p.Start.Sub(c.Now())
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for booking %d to start: %w", p.ID, proc.WhyStopped(ctx))
		case <-c.Clock().After(min(left, clock.MaxSleep)):
		}
	}
}

// elsewhere refuses to run a command here for a GPU of another host.
func elsewhere(c *core.Client, what, host string, device int) error {
	return fmt.Errorf("%w: %s is on %s, and chronos run starts the command on this host (%s): run it on %s (chronos run %s …)",
		domain.ErrOtherHost, what, host, c.Host(), host, human.FormatGPU("", device))
}

// releaseRetrying releases the booking a run made. A ledger held busy by
// another process, or on an etcd that does not answer, is tried again,
// backing off, for up to within (a minute when zero): a release given up on would leave the GPU booked for hours
// with nothing running in it.
func releaseRetrying(c *core.Client, w RunWriter, p domain.Partition, within time.Duration, say func(string, ...any)) error {
	if within <= 0 {
		within = time.Minute
	}
	// Retrying a busy ledger is paced in real time, whatever the books' clock.
	giveUp := clock.Kernel.Now().Add(within)
	wait := 50 * time.Millisecond
	for tries := 1; ; tries++ {
		_, err := w.Release(p.ID)
		switch {
		case err == nil || errors.Is(err, domain.ErrNotLive):
			if tries > 1 {
				say("released booking %d at try %d", p.ID, tries)
			}
			return nil
		case !errors.Is(err, storage.ErrBusy) && !errors.Is(err, storage.ErrUnavailable):
			return fmt.Errorf("could not release booking %d (release it with `chronos release %d`): %w", p.ID, p.ID, err)
		case clock.Kernel.Now().Add(wait).After(giveUp):
			return fmt.Errorf("could not release booking %d, tried for %s; it stays booked until %s unless you run `chronos release %d`: %w",
				p.ID, human.FormatDuration(within), human.FormatTime(p.Expires, c.Now()), p.ID, err)
		}
		if tries == 1 {
			say("could not release booking %d (%v); trying again", p.ID, err)
		}
		<-clock.Kernel.After(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}
