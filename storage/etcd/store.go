// Package etcd keeps the ledger on etcd, for a lab of many GPU hosts. It is
// a storage engine: a storage.RawTx over etcd under the same records, and
// the same core, as the bbolt file.
//
// Layout under the prefix (/chronos unless the store URL names another):
//
//	<prefix>/<bucket>/<key>   a record (keys as the records write them)
//	<prefix>/seq/<bucket>     the bucket's last sequence number, in decimal
//	<prefix>/version          rewritten by every committed transaction
//	<prefix>/hosts/<host>     a host's live status, under a lease
//	<prefix>/turn/<rank>/<n>  writers waiting their turn, under leases (see turn.go)
//
// A transaction reads at one revision (its first read pins it), keeps its
// writes in an overlay its own reads see, and commits with one etcd Txn
// that fails if the version key changed since that revision: any other
// commit in between makes it retry from the start, so transactions are
// serializable, as under bbolt's single writer, with no lock held across the
// network — but for writers that keep losing, which wait their turn in
// line, in order, while the others wait for the line (see turn.go).
package etcd

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/status"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// DefaultPrefix is where the ledger lives in etcd unless the URL says.
const DefaultPrefix = "/chronos"

// DefaultTimeout bounds every operation: an etcd that does not answer gives
// an error within it, never a hang. It leaves room for a three-member
// cluster to elect a new leader (about a second by etcd's defaults).
const DefaultTimeout = 5 * time.Second

// checkReserve is the share of an update's timeout (1/checkReserve) kept
// from its attempts for finding out whether a commit etcd did not answer
// happened (two round trips) and giving the turn back.
const checkReserve = 5

// Config says how to reach the ledger.
type Config struct {
	// Endpoints are etcd members' client addresses, host:port.
	Endpoints []string
	// Prefix is the key prefix of the ledger; DefaultPrefix when empty.
	Prefix string
	// TLS secures the connection; nil means plain TCP.
	TLS *tls.Config
	// Timeout bounds each operation; DefaultTimeout when zero.
	Timeout time.Duration
}

// Store is the ledger on etcd. It is safe for concurrent use; Close it when
// done.
type Store struct {
	cli     *clientv3.Client
	cfg     Config
	version atomic.Int64 // the version key's last seen modification revision
	leases  leaseHolder  // for hosts' statuses
	turns   leaseHolder  // for this process's places in the writers' line (turn.go)
	places  atomic.Int64 // names this process's places
	pin     leaderPin    // the leader's connection, for updates (leader.go)
	life    context.Context
	end     context.CancelFunc // at Close: places still to give back are let go

	// beforeCommit, when set (by tests), runs between a transaction's
	// reads and its commit.
	beforeCommit func()

	hist struct { // what ForgetHistory remembers
		sync.Mutex
		history
	}
}

var quietGRPC sync.Once

// Open connects to etcd. It does not wait for an answer: an etcd that
// cannot be reached makes the first operation fail within the timeout.
func Open(cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	cfg.Prefix = "/" + strings.Trim(cfg.Prefix, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	// gRPC logs connection failures to stderr on its own; chronos says what
	// went wrong in its errors instead.
	quietGRPC.Do(func() { grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard)) })
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.Timeout,
		TLS:         cfg.TLS,
		Logger:      zap.NewNop(),
		// Notice a dead member within a few seconds and fail over.
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	life, end := context.WithCancel(context.Background())
	s := &Store{cli: cli, cfg: cfg, life: life, end: end}
	s.hist.floor = historyFloor
	return s, nil
}

// Close ends the connection; statuses this store published lapse a TTL
// later.
func (s *Store) Close() error {
	s.leases.end()
	if s.end != nil {
		s.end()
	}
	if id := s.turns.end(); id != 0 {
		s.revoke(id) // any place left in line goes with it, at once
	}
	s.closePin()
	return s.cli.Close()
}

// Client is the etcd client, for the host status (hosts.go) and tests.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix is the ledger's key prefix.
func (s *Store) Prefix() string { return s.cfg.Prefix }

// String is the store's URL.
func (s *Store) String() string {
	u := "etcd://" + strings.Join(s.cfg.Endpoints, ",")
	if s.cfg.Prefix != DefaultPrefix {
		u += s.cfg.Prefix
	}
	return u
}

