package main

import (
	"context"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/keeper"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/core/supervisor"
	"github.com/chronos-gpu/chronos/tui"
)

// writer makes a command's writes: the ledger itself (core.Client), or,
// for a member of a guarded ledger, root's keeper (keeper.Client), which
// makes them as that member. Reads always go to the ledger.
type writer interface {
	tui.Writer
	supervisor.RunWriter // BookOrWait and a run's records
	WaitFor(ctx context.Context, id uint64, joined, onChange func(admission.QueueEntry)) (*core.Partition, error)
	Hold(id uint64, d time.Duration, reason string) (domain.BookingUsage, error)
}

// writerFor is who writes c's ledger for its user: root writes directly;
// on a guarded ledger a member writes through the keeper. A ledger whose
// mark cannot be read is written directly, which reports what is wrong;
// one the member reads through the keeper (etcd) is guarded by the store
// file's word.
func writerFor(c *core.Client) writer {
	if c.Me().Root() {
		return c
	}
	if _, remote := c.Ledger().(*keeper.RemoteStore); remote {
		return keeper.NewClient(keeper.SocketPath(), c)
	}
	if _, guarded, err := c.Guard(); err != nil || !guarded {
		return c
	}
	return keeper.NewClient(keeper.SocketPath(), c)
}

// serveKeeper makes root's monitor the keeper of a guarded ledger: it
// serves the socket until ctx ends. An open ledger needs none (nothing is
// served, no error); a process not root's may not keep a guarded one.
// note is what the monitor's start says of it.
func serveKeeper(ctx context.Context, c *core.Client, logAct func(monitor.Act)) (stop func(), note string, err error) {
	guard, guarded, err := c.Guard()
	if err != nil || !guarded {
		return func() {}, "", err
	}
	guard = setup.LocalGuard(guard)
	if !proc.RealRoot() {
		return nil, "", fmt.Errorf("%w: run it as root (sudo chronos --monitor, or the chronos-monitor unit); members' apps and commands need no monitor of their own", core.ErrGuarded)
	}
	ln, err := keeper.Listen(keeper.SocketPath(), guard.GID)
	if err != nil {
		return nil, "", err
	}
	srv := &keeper.Server{Client: c, GID: guard.GID, Group: guard.Group, Log: func(msg string) {
		logAct(monitor.Act{Time: c.Now(), Kind: domain.EventError, Detail: msg})
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			logAct(monitor.Act{Time: c.Now(), Kind: domain.EventError, Detail: "keeper: " + err.Error()})
		}
	}()
	return func() { ln.Close(); <-done }, fmt.Sprintf("guarded: keeper at %s for group %s", ln.Path(), guard.Group), nil
}

// keptByRoot says whether the app leaves keeping the ledger to root's
// keeper: a member's app on a guarded ledger, which may not write it,
// runs no monitor engine of its own (expiry, reclaims, the line's waiters
// are root's to keep); it reads and shows, and sends the person's writes
// to the keeper. note is what the app's screen says of it.
func keptByRoot(c *core.Client) (note string, kept bool) {
	if _, guarded := writerFor(c).(*keeper.Client); !guarded {
		return "", false
	}
	return "guarded: root's keeper keeps this ledger; your writes go through it", true
}

// noMonitor is the monitor of an app that runs none: it waits for the app
// to end.
type noMonitor struct{}

func (noMonitor) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
