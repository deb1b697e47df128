package keeper

import (
	"fmt"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// The keeper's bounds: on connections open at once, all together and for
// one user, and on one user's requests served at once and served a second.
// A member's flood of requests then waits its turn behind its own, and
// cannot take the descriptors, the goroutines, the ledger's lock or the
// machine's processors from another member.
const (
	DefaultMaxConns  = 4096 // connections open at once, all users
	DefaultMaxPerUID = 512  // connections one user holds open (waiters included)
	DefaultMaxActive = 4    // one user's requests under way at once (waits excluded: they hold no lock)
	// DefaultRate is one user's requests served a second, after a burst
	// of DefaultBurst: far above what a person or a script of bookings
	// asks (a shell loop of creates makes about 12 a second), and a
	// quarter of what a member's flood made the keeper serve, which took
	// a processor from everyone else's requests (200 a second protected
	// another member's create no better, BENCHMARKS.md). A request over
	// the rate waits for its turn; it is not refused.
	DefaultRate  = 500
	DefaultBurst = 1000
	// maxPace is the longest a request waits for its user's rate; one
	// that would wait longer is told the keeper is busy.
	maxPace = 5 * time.Second
)

// limits counts connections and hands out turns.
type limits struct {
	maxConns, maxPerUID, maxActive int
	rate, burst                    float64 // a user's requests a second; 0: unpaced
	names                          *names

	mu    sync.Mutex
	total int
	conns map[int]int           // by uid
	turns map[int]chan struct{} // by uid: a semaphore of maxActive
	paces map[int]*bucket       // by uid
}

func (s *Server) limits() *limits {
	s.once.Do(func() {
		l := &limits{maxConns: s.MaxConns, maxPerUID: s.MaxPerUID, maxActive: s.MaxActive, rate: s.Rate, burst: DefaultBurst,
			conns: map[int]int{}, turns: map[int]chan struct{}{}, paces: map[int]*bucket{}, names: &s.names}
		if l.maxConns <= 0 {
			l.maxConns = DefaultMaxConns
		}
		if l.maxPerUID <= 0 {
			l.maxPerUID = DefaultMaxPerUID
		}
		if l.maxActive <= 0 {
			l.maxActive = DefaultMaxActive
		}
		switch {
		case l.rate == 0:
			l.rate = DefaultRate
		case l.rate < 0:
			l.rate = 0
		}
		s.lim = l
	})
	return s.lim
}

// errBusy says the keeper serves too many connections to take another.
func errBusy(format string, args ...any) error {
	return fmt.Errorf("%w: the keeper is busy: %s; try again shortly", storage.ErrBusy, fmt.Sprintf(format, args...))
}

// open counts a connection just accepted, or refuses it over maxConns.
func (l *limits) open() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxConns {
		return errBusy("%d connections open", l.total)
	}
	l.total++
	return nil
}

// closed counts a connection's end.
func (l *limits) closed() {
	l.mu.Lock()
	l.total--
	l.mu.Unlock()
}

// join counts a connection of uid, or refuses it over maxPerUID; root's
// are not counted.
func (l *limits) join(uid int) (leave func(), err error) {
	if uid == 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[uid] >= l.maxPerUID {
		return nil, errBusy("%s has %d connections open to it", l.names.of(uid), l.conns[uid])
	}
	l.conns[uid]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.conns[uid]--; l.conns[uid] == 0 {
			delete(l.conns, uid)
		}
	}, nil
}

// turn waits for uid's next request to be due at its rate and, with
// active, until uid may have one more request under way; done ends it.
// Root waits for neither. A request whose time by the rate is more than
// maxPace away is refused instead, as busy.
func (l *limits) turn(uid int, active bool) (done func(), err error) {
	if uid == 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	t, ok := l.turns[uid]
	if !ok {
		t = make(chan struct{}, l.maxActive)
		l.turns[uid] = t
	}
	var wait time.Duration
	if l.rate > 0 {
		b, ok := l.paces[uid]
		if !ok {
			if len(l.paces) >= maxNames {
				l.paces = map[int]*bucket{} // a full bucket each: as before
			}
			b = &bucket{tokens: l.burst}
			l.paces[uid] = b
		}
		var over bool
		if wait, over = b.take(clock.Kernel.Now(), l.rate, l.burst, maxPace); over { // pacing, not a time of the books
			l.mu.Unlock()
			return nil, errBusy("%s sends more than %g requests a second", l.names.of(uid), l.rate)
		}
	}
	l.mu.Unlock()
	if wait > 0 {
		<-clock.Kernel.After(wait)
	}
	if !active {
		return func() {}, nil
	}
	t <- struct{}{}
	return func() { <-t }, nil
}

// bucket paces one user's requests: a token bucket of burst tokens,
// refilled at rate a second, that lends tokens ahead (its count goes
// below zero) so that the requests waiting for it go in the order they
// came.
type bucket struct {
	tokens float64
	at     time.Time // of the last refill
}

// take takes a token at now and says how long its taker waits for it;
// over says the wait would be longer than limit, and then no token is
// taken.
func (b *bucket) take(now time.Time, rate, burst float64, limit time.Duration) (wait time.Duration, over bool) {
	if !b.at.IsZero() && now.After(b.at) {
		b.tokens = min(burst, b.tokens+rate*now.Sub(b.at).Seconds())
	}
	if now.After(b.at) {
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, false
	}
	wait = time.Duration((1 - b.tokens) / rate * float64(time.Second))
	if wait > limit {
		return 0, true
	}
	b.tokens--
	return wait, false
}