// Version is the revision of the last transaction this store has seen
// committed, by itself or (while Changes runs) by anyone.
func (s *Store) Version() string { return strconv.FormatInt(s.version.Load(), 10) }

func (s *Store) seen(rev int64) {
	for {
		old := s.version.Load()
		if rev <= old || s.version.CompareAndSwap(old, rev) {
			return
		}
	}
}

func (s *Store) versionKey() string          { return s.cfg.Prefix + "/version" }
func (s *Store) seqKey(bucket []byte) string { return s.cfg.Prefix + "/seq/" + string(bucket) }
func (s *Store) bucketPrefix(bucket []byte) string {
	return s.cfg.Prefix + "/" + string(bucket) + "/"
}

// reserved are names under the prefix that are not buckets.
var reserved = []string{"seq", "version", "hosts", "turn"}

func checkBucket(bucket []byte) error {
	name := string(bucket)
	if name == "" || strings.Contains(name, "/") || slices.Contains(reserved, name) {
		return fmt.Errorf("etcd: %q cannot name a bucket", name)
	}
	return nil
}

// transient reports whether an error may pass by itself: a member down or
// unreachable, a leader being elected.
func transient(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	return status.Code(err) == codes.Unavailable
}

// deadlineAtServer reports whether etcd gave up on a call because its
// deadline, which the call carries, passed there a moment before it did
// here: a member with no leader says so in a status of its own (code
// Unknown, "context deadline exceeded"), not as this side's context error.
func deadlineAtServer(err error) bool {
	st, ok := status.FromError(err)
	return ok && (st.Code() == codes.DeadlineExceeded ||
		st.Code() == codes.Unknown && st.Message() == context.DeadlineExceeded.Error())
}

// unavailable turns a failed call into the error a person reads: etcd did
// not answer in time, could not serve (no leader), or said why not.
func (s *Store) unavailable(ctx context.Context, what string, err error) error {
	eps := strings.Join(s.cfg.Endpoints, ",")
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrTLS):
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, cause)
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller's ctx ended (Ctrl-C): etcd is not to blame.
		return fmt.Errorf("%s: %w", what, stopped(ctx))
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || deadlineAtServer(err):
		return fmt.Errorf("%w: etcd at %s did not answer within %s (%s: %w)", storage.ErrUnavailable, eps, s.cfg.Timeout, what, err)
	case transient(err):
		return fmt.Errorf("%w: etcd at %s: %w (%s)", storage.ErrUnavailable, eps, err, what)
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("%s: etcd at %s: %w (start etcd with a larger --max-txn-ops, e.g. 4096)", what, eps, err)
	}
	return fmt.Errorf("%s: etcd at %s: %w", what, eps, err)
}

// stopped is why the caller's ctx ended: its cause (a signal, say), which
// matches context.Canceled, else its error.
func stopped(ctx context.Context) error {
	return context.Cause(ctx) // ctx.Err() when it was given no cause
}

// Timeout bounds each operation.
func (s *Store) Timeout() time.Duration { return s.cfg.Timeout }

// pause waits a little, at random, before trying again; false when the
// deadline came first.
func pause(ctx context.Context, attempt int) bool {
	wait := time.Duration(rand.Int64N(int64(min(attempt, 20))*int64(time.Millisecond))) + time.Millisecond
	select {
	case <-ctx.Done():
		return false
	case <-clock.Kernel.After(wait): // pacing retries, in real time
		return true
	}
}

// outcome is how a commit ended.
type outcome int

const (
	committed  outcome = iota
	conflicted         // another transaction committed first: run fn again
	notWritten         // etcd failed and the commit is known not to have happened
	unknown            // etcd failed and whether the commit happened is not known
	refused            // etcd refused it for good (too many operations, say)
)

// Update runs fn in one serializable read-write transaction. fn may run
// more than once (after losing to another writer, or after etcd failed
// before the commit), so it must not act outside the transaction. When
// etcd fails while committing, Update finds out whether the commit
// happened before saying so. A writer that keeps losing waits its turn in
// line (see turn.go). The end of ctx ends the waiting and the retries at
// once, with ctx's cause (a commit etcd may have made meanwhile is
// reported as unknown).
func (s *Store) Update(ctx context.Context, fn func(*storage.Tx) error) error {
	return s.update(ctx, ordinary, fn)
}

