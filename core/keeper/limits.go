package keeper

import (
	"fmt"
	"sync"

	"github.com/chronos-gpu/chronos/storage"
)

// The keeper's bounds: on connections open at once, all together and for
// one user, and on one user's requests served at once. A member's flood
// of requests then waits its turn behind its own, and cannot take the
// descriptors, the goroutines or the ledger's lock from another member.
const (
	DefaultMaxConns  = 4096 // connections open at once, all users
	DefaultMaxPerUID = 512  // connections one user holds open (waiters included)
	DefaultMaxActive = 4    // one user's requests under way at once (waits excluded: they hold no lock)
)

// limits counts connections and hands out turns.
type limits struct {
	maxConns, maxPerUID, maxActive int
	names                          *names

	mu    sync.Mutex
	total int
	conns map[int]int           // by uid
	turns map[int]chan struct{} // by uid: a semaphore of maxActive
}

func (s *Server) limits() *limits {
	s.once.Do(func() {
		l := &limits{maxConns: s.MaxConns, maxPerUID: s.MaxPerUID, maxActive: s.MaxActive, conns: map[int]int{}, turns: map[int]chan struct{}{}, names: &s.names}
		if l.maxConns <= 0 {
			l.maxConns = DefaultMaxConns
		}
		if l.maxPerUID <= 0 {
			l.maxPerUID = DefaultMaxPerUID
		}
		if l.maxActive <= 0 {
			l.maxActive = DefaultMaxActive
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

// turn waits until uid may have one more request under way; done ends
// it. Root waits for none.
func (l *limits) turn(uid int) (done func()) {
	if uid == 0 {
		return func() {}
	}
	l.mu.Lock()
	t, ok := l.turns[uid]
	if !ok {
		t = make(chan struct{}, l.maxActive)
		l.turns[uid] = t
	}
	l.mu.Unlock()
	t <- struct{}{}
	return func() { <-t }
}
