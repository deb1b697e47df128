package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Writers that keep losing optimistic races wait their turn in a line, in
// order, as under go.etcd.io/etcd/client/v3/concurrency's Mutex: each puts
// a key under the line's prefix, and the key with the lowest create
// revision holds the turn. Every commit requires the turn to be its own
// or nobody's: a writer in no line commits only while both lines are
// empty, so once anyone waits, newcomers lose and join the line behind.
//
// A writer whose first read finds anyone waiting joins at once: its commit
// would lose, and a lost commit still costs every member a write.
//
// There are two lines. A monitor's pass (see UpdateUrgent) joins the urgent
// line as soon as it loses once or finds writers waiting, and the urgent
// line goes first: its head commits whatever the ordinary line holds, and
// the ordinary line's head only while no urgent writer waits. A pass is the
// long transaction most likely to lose a race, and recording an expiry must
// not wait behind every writer of the lab; passes that write are rare
// (something is due), so they cannot starve the others. With nobody
// waiting, a pass commits as any writer does, without the line's round
// trips (a lease, a place, giving it back).
//
// A process's places are under one lease of its own (the store's turns
// lease), kept alive while the process lives and answers: a place whose
// writer died or was stopped lapses within turnTTL, however the writer's
// Update ended. A place is given back by the commit that used it (it
// deletes the key in the same Txn, so the next in line holds the turn the
// moment it commits), or else deleted when its writer leaves the line; a
// delete etcd did not answer is tried again in the background until it
// is done or the store closes, which revokes the lease. (A lease a write,
// as before, cost two more raft writes a write, a grant and a revocation,
// which halved the line's pace on a three-member cluster.) turnTTL is well
// inside a store's timeout (5 s by default), so that the writers behind a
// dead one wait it out and commit instead of giving up busy; etcd's floor
// on a lease's TTL is 2 s at its default heartbeat, and the client renews a
// lease every third of its TTL, so a live writer's places survive a
// second's stall.
const (
	turnAfter = 2 // an ordinary writer's losses before it joins the line
	turnTTL   = 3 * time.Second
)

// rank is a line of writers waiting their turn.
type rank int

const (
	urgent   rank = iota // a monitor's pass: goes first
	ordinary             // any other writer that lost turnAfter times
)

// turnsKey is where the lines are: <prefix>/turn/<rank>/<lease>.<n>.
func (s *Store) turnsKey() string   { return s.cfg.Prefix + "/turn/" }
func (s *Store) line(r rank) string { return s.turnsKey() + strconv.Itoa(int(r)) + "/" }

// turn is a writer's place in a line.
type turn struct {
	rank  rank
	key   string
	rev   int64 // the key's create revision: its place in the line
	lease clientv3.LeaseID
}

// errTurnGone says a writer's place in line is gone: its lease lapsed
// (the member keeping it alive went away, or the writer was stopped).
var errTurnGone = errors.New("this writer's place in line lapsed")

// errWaited says the time ran out while other writers held the turn.
var errWaited = errors.New("waited for other writers")

// takeTurn joins line r and waits until it holds the turn.
func (s *Store) takeTurn(ctx context.Context, r rank) (*turn, error) {
	for {
		t, err := s.joinLine(ctx, r)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && t != nil && ctx.Err() == nil {
			// The process's lease lapsed (etcd was away, or the
			// process stalled): a new one.
			s.turns.forget(t.lease)
			continue
		}
		if err != nil {
			return nil, s.unavailable(ctx, "join the line", err)
		}
		if err := s.waitTurn(ctx, t); err != nil {
			s.endTurn(ctx, t)
			return nil, err
		}
		return t, nil
	}
}