// UpdateUrgent is Update for a monitor's pass: once it has lost, or finds
// writers waiting, it waits its turn ahead of every ordinary writer (see
// turn.go), so that recording an expiry never loses to unrelated writers.
func (s *Store) UpdateUrgent(ctx context.Context, fn func(*storage.Tx) error) error {
	return s.update(ctx, urgent, fn)
}

//nolint:funlen,gocyclo // the optimistic transaction: read, run, commit, and each way a try ends (conflict, turn, unknown commit, timeout)
func (s *Store) update(caller context.Context, r rank, fn func(*storage.Tx) error) (err error) {
	whole, cancel := s.operation(caller)
	defer cancel()
	inDoubt := false // a commit was sent, and whether it happened is not known
	defer func() {
		// Busy or unavailable because the caller stopped waiting: say so;
		// but never "nothing was written" of a commit that may have been.
		if !inDoubt && caller.Err() != nil && (errors.Is(err, storage.ErrBusy) || errors.Is(err, storage.ErrUnavailable)) {
			err = fmt.Errorf("%w; nothing was written", stopped(caller))
		}
	}()
	// The attempts end a checkReserve-th of the timeout before the
	// operation's deadline, which leaves time to find out whether a commit
	// etcd did not answer happened, and to give the turn back: the whole
	// of Update, those included, ends within the timeout it promises.
	deadline, _ := whole.Deadline()
	ctx, cancelAttempts := context.WithDeadline(whole, deadline.Add(-s.cfg.Timeout/checkReserve))
	defer cancelAttempts()
	lost := 0 // attempts that lost to another writer
	busy := func() error {
		return fmt.Errorf("%w: other writers kept it for %s; nothing was written", storage.ErrBusy, s.cfg.Timeout)
	}
	var turn *turn // this writer's place in line, once it has one
	defer func() {
		if turn != nil {
			s.endTurn(whole, turn)
		}
	}()
	for attempt := 1; ; attempt++ {
		if turn == nil && (lost >= turnAfter || r == urgent && lost > 0) {
			var err error
			switch turn, err = s.takeTurn(ctx, r); {
			case errors.Is(err, errTurnGone):
				continue // its place lapsed while it waited: join again
			case errors.Is(err, errWaited), err != nil && lost > 0 && ctx.Err() != nil:
				return busy()
			case err != nil:
				return fmt.Errorf("%w; nothing was written", err)
			}
		}
		kv, leader := s.writer()
		// The first try reads the leader's state as it stands; the others,
		// after a loss that may have been to a stale read, linearizably.
		t := &tx{s: s, ctx: ctx, op: whole, writable: true, turn: turn, kv: kv, leader: leader, serial: leader && attempt == 1}
		stx, err := storage.NewTx(t)
		if err == nil {
			err = fn(stx)
		}
		if err == nil {
			err = t.err // a read failed though fn carried on
		}
		if t.unsure && (err == nil && len(t.writes) == 0 || err != nil && !errors.Is(err, storage.ErrUnavailable)) && !t.current() {
			continue // it ends without a commit, which would have checked the revision: read again
		}
		if errors.Is(err, storage.ErrUnavailable) && lost > 0 && ctx.Err() != nil {
			return busy() // the time went on losing, not on an etcd that did not answer
		}
		if errors.Is(err, storage.ErrUnavailable) {
			return fmt.Errorf("%w; nothing was written", err)
		}
		if err != nil || len(t.writes) == 0 {
			return err
		}
		if turn == nil && t.waiting {
			// Others wait their turn: a commit now would lose to them
			// (and cost etcd a write). Join the line at once.
			lost = max(lost+1, turnAfter)
			continue
		}
		if s.beforeCommit != nil {
			s.beforeCommit()
		}
		how, err := t.commit()
		switch how {
		case committed:
			turn = nil // the commit deleted its place
			return nil
		case conflicted:
			lost++
			if turn == nil {
				if !pause(ctx, attempt) { // the deadline bounds the attempts
					return busy()
				}
				continue
			}
			// Holding the turn, it lost anyway: an urgent writer came
			// first, and this one waits for it in its place; or its place
			// lapsed (the member keeping its lease was away), and it
			// joins the line again, rather than comparing against a place
			// that no longer exists.
			switch err := s.waitTurn(ctx, turn); {
			case errors.Is(err, errTurnGone):
				s.endTurn(ctx, turn)
				turn = nil
			case errors.Is(err, errWaited):
				return busy()
			case err != nil:
				return fmt.Errorf("%w; nothing was written", err)
			}
		case notWritten:
			if ctx.Err() != nil && lost > 0 {
				return busy()
			}
			if ctx.Err() != nil || !pause(ctx, attempt) {
				return fmt.Errorf("%w; nothing was written", err)
			}
		case unknown:
			inDoubt = true
			return fmt.Errorf("%w; it is not known whether this change was written: look again once etcd answers", err)
		default:
			return err
		}
	}
}

