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
	// DefaultMaxActive is one user's requests under way at once (waits
	// excluded: they hold no lock). One: each takes a millisecond or two,
	// and then another user's create waits behind at most one of a
	// member's writes, not a batch of them (4 made a flood of creates
	// slow it 5.6×, 1 made it 3×; BENCHMARKS.md).
	DefaultMaxActive = 1
	// DefaultRate is one user's requests served a second, of each kind
	// (see kind), after a burst of DefaultBurst: far above what a person
	// or a script of bookings asks (a shell loop of creates makes about
	// 12 a second; 500 jobs started at once by one user to wait in line
	// have all joined it in about 3 s), and low enough that a member's
	// flood of creates keeps the ledger's writer a fifth of the time, not
	// all of it (another member's create was 2.3–3.3× slower under the
	// flood at 500 a second, 1.4–2.5× at 100; BENCHMARKS.md). A request
	// over the rate waits for its turn; it is not refused.
	DefaultRate  = 100
	DefaultBurst = 200
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
	conns map[int]int        // by uid
	turns map[int]*queue     // by uid, while any of theirs is under way
	paces map[int]*[2]bucket // by uid, then kind
}

// kind is what a request does to the books, for its turn: a request that
// frees room (a release, a cancel) goes before its user's others, so that
// a user's own creates never hold back the releases of what they booked.
// Each kind has a rate of its own, so the one cannot starve the other of
// pace either.
type kind int

const (
	takes kind = iota
	frees
)

// queue is one user's requests under way and waiting for a turn.
type queue struct {
	active  int
	waiting [2][]chan struct{} // by kind
	pending int                // requests waiting for their pace or turn
	taking  int                // of which take and are not waits
}

func (s *Server) limits() *limits {
	s.once.Do(func() {
		l := &limits{maxConns: s.MaxConns, maxPerUID: s.MaxPerUID, maxActive: s.MaxActive, rate: s.Rate, burst: DefaultBurst,
			conns: map[int]int{}, turns: map[int]*queue{}, paces: map[int]*[2]bucket{}, names: &s.names}
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

// turn waits for uid's next request of kind k to be due at its rate and,
// with active, until uid may have one more request under way; done ends
// it. Root waits for neither. A request is refused instead, as busy, when
// its time by the rate is more than maxPace away, or when it takes, is not
// a wait, and half of uid's connections already wait so: the other half
// stay free for their releases, however many creates they sent.
func (l *limits) turn(uid int, active bool, k kind) (done func(), err error) {
	if uid == 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	q, ok := l.turns[uid]
	if !ok {
		q = &queue{}
		l.turns[uid] = q
	}
	taking := k == takes && active // a wait holds its connection whatever this says
	if taking && q.taking >= l.maxPerUID/2 {
		l.forget(uid, q)
		l.mu.Unlock()
		return nil, errBusy("%s has %d requests waiting for it", l.names.of(uid), q.taking)
	}
	q.count(taking, 1)
	l.mu.Unlock()

	err = l.pace(uid, k)
	l.mu.Lock()
	if err != nil || !active {
		q.count(taking, -1)
		l.forget(uid, q)
		l.mu.Unlock()
		return func() {}, err
	}
	if q.active < l.maxActive {
		q.active++
		q.count(taking, -1)
		l.mu.Unlock()
	} else {
		ready := make(chan struct{})
		q.waiting[k] = append(q.waiting[k], ready)
		l.mu.Unlock()
		<-ready // its turn, handed over by next
	}
	return func() { l.next(uid, q) }, nil
}

// next ends a turn of uid's: it goes to the first request waiting that
// frees, else the first that takes.
func (l *limits) next(uid int, q *queue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range []kind{frees, takes} {
		if w := q.waiting[k]; len(w) > 0 {
			close(w[0])
			q.waiting[k] = w[1:]
			q.count(k == takes, -1)
			return
		}
	}
	q.active--
	l.forget(uid, q)
}

// count counts n more of q's requests waiting, taking or not.
func (q *queue) count(taking bool, n int) {
	q.pending += n
	if taking {
		q.taking += n
	}
}

// forget lets go of uid's queue q once it has no request under way or
// waiting. l.mu is held.
func (l *limits) forget(uid int, q *queue) {
	if q.active == 0 && q.pending == 0 {
		delete(l.turns, uid)
	}
}

// pace waits for uid's next request of kind k to be due at its rate.
func (l *limits) pace(uid int, k kind) error {
	if l.rate <= 0 {
		return nil
	}
	l.mu.Lock()
	b, ok := l.paces[uid]
	if !ok {
		if len(l.paces) >= maxNames {
			l.paces = map[int]*[2]bucket{} // a full bucket each: as before
		}
		b = &[2]bucket{{tokens: l.burst}, {tokens: l.burst}}
		l.paces[uid] = b
	}
	wait, over := b[k].take(clock.Kernel.Now(), l.rate, l.burst, maxPace) // pacing, not a time of the books
	l.mu.Unlock()
	if over {
		return errBusy("%s sends more than %g requests a second", l.names.of(uid), l.rate)
	}
	if wait > 0 {
		<-clock.Kernel.After(wait)
	}
	return nil
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
