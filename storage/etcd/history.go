package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/clock"
)

// etcd keeps every version of every key until it is compacted, and a
// read of a bucket's prefix walks the keys deleted from it since: after
// 10,000 bookings made and released, reading the live bucket (as every
// transaction does) took 1.59 ms instead of 0.44; compacted, 0.41 again.
// Chronos reads no version older than its own operations (seconds), so
// the monitors compact what is older than they keep (see ForgetHistory),
// whether or not etcd was started with --auto-compaction-*: an etcd that
// never compacts also fills its space quota, and then refuses every write.

// historyFloor is the least a revision is kept by the kernel's clock,
// whatever the caller's clock says: a test's fake clock runs ahead of
// every operation on the same etcd, which read revisions seconds old.
const historyFloor = time.Minute

// mark is the revision that was current at a time, by the caller's clock
// and by the kernel's.
type mark struct {
	at, real time.Time
	rev      int64
}

// history is what ForgetHistory remembers between calls.
type history struct {
	marks     []mark        // oldest first, a quarter of keep or more apart
	compacted int64         // the revision last compacted to, by this Store
	floor     time.Duration // historyFloor; tests of a cluster of their own set less
}

// ForgetHistory compacts etcd's history to the revision that was current
// keep ago by now, which it knows from its earlier calls (the first call
// only notes the current revision), and at least historyFloor ago by the
// kernel's clock. A revision already compacted (by
// etcd's own compaction, or another host's monitor) is no error.
func (s *Store) ForgetHistory(ctx context.Context, now time.Time, keep time.Duration) error {
	s.hist.Lock()
	defer s.hist.Unlock()
	h := &s.hist.history
	if n := len(h.marks); n == 0 || now.Sub(h.marks[n-1].at) >= keep/4 || now.Before(h.marks[n-1].at) {
		if n > 0 && now.Before(h.marks[n-1].at) {
			h.marks = nil // this host's clock went back: start again
		}
		resp, err := s.cli.Get(ctx, s.versionKey(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		h.marks = append(h.marks, mark{at: now, real: clock.Kernel.Now(), rev: resp.Header.Revision})
	}
	old := -1 // the newest mark at least keep old
	for i, m := range h.marks {
		if now.Sub(m.at) >= keep && clock.Kernel.Now().Sub(m.real) >= h.floor {
			old = i
		}
	}
	if old < 0 {
		return nil
	}
	rev := h.marks[old].rev
	h.marks = h.marks[old+1:]
	if rev <= h.compacted {
		return nil
	}
	_, err := s.cli.Compact(ctx, rev)
	if errors.Is(err, rpctypes.ErrCompacted) {
		err = nil // compacted further already
	}
	if err == nil {
		h.compacted = rev
	}
	return err
}