// View runs fn in one read-only transaction at one revision; the end of
// ctx cuts it short.
func (s *Store) View(ctx context.Context, fn func(*storage.Tx) error) error {
	ctx, cancel := s.operation(ctx)
	defer cancel()
	t := &tx{s: s, ctx: ctx, kv: s.cli}
	stx, err := storage.NewTx(t)
	if err == nil {
		err = fn(stx)
	}
	if err == nil {
		err = t.err
	}
	return err
}

// Changes sends when a transaction commits, from etcd's watch of the
// version key. A watch that breaks (etcd down, no leader) is started again
// every poll, from the last revision seen; once it is back it sends once,
// since a commit may have gone unseen. Nothing is sent while etcd cannot
// be reached: a notice means there is something to read.
func (s *Store) Changes(ctx context.Context, poll time.Duration) <-chan struct{} {
	out := make(chan struct{}, 1)
	notify := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(out)
		broke := false
		var compacted int64 // history before it is gone (see ForgetHistory)
		for ctx.Err() == nil {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			opts := []clientv3.OpOption{clientv3.WithCreatedNotify()}
			if v := s.version.Load(); v > 0 {
				// From the revision after the last seen, or from the
				// oldest etcd still has: a ledger unchanged for longer
				// than history is kept has its last change compacted.
				opts = append(opts, clientv3.WithRev(max(v+1, compacted)))
			}
			for wr := range s.cli.Watch(wctx, s.versionKey(), opts...) {
				if wr.Err() != nil {
					compacted = max(compacted, wr.CompactRevision)
					break
				}
				if wr.Created && broke {
					broke = false
					notify()
				}
				for _, ev := range wr.Events {
					s.seen(ev.Kv.ModRevision)
				}
				if len(wr.Events) > 0 {
					notify()
				}
			}
			cancel()
			broke = true
			select {
			case <-ctx.Done():
			case <-clock.Kernel.After(poll): // a broken watch is tried again
			}
		}
	}()
	return out
}

// write is one buffered change: a value, or a deletion.
type write struct {
	value   []byte
	deleted bool
}

// tx is one transaction: reads at rev, writes buffered until commit.
type tx struct {
	s   *Store
	ctx context.Context
	// op is the operation's context, which outlasts ctx by the time kept
	// to find out whether a commit happened (see Update).
	op       context.Context
	writable bool
	kv       clientv3.KV // what it reads and commits on: the leader's connection, or the client
	leader   bool        // kv is the leader's connection (leader.go)
	serial   bool        // the first read is to be served from that member's state as it stands
	unsure   bool        // it was: whether it was current is not known (see current)
	rev      int64       // every read is at this revision; 0 until the first
	writes   map[string]write
	err      error // the first failed read
	turn     *turn // the turn this writer holds, if any
	waiting  bool  // writers waited their turn at rev: without one, this commit would lose
	// Keys read at rev, nil for absent ones; and prefixes read whole at the
	// first read (storage.SmallBuckets and the sequences), whose keys not
	// in read are absent.
	read  map[string][]byte
	whole []string
}

func (t *tx) Writable() bool { return t.writable }

