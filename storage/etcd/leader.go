package etcd

import (
	"context"
	"errors"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/chronos-gpu/chronos/core/clock"
)

// Updates go straight to the member that leads the cluster, once this
// process knows which one does. Any member serves any request, but one that
// does not lead forwards each commit to the leader and answers only after
// it has applied it too, and it answers a linearizable read only after a
// round of the leader's heartbeats; the client spreads requests over every
// member. On a three-member cluster that was a quarter of a create's time.
//
// On the leader's own connection an update's first read is also served
// from that member's state as it stands (a serializable read): a member
// answers only after applying a change it committed, so this process's own
// last change is always there. Correctness never rests on that member
// being current, or being the leader still:
//   - a commit writes only if nothing committed since the revision read
//     (commit), so a stale read makes it lose and try again, linearizably;
//   - an update that ends without writing (a refusal, nothing to do) first
//     asks, linearizably, whether anything committed since (current).
//
// The leader is looked for in the background, from a process's second
// update on (a one-shot command's one update would not wait for it, and
// the look costs each member a connection), then every lookEvery, and at
// once when an answer comes from a later raft term than the leader's (an
// election since, which may have moved the lead). A connection that fails
// is dropped at once, the update goes on over the client's own, and the
// look after lookAgain finds the new leader.
const (
	lookEvery = 30 * time.Second
	lookAgain = 3 * time.Second
)

// leaderPin is the connection to the leader, when one is known.
type leaderPin struct {
	sync.Mutex
	kv      clientv3.KV      // nil when none is known
	conn    *grpc.ClientConn // kv's
	ep      string           // its endpoint
	term    uint64           // the raft term in which it led
	looked  time.Time        // when the last look ended
	looking bool
	closed  bool
	asked   bool // an update has asked writer once: the next looks
}

// writer is the connection an update uses: the leader's, and true, when it
// is known; else the client, which spreads requests over every member.
func (s *Store) writer() (clientv3.KV, bool) {
	if len(s.cfg.Endpoints) < 2 {
		return s.cli, false // nothing to choose
	}
	p := &s.pin
	p.Lock()
	defer p.Unlock()
	if !p.asked {
		p.asked = true
		return s.cli, false
	}
	wait := lookEvery
	if p.kv == nil {
		wait = lookAgain
	}
	if !p.looking && !p.closed && (p.looked.IsZero() || clock.Kernel.Now().Sub(p.looked) >= wait) {
		p.looking = true
		go s.lookForLeader()
	}
	if p.kv == nil {
		return s.cli, false
	}
	return p.kv, true
}

// lookForLeader asks every member who leads, and connects to that one.
func (s *Store) lookForLeader() {
	ctx, cancel := context.WithTimeout(s.life, s.cfg.Timeout)
	defer cancel()
	ep, term := s.leaderEndpoint(ctx)
	p := &s.pin
	p.Lock()
	same := ep == p.ep && p.kv != nil
	if same {
		p.term = term // re-elected
	}
	p.Unlock()
	var conn *grpc.ClientConn
	if ep != "" && !same {
		conn, _ = s.cli.Dial(ep) // connects lazily: a failure shows at use
	}
	p.Lock()
	defer p.Unlock()
	p.looking, p.looked = false, clock.Kernel.Now()
	if conn == nil {
		return
	}
	if p.closed {
		_ = conn.Close()
		return
	}
	s.pinTo(ep, term, conn)
}

// pinTo makes conn, to ep, which led in term, the connection updates use;
// p is locked.
func (s *Store) pinTo(ep string, term uint64, conn *grpc.ClientConn) {
	p := &s.pin
	s.closeLater(p.conn)
	p.ep, p.term, p.conn = ep, term, conn
	p.kv = clientv3.NewKVFromKVClient(failFast{pb.NewKVClient(conn)}, s.cli)
}

// answered notes the raft term of an answer on kv, the leader's connection:
// a later term than the one it led in sends the next update to look again.
func (s *Store) answered(kv clientv3.KV, term uint64) {
	p := &s.pin
	p.Lock()
	defer p.Unlock()
	if p.kv == kv && term > p.term && !p.looking {
		p.looked = time.Time{}
	}
}

// failFast fails a transaction's calls at once while the member cannot be
// reached, where the client would wait for it to come back (it waits for
// one of its members to be ready): the call then goes to the client.
type failFast struct{ pb.KVClient }

func (f failFast) Range(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	return f.KVClient.Range(ctx, in, append(opts, grpc.WaitForReady(false))...)
}

func (f failFast) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	return f.KVClient.Txn(ctx, in, append(opts, grpc.WaitForReady(false))...)
}

// leaderEndpoint is the endpoint of the member that says it leads, and
// its term; or "" when none does within ctx.
func (s *Store) leaderEndpoint(ctx context.Context) (string, uint64) {
	type lead struct {
		ep   string
		term uint64
	}
	found := make(chan lead, len(s.cfg.Endpoints))
	for _, ep := range s.cfg.Endpoints {
		go func() {
			st, err := s.cli.Status(ctx, ep)
			if err == nil && st.Leader != 0 && st.Header != nil && st.Header.MemberId == st.Leader {
				found <- lead{ep, st.RaftTerm}
				return
			}
			found <- lead{}
		}()
	}
	for range s.cfg.Endpoints {
		if l := <-found; l.ep != "" {
			return l.ep, l.term
		}
	}
	return "", 0
}

// unpin drops kv, the leader's connection, after it failed: updates go
// over the client until the next look finds the leader.
func (s *Store) unpin(kv clientv3.KV) {
	p := &s.pin
	p.Lock()
	defer p.Unlock()
	if p.kv != kv {
		return // dropped or replaced already
	}
	s.closeLater(p.conn)
	p.ep, p.conn, p.kv = "", nil, nil
	p.looked = clock.Kernel.Now()
}

// closeLater closes a connection no longer handed out once the operations
// that may still use it have ended (each within the timeout).
func (s *Store) closeLater(conn *grpc.ClientConn) {
	if conn != nil {
		time.AfterFunc(s.cfg.Timeout, func() { _ = conn.Close() })
	}
}

// closePin closes the leader's connection, at Close.
func (s *Store) closePin() {
	p := &s.pin
	p.Lock()
	defer p.Unlock()
	p.closed = true
	if p.conn != nil {
		_ = p.conn.Close()
	}
	p.ep, p.conn, p.kv = "", nil, nil
}

// failedOn notes that a call on the transaction's connection failed: when
// that was the leader's, and the failure is the connection's or the
// member's (not an answer about the request), it is dropped, and the
// transaction goes on over the client, linearizably: a member the client
// picks may have lost its leader, and would answer from what it had.
func (t *tx) failedOn(err error) {
	if !t.leader || errors.Is(err, rpctypes.ErrFutureRev) || errors.Is(err, rpctypes.ErrCompacted) ||
		errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return
	}
	t.s.unpin(t.kv)
	t.kv, t.leader, t.serial = t.s.cli, false, false
}

// current reports whether nothing committed since the transaction's
// revision, asking linearizably: what a serializable first read found is
// then what a linearizable one would have.
func (t *tx) current() bool {
	resp, err := t.kv.Get(t.ctx, t.s.versionKey())
	if err != nil {
		t.failedOn(err)
		return false
	}
	return len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision <= t.rev
}
