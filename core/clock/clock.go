// Package clock is Chronos's one source of the time. Every reading of the
// time and every timer in core, storage, tui and the monitor goes through a
// Clock passed down from the command layer: the system's clock in
// production, a Fake that tests advance (they never wait a real minute).
//
// The package is a leaf: it imports nothing of Chronos, so every layer may
// take a Clock without an arrow against the import direction.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers. The shape is that of Tailscale's
// tstime.Clock and k8s.io/utils/clock.
type Clock interface {
	Now() time.Time
	// NewTimer fires once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker fires every d; a tick that finds the last one unread is
	// dropped, as time.Ticker's are.
	NewTicker(d time.Duration) Ticker
	// After is NewTimer(d).C() for a wait that is never stopped early.
	After(d time.Duration) <-chan time.Time
}

// Timer is a time.Timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop and Reset are time.Timer's: since Go 1.23 neither leaves a stale
	// value in C for the caller to drain.
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker of a Clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	Reset(d time.Duration)
}

// Since is c.Now().Sub(t).
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is t.Sub(c.Now()).
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep waits d on c, or until ctx ends; it returns ctx's error then.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// OrSystem is c, or the system's clock when c is nil: the default of every
// options struct that takes a Clock.
func OrSystem(c Clock) Clock {
	if c == nil {
		return System()
	}
	return c
}

// wall is the operating system's clock, unshifted.
type wall struct{}

func (wall) Now() time.Time                         { return time.Now() }
func (wall) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (wall) NewTimer(d time.Duration) Timer         { return wallTimer{time.NewTimer(d)} }
func (wall) NewTicker(d time.Duration) Ticker       { return wallTicker{time.NewTicker(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time        { return w.t.C }
func (w wallTimer) Stop() bool                 { return w.t.Stop() }
func (w wallTimer) Reset(d time.Duration) bool { return w.t.Reset(d) }

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time   { return w.t.C }
func (w wallTicker) Stop()                 { w.t.Stop() }
func (w wallTicker) Reset(d time.Duration) { w.t.Reset(d) }

// Kernel is the operating system's own clock, never shifted, for comparing
// with times the kernel wrote: files' modification times and processes'
// start times. Everything else takes the Clock it is given.
var Kernel Clock = wall{}

// Offset is c read d later: the clock of a host that runs d ahead (or
// behind, d < 0). Its timers are c's: a duration is the same on both.
func Offset(c Clock, d time.Duration) Clock { return offset{c, d} }

type offset struct {
	Clock
	d time.Duration
}

func (o offset) Now() time.Time { return o.Clock.Now().Add(o.d) }