func (t *tx) failed(what string, err error) error {
	err = t.s.unavailable(t.ctx, what, err)
	if t.err == nil {
		t.err = err
	}
	return err
}

// rangeAt reads at the transaction's revision. The first read pins it,
// reading the version key alongside in the same round trip. A member down
// or a leader being elected is waited out, within the deadline.
func (t *tx) rangeAt(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	for attempt := 1; ; attempt++ {
		resp, err := t.rangeOnce(key, opts...)
		if err == nil {
			return resp, nil
		}
		t.failedOn(err)
		if !transient(err) || !pause(t.ctx, attempt) {
			return nil, t.failed("read", err)
		}
	}
}

// rangeOnce reads once. The first read of a transaction also reads the
// version key and the small buckets whole, in the same round trip.
func (t *tx) rangeOnce(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.rev != 0 {
		return t.atRev(key, opts...)
	}
	whole := []string{t.s.cfg.Prefix + "/seq/"}
	for _, b := range storage.SmallBuckets {
		whole = append(whole, t.s.bucketPrefix(b))
	}
	var serial []clientv3.OpOption
	if t.serial {
		serial = []clientv3.OpOption{clientv3.WithSerializable()}
	}
	ops := []clientv3.Op{clientv3.OpGet(t.s.versionKey(), serial...), clientv3.OpGet(key, append(opts, serial...)...)}
	for _, p := range whole {
		ops = append(ops, clientv3.OpGet(p, append([]clientv3.OpOption{clientv3.WithPrefix()}, serial...)...))
	}
	ops = append(ops, clientv3.OpGet(t.s.turnsKey(), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}, serial...)...))
	resp, err := t.kv.Txn(t.ctx).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	t.rev, t.unsure = resp.Header.Revision, t.serial
	if t.leader {
		t.s.answered(t.kv, resp.Header.RaftTerm)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		t.s.seen(kvs[0].ModRevision)
	}
	t.read = map[string][]byte{}
	t.waiting = resp.Responses[len(ops)-1].GetResponseRange().Count > 0
	for _, r := range resp.Responses[2 : len(ops)-1] {
		for _, kv := range r.GetResponseRange().Kvs {
			t.read[string(kv.Key)] = stored(kv.Value)
		}
	}
	t.whole = whole
	return (*clientv3.GetResponse)(resp.Responses[1].GetResponseRange()), nil
}

// atRev reads key at the transaction's revision. What a revision holds
// never changes, so any member that has applied it may answer alone (a
// serializable read: no round of the leader's heartbeats, which on a
// cluster cost more than the read); one that has not applied it yet says
// so, and the read goes to the leader as a linearizable one.
func (t *tx) atRev(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	opts = append(opts, clientv3.WithRev(t.rev))
	resp, err := t.kv.Get(t.ctx, key, append(opts, clientv3.WithSerializable())...)
	if errors.Is(err, rpctypes.ErrFutureRev) {
		return t.kv.Get(t.ctx, key, opts...)
	}
	return resp, err
}

// cached answers a read from what the transaction has read: the value,
// and whether it is known.
func (t *tx) cached(key string) ([]byte, bool) {
	if v, ok := t.read[key]; ok {
		return v, true
	}
	for _, p := range t.whole {
		if strings.HasPrefix(key, p) {
			return nil, true
		}
	}
	return nil, false
}

func (t *tx) getKey(key string) ([]byte, error) {
	if w, ok := t.writes[key]; ok {
		if w.deleted {
			return nil, nil
		}
		return w.value, nil
	}
	if v, ok := t.cached(key); ok {
		return v, nil
	}
	resp, err := t.rangeAt(key)
	if err != nil {
		return nil, err
	}
	var v []byte
	if len(resp.Kvs) > 0 {
		v = stored(resp.Kvs[0].Value)
	}
	t.read[key] = v
	return v, nil
}

// getBatch is how many keys GetMany reads in one round trip: etcd takes
// 128 operations in a transaction by default.
const getBatch = 100

