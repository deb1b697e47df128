package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock that moves only when a test advances it. Its timers and
// tickers fire, in deadline order, as Advance passes their deadlines.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer  // active ones
	changed chan struct{} // closed, and replaced, when timers changes
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock d ahead, firing every timer it passes. A step
// back is Set's: Advance panics rather than silently stay put.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Fake.Advance(" + d.String() + "): a step back is Set(Now().Add(d))")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.now.Add(d)
	for {
		t := f.earliest()
		if t == nil || t.at.After(end) {
			break
		}
		f.now = t.at
		select {
		case t.c <- t.at:
		default: // a ticker whose last tick is unread drops this one
		}
		if t.period > 0 {
			t.at = t.at.Add(t.period)
			if !t.at.After(end) { // the ticks between are dropped unread
				t.at = end.Add(t.period - end.Sub(t.at)%t.period)
			}
		} else {
			f.remove(t)
		}
	}
	if end.After(f.now) {
		f.now = end
	}
}

// Set moves the clock to t: ahead as Advance does, or back (a clock stepped
// back, or a test that books in the past), when no timer fires.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.Before(f.now) {
		f.now = t
		f.mu.Unlock()
		return
	}
	d := t.Sub(f.now)
	f.mu.Unlock()
	f.Advance(d)
}

// Timers is how many timers and tickers are waiting to fire.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers returns once at least n timers and tickers wait to fire, or
// when timeout (real time) passes; it reports which. A test calls it before
// Advance so that the goroutine it drives has set its timer.
func (f *Fake) WaitTimers(n int, timeout time.Duration) bool {
	give := time.NewTimer(timeout)
	defer give.Stop()
	for {
		f.mu.Lock()
		have, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-changed:
		case <-give.C:
			return false
		}
	}
}

func (f *Fake) earliest() *fakeTimer {
	var first *fakeTimer
	for _, t := range f.timers {
		if first == nil || t.at.Before(first.at) {
			first = t
		}
	}
	return first
}

func (f *Fake) add(t *fakeTimer) {
	f.timers = append(f.timers, t)
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	f.signal()
}

func (f *Fake) remove(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.signal()
			return true
		}
	}
	return false
}

func (f *Fake) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// After is NewTimer(d).C().
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer fires once Advance passes d from now; d ≤ 0 fires at once.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// NewTicker fires every d of fake time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), period: d}
	t.Reset(d)
	return fakeTicker{t}
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	period time.Duration
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.remove(t)
}

// Reset re-arms the timer d from now, dropping a value not yet read, as
// time.Timer does since Go 1.23.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.f.remove(t)
	select {
	case <-t.c:
	default:
	}
	if t.period > 0 {
		t.period = d
	}
	t.at = t.f.now.Add(d)
	if d <= 0 && t.period == 0 {
		t.c <- t.f.now
		return was
	}
	t.f.add(t)
	return was
}

type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time   { return k.t.c }
func (k fakeTicker) Stop()                 { k.t.Stop() }
func (k fakeTicker) Reset(d time.Duration) { k.t.Reset(d) }
