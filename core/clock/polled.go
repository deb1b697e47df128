//go:build testclock

package clock

import (
	"sync"
	"time"
)

// polled is a timer or ticker (period > 0) on a clock that can jump: it
// looks at the time every pollEvery and fires once the deadline is passed.
type polled struct {
	now    func() time.Time
	c      chan time.Time
	period time.Duration

	mu   sync.Mutex
	stop chan struct{} // closes to end the running poll; nil when none runs
}

func newPolled(now func() time.Time, d, period time.Duration) *polled {
	p := &polled{now: now, c: make(chan time.Time, 1), period: period}
	p.start(d)
	return p
}

func (p *polled) C() <-chan time.Time { return p.c }

// pollEvery is how often a polled timer looks at the time.
const pollEvery = 5 * time.Millisecond

func (p *polled) start(d time.Duration) {
	stop := make(chan struct{})
	p.stop = stop
	period := p.period
	at := p.now().Add(d)
	go func() {
		for {
			now := p.now()
			if !now.Before(at) {
				select {
				case p.c <- now:
				default:
				}
				if period <= 0 {
					p.mu.Lock()
					if p.stop == stop {
						p.stop = nil
					}
					p.mu.Unlock()
					return
				}
				at = now.Add(period)
			}
			wait := min(at.Sub(now), pollEvery)
			select {
			case <-stop:
				return
			case <-time.After(wait):
			}
		}
	}()
}

// Stop ends the poll; it reports whether one was running.
func (p *polled) Stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.halt()
}

func (p *polled) halt() bool {
	if p.stop == nil {
		return false
	}
	close(p.stop)
	p.stop = nil
	return true
}

// Reset starts it again, d from now, and drops a value not yet read.
func (p *polled) Reset(d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.halt()
	select {
	case <-p.c:
	default:
	}
	if p.period > 0 {
		p.period = d
	}
	p.start(d)
	return was
}

// polledTicker adapts polled to Ticker, whose Stop and Reset return nothing.
type polledTicker struct{ *polled }

func (t polledTicker) Stop()                 { t.polled.Stop() }
func (t polledTicker) Reset(d time.Duration) { t.polled.Reset(d) }