// GetMany reads keys in as few round trips as etcd allows.
func (t *tx) GetMany(bucket []byte, keys [][]byte) ([][]byte, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	if t.rev == 0 {
		if _, err := t.rangeAt(t.s.versionKey()); err != nil {
			return nil, err
		}
	}
	prefix := t.s.bucketPrefix(bucket)
	var missing []string
	for _, k := range keys {
		full := prefix + string(k)
		_, mine := t.writes[full]
		if _, known := t.cached(full); !mine && !known {
			missing = append(missing, full)
		}
	}
	for len(missing) > 0 {
		n := min(len(missing), getBatch)
		ops := make([]clientv3.Op, n)
		for i, k := range missing[:n] {
			// At a fixed revision any member may answer (see atRev).
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(t.rev), clientv3.WithSerializable())
		}
		var resp *clientv3.TxnResponse
		for attempt := 1; ; attempt++ {
			var err error
			if resp, err = t.kv.Txn(t.ctx).Then(ops...).Commit(); errors.Is(err, rpctypes.ErrFutureRev) {
				for i, k := range missing[:n] {
					ops[i] = clientv3.OpGet(k, clientv3.WithRev(t.rev))
				}
				resp, err = t.kv.Txn(t.ctx).Then(ops...).Commit()
			}
			if err == nil {
				break
			}
			t.failedOn(err)
			if !transient(err) || !pause(t.ctx, attempt) {
				return nil, t.failed("read", err)
			}
		}
		for i, r := range resp.Responses {
			var v []byte
			if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
				v = stored(kvs[0].Value)
			}
			t.read[missing[i]] = v
		}
		missing = missing[n:]
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		var err error
		if out[i], err = t.getKey(prefix + string(k)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stored keeps a stored empty value apart from a missing one: etcd answers
// nil for both.
func stored(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (t *tx) Get(bucket, key []byte) ([]byte, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	return t.getKey(t.s.bucketPrefix(bucket) + string(key))
}

func (t *tx) put(key string, w write) error {
	if !t.writable {
		return errors.New("etcd: write in a read-only transaction")
	}
	if t.writes == nil {
		t.writes = map[string]write{}
	}
	t.writes[key] = w
	return nil
}

func (t *tx) Put(bucket, key, value []byte) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	return t.put(t.s.bucketPrefix(bucket)+string(key), write{value: append([]byte{}, value...)})
}

func (t *tx) Delete(bucket, key []byte) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	return t.put(t.s.bucketPrefix(bucket)+string(key), write{deleted: true})
}

// Sequence is the bucket's last handed-out number (see storage.Sequencer).
func (t *tx) Sequence(bucket []byte) (uint64, error) {
	if err := checkBucket(bucket); err != nil {
		return 0, err
	}
	k := t.s.seqKey(bucket)
	v, err := t.getKey(k)
	if err != nil || v == nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: sequence %s: %q", storage.ErrDamaged, k, v)
	}
	return n, nil
}

func (t *tx) NextSequence(bucket []byte) (uint64, error) {
	n, err := t.Sequence(bucket)
	if err != nil {
		return 0, err
	}
	n++
	return n, t.put(t.s.seqKey(bucket), write{value: []byte(strconv.FormatUint(n, 10))})
}

// scanPage is the first page of a scan; later pages grow, so that a scan
// stopped early (the newest event, say) reads little and a long one takes
// few round trips.
const (
	scanPage    = 64
	scanPageMax = 1024
)

func (t *tx) Scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	return t.scan(bucket, from, nil, reverse, fn)
}

// ScanTo is an ascending Scan of the keys below to (see
// storage.RangeScanner): etcd 3.4 walks every key of a range, whatever its
// limit, so a scan that knows where it ends reads no further.
func (t *tx) ScanTo(bucket, from, to []byte, fn func(k, v []byte) (bool, error)) error {
	return t.scan(bucket, from, to, false, fn)
}