// joinLine puts a place for this writer at the back of line r.
func (s *Store) joinLine(ctx context.Context, r rank) (*turn, error) {
	var lease clientv3.LeaseID
	err := retried(ctx, func() (err error) {
		lease, err = s.lease(ctx, &s.turns, turnTTL)
		return err
	})
	if err != nil {
		return nil, err
	}
	t := &turn{rank: r, lease: lease, key: s.line(r) + strconv.FormatInt(int64(lease), 16) + "." + strconv.FormatInt(s.places.Add(1), 10)}
	// Put only if absent, else read it: a put tried again after an answer
	// lost must not move the place to the back of the line.
	err = retried(ctx, func() error {
		resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(t.key), "=", 0)).
			Then(clientv3.OpPut(t.key, "", clientv3.WithLease(lease))).Else(clientv3.OpGet(t.key)).Commit()
		switch {
		case err != nil:
			return err
		case resp.Succeeded:
			t.rev = resp.Header.Revision
		default:
			t.rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
		}
		return nil
	})
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.endTurn(ctx, t) // the put may have been applied
	}
	return t, err
}

// retried calls fn until it succeeds, fails for good, or ctx ends: a
// member down or a leader being elected is waited out.
func retried(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !transient(err) || !pause(ctx, attempt) {
			return err
		}
	}
}

// waitTurn returns once t holds the turn: no urgent writer is ahead of it,
// nor, for an ordinary one, any urgent writer or an ordinary one that came
// before. As concurrency's Mutex does, it watches only the writer just
// ahead, so that a turn given back wakes one waiter rather than all.
func (s *Store) waitTurn(ctx context.Context, t *turn) error {
	var failed error // the last failure to read or watch, for the message
	for attempt := 1; ; attempt++ {
		ops := []clientv3.Op{
			clientv3.OpGet(t.key),
			clientv3.OpGet(s.line(t.rank), append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(t.rev-1))...),
		}
		if t.rank != urgent {
			ops = append(ops, clientv3.OpGet(s.line(urgent), clientv3.WithFirstCreate()...))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err == nil {
			if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
				return errTurnGone
			}
			ahead := ""
			for _, r := range resp.Responses[1:] {
				if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
					ahead = string(kvs[0].Key)
				}
			}
			if ahead == "" {
				return nil
			}
			if err = s.waitGone(ctx, ahead, resp.Header.Revision); err == nil {
				continue
			}
		}
		if ctx.Err() == nil {
			failed = err
		}
		if !pause(ctx, attempt) {
			if failed != nil {
				return s.unavailable(ctx, "wait in line", failed)
			}
			return errWaited
		}
	}
}

// waitGone returns once key is deleted after revision rev.
func (s *Store) waitGone(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range s.cli.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the watch of %s ended", key)
}

// turnCompares are what a commit requires of the lines: with no turn, that
// nobody waits; with one, that nobody is ahead of it.
func (s *Store) turnCompares(t *turn) []clientv3.Cmp {
	if t == nil {
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.turnsKey()), "=", 0).WithPrefix()}
	}
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev),
		clientv3.Compare(clientv3.CreateRevision(s.line(t.rank)), ">", t.rev-1).WithPrefix(),
	}
	if t.rank != urgent {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.line(urgent)), "=", 0).WithPrefix())
	}
	return cmps
}

// endTurn leaves the line: it deletes the writer's place, within ctx, the
// operation's time. Should etcd not answer, or the time be up, the delete
// is tried again in the background (see giveBack), without keeping the
// caller past the deadline it promised.
func (s *Store) endTurn(ctx context.Context, t *turn) {
	if ctx.Err() == nil {
		if _, err := s.cli.Delete(ctx, t.key); err == nil {
			return
		}
	}
	go s.giveBack(t.key)
}

// giveBack deletes a place in the background until etcd has done it or the
// store closes (which revokes the places' lease); each try within the
// store's timeout.
func (s *Store) giveBack(key string) {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.life, s.cfg.Timeout)
		_, err := s.cli.Delete(ctx, key)
		cancel()
		unanswered := transient(err) || errors.Is(err, context.DeadlineExceeded) || deadlineAtServer(err)
		if err == nil || !unanswered || !pause(s.life, attempt) {
			return
		}
	}
}

// revoke ends a lease within the store's timeout.
func (s *Store) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	_, _ = s.cli.Revoke(ctx, lease)
}