//nolint:gocyclo // one scan merges the transaction's own writes with etcd's pages, in either direction
func (t *tx) scan(bucket, from, to []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	prefix := t.s.bucketPrefix(bucket)
	lo, hi := prefix, clientv3.GetPrefixRangeEnd(prefix)
	switch {
	case from != nil && reverse:
		hi = prefix + string(from) + "\x00" // keys <= from
	case from != nil:
		lo = prefix + string(from)
	}
	if to != nil {
		hi = min(hi, prefix+string(to))
	}
	if lo >= hi {
		return nil
	}
	// This transaction's own writes in the range, in scan order, merged
	// with what etcd holds.
	var mine []string
	for k := range t.writes {
		if k >= lo && k < hi {
			mine = append(mine, k)
		}
	}
	slices.Sort(mine)
	if reverse {
		slices.Reverse(mine)
	}
	ahead := func(a, b string) bool { // a comes strictly before b
		if reverse {
			return a > b
		}
		return a < b
	}
	// emit calls fn for key k unless this transaction deleted it.
	emit := func(k string, v []byte) (bool, error) {
		if w, ok := t.writes[k]; ok {
			if w.deleted {
				return true, nil
			}
			v = w.value
		}
		return fn([]byte(k[len(prefix):]), v)
	}
	page, err := t.pages(bucket, lo, hi, reverse)
	if err != nil {
		return err
	}
	for {
		kvs, more, err := page()
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			k := string(kv.Key)
			for len(mine) > 0 && ahead(mine[0], k) {
				if more, err := emit(mine[0], nil); err != nil || !more {
					return err
				}
				mine = mine[1:]
			}
			if len(mine) > 0 && mine[0] == k {
				mine = mine[1:]
			}
			if more, err := emit(k, stored(kv.Value)); err != nil || !more {
				return err
			}
		}
		if !more {
			break
		}
	}
	for _, k := range mine {
		if more, err := emit(k, nil); err != nil || !more {
			return err
		}
	}
	return nil
}

// pages returns what etcd holds in [lo, hi) at the transaction's revision,
// a page a call, in key order (reversed if asked): from what the first read
// read whole when it covers the range, else from etcd in growing pages.
func (t *tx) pages(bucket []byte, lo, hi string, reverse bool) (func() ([]*mvccpb.KeyValue, bool, error), error) {
	if t.rev == 0 { // the first read: pins the revision, reads the small buckets
		if _, err := t.rangeAt(t.s.versionKey()); err != nil {
			return nil, err
		}
	}
	for _, p := range t.whole {
		if lo >= p && hi <= clientv3.GetPrefixRangeEnd(p) {
			var kvs []*mvccpb.KeyValue
			for k, v := range t.read {
				if k >= lo && k < hi && v != nil {
					kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(k), Value: v})
				}
			}
			slices.SortFunc(kvs, func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
			if reverse {
				slices.Reverse(kvs)
			}
			return func() ([]*mvccpb.KeyValue, bool, error) { return kvs, false, nil }, nil
		}
	}
	if top, err := t.Sequence(bucket); reverse && err == nil && top > 0 {
		return t.pagesDown(t.s.bucketPrefix(bucket), lo, hi, top), nil
	}
	order := clientv3.SortAscend
	if reverse {
		order = clientv3.SortDescend
	}
	limit := int64(scanPage)
	return func() ([]*mvccpb.KeyValue, bool, error) {
		resp, err := t.rangeAt(lo, clientv3.WithRange(hi), clientv3.WithSort(clientv3.SortByKey, order), clientv3.WithLimit(limit))
		if err != nil {
			return nil, false, err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return resp.Kvs, false, nil
		}
		last := string(resp.Kvs[len(resp.Kvs)-1].Key)
		if reverse {
			hi = last
		} else {
			lo = last + "\x00"
		}
		limit = min(limit*4, scanPageMax)
		return resp.Kvs, true, nil
	}, nil
}

// pagesDown reads [lo, hi) of a bucket whose keys are numbered by its
// sequence, now at top (bookings, events), from the newest key down.
//
// etcd 3.4 answers a descending range by reading every key of the range
// and sorting them, whatever its limit: a page of the 64 newest of 10,000
// keys took 11 ms, and reading the whole bucket every monitor pass and
// every app refresh (the bookings since a time, the newest event) loaded
// etcd more as the ledger grew. So the pages here are ascending ranges of
// key windows, [number top-63, hi) first, then ever wider windows below,
// then all below number 1, each sorted here: a window of 64 keys reads in
// 0.6 ms however many lie outside it. The windows tile the range, so a
// key that is not a number (a damaged one) is still read in its place.
func (t *tx) pagesDown(prefix, lo, hi string, top uint64) func() ([]*mvccpb.KeyValue, bool, error) {
	size, next := uint64(scanPage), top+1 // the next window ends below number next
	return func() ([]*mvccpb.KeyValue, bool, error) {
		for {
			wlo := lo // the window [wlo, hi); the last takes all below
			if next > size+1 {
				next -= size
				wlo = max(lo, prefix+string(storage.IDKey(next)))
			} else {
				next = 0
			}
			last := wlo == lo
			if wlo >= hi { // above where the scan begins: nothing to read
				if last {
					return nil, false, nil
				}
				continue
			}
			resp, err := t.rangeAt(wlo, clientv3.WithRange(hi))
			if err != nil {
				return nil, false, err
			}
			hi = wlo
			kvs := resp.Kvs
			slices.Reverse(kvs)
			// Windows widen, the more where they come back sparse (numbers
			// of keys deleted): a long scan takes few round trips.
			if uint64(len(kvs)) >= size/2 {
				size = min(size*4, scanPageMax)
			} else {
				size = min(size*4, 1<<62)
			}
			if len(kvs) > 0 || last {
				return kvs, !last, nil
			}
		}
	}
}

// commit writes the buffered changes and a new version in one etcd Txn, if
// no other transaction committed since this one's revision. When etcd fails
// to answer, it finds out whether the Txn was applied.
func (t *tx) commit() (outcome, error) {
	s := t.s
	if t.rev == 0 {
		if _, err := t.rangeAt(s.versionKey()); err != nil {
			return notWritten, err
		}
	}
	token := newToken()
	ops := make([]clientv3.Op, 0, len(t.writes)+1)
	for _, k := range slices.Sorted(maps.Keys(t.writes)) {
		if w := t.writes[k]; w.deleted {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(w.value)))
		}
	}
	ops = append(ops, clientv3.OpPut(s.versionKey(), token))
	cmps := append(s.turnCompares(t.turn), clientv3.Compare(clientv3.ModRevision(s.versionKey()), "<", t.rev+1))
	if t.turn != nil {
		// The next in line holds the turn the moment this commits.
		ops = append(ops, clientv3.OpDelete(t.turn.key))
	}
	resp, err := t.kv.Txn(t.ctx).If(cmps...).Then(ops...).Commit()
	switch {
	case err == nil && resp.Succeeded:
		s.seen(resp.Header.Revision)
		return committed, nil
	case err == nil:
		return conflicted, nil
	case errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge):
		return refused, s.unavailable(t.ctx, "commit", err)
	}
	// The Txn may or may not have been applied before etcd failed: ask,
	// in the time the operation kept for it.
	t.failedOn(err)
	err = s.unavailable(t.ctx, "commit", err)
	applied, rerr := s.applied(t.op, token, t.rev)
	switch {
	case rerr != nil:
		return unknown, err
	case applied:
		return committed, nil
	default:
		return notWritten, err
	}
}

// applied finds out whether the commit that wrote token to the version key
// happened. A commit etcd failed to answer may still be on its way, so it
// first fences it off: it rewrites the version key, after which the commit
// in doubt can no longer apply (it wants the key unchanged since rev). Then
// the key's history since rev says whether it did before.
func (s *Store) applied(ctx context.Context, token string, rev int64) (bool, error) {
	var fence *clientv3.PutResponse
	for attempt := 1; ; attempt++ { // past a member that just died, say
		var err error
		if fence, err = s.cli.Put(ctx, s.versionKey(), "fence-"+token); err == nil {
			break
		}
		if !transient(err) || !pause(ctx, attempt) {
			return false, err
		}
	}
	last := fence.Header.Revision
	for attempt := 1; ; attempt++ {
		for wr := range s.cli.Watch(clientv3.WithRequireLeader(ctx), s.versionKey(), clientv3.WithRev(rev+1)) {
			if err := wr.Err(); err != nil {
				break
			}
			for _, ev := range wr.Events {
				if string(ev.Kv.Value) == token {
					s.seen(ev.Kv.ModRevision)
					return true, nil
				}
				if ev.Kv.ModRevision >= last {
					return false, nil
				}
			}
		}
		if !pause(ctx, attempt) {
			return false, ctx.Err()
		}
	}
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
