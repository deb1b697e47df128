// Package storage is the ledger as every engine keeps it: the Store an
// engine implements (bolt, a file; etcd, a cluster), the typed transaction
// and record layout written once above the engines' raw transactions, and
// the errors they share. It opens nothing itself: the command layer picks
// an engine.
package storage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Store is the ledger as the rest of chronos sees it: serializable
// transactions over typed records, and notice when another process may have
// changed them. One bbolt file (Ledger) and an etcd cluster (storage/etcd)
// implement it; every rule in core — admission, the line, quotas, claims —
// is written once above it.
type Store interface {
	// Update runs fn in one read-write transaction. Either every write fn
	// made is committed or none is; fn's error rolls back and is returned.
	// The end of ctx cuts short waiting for the ledger (a lock, a server, a
	// retry), with ctx's error; a transaction that has begun committing
	// may still commit.
	Update(ctx context.Context, fn func(*Tx) error) error
	// View runs fn in one read-only transaction; ctx as for Update.
	View(ctx context.Context, fn func(*Tx) error) error
	// Changes sends whenever another process may have written the ledger,
	// checking at least every poll; the channel closes when ctx ends. Sends
	// never block: a pending notice already says "look again".
	Changes(ctx context.Context, poll time.Duration) <-chan struct{}
	// Version identifies the ledger's contents cheaply (a file's stamp, a
	// store's revision): equal versions mean nothing was written between.
	Version() string
	// String says where the ledger is, for messages.
	String() string
}

// Urgent is a store whose writers wait their turn in order under
// contention (etcd). A writer that must not wait behind the others — a
// monitor recording expiries — goes ahead of them.
type Urgent interface {
	// UpdateUrgent is Update, ahead of every ordinary writer waiting.
	UpdateUrgent(ctx context.Context, fn func(*Tx) error) error
}

// UpdateUrgent runs fn as s's UpdateUrgent where it has one, else as its
// Update: a file's lock has no line to go ahead in.
func UpdateUrgent(ctx context.Context, s Store, fn func(*Tx) error) error {
	if u, ok := s.(Urgent); ok {
		return u.UpdateUrgent(ctx, fn)
	}
	return s.Update(ctx, fn)
}

// Presence is what a store many hosts share offers besides transactions:
// each host's live status, kept only while the host keeps publishing it, so
// that a host that dies fades from the live view within a TTL (its bookings
// stay in the ledger). These writes are not ledger transactions: they wake
// no watcher of Changes and conflict with nothing.
type Presence interface {
	// Publish sets host's status, to lapse ttl after the last Publish.
	// The end of ctx cuts it short.
	Publish(ctx context.Context, host string, status []byte, ttl time.Duration) error
	// Present returns every status that has not lapsed, by host; the end
	// of ctx cuts it short.
	Present(ctx context.Context) (map[string][]byte, error)
	// WatchPresence sends each status as it is published (Status nil: it
	// lapsed). The channel closes when ctx ends.
	WatchPresence(ctx context.Context) <-chan Published
}

// HistoryKeeper is an engine that keeps the ledger's old versions (etcd
// does, until compacted): its reads of a bucket walk every key deleted
// from it since, so a busy ledger's reads slow down until it forgets them.
type HistoryKeeper interface {
	// ForgetHistory lets the engine drop the versions it has kept for
	// longer than keep, by the caller's clock now. It is called again and
	// again (a monitor's every few seconds), and remembers which version
	// was current when.
	ForgetHistory(ctx context.Context, now time.Time, keep time.Duration) error
}

// Published is one host's status as it was published.
type Published struct {
	Host   string
	Status []byte
}

// RawTx is one transaction of a storage engine: named buckets of ordered
// byte keys. Engines implement it; Tx builds every record on it, so the
// records' layout is written once for all engines.
type RawTx interface {
	// Get returns the value at key, nil when there is none. The slice is
	// valid until the transaction ends.
	Get(bucket, key []byte) ([]byte, error)
	// Put stores value at key, creating the bucket when needed.
	Put(bucket, key, value []byte) error
	// Delete removes key; a missing key is no error.
	Delete(bucket, key []byte) error
	// Scan visits the bucket's keys in order until fn says stop: ascending
	// from the first key >= from (nil: the first), or with reverse,
	// descending from the last key <= from (nil: the last). Reads see this
	// transaction's own writes.
	Scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (more bool, err error)) error
	// NextSequence returns the bucket's next number, starting at 1. Numbers
	// are never handed out twice, even when the keys they named are gone.
	NextSequence(bucket []byte) (uint64, error)
	// Writable reports whether this is a read-write transaction.
	Writable() bool
}

// RangeScanner is an engine that scans up to a bound: one whose scan
// otherwise costs what the rest of the bucket holds (etcd 3.4 walks every
// key of a range, whatever its limit).
type RangeScanner interface {
	// ScanTo is Scan, ascending, of the keys below to (nil: all).
	ScanTo(bucket, from, to []byte, fn func(k, v []byte) (more bool, err error)) error
}

// ScanTo visits raw's keys of bucket in [from, to) in order until fn says
// stop; a nil to is the bucket's end.
func ScanTo(raw RawTx, bucket, from, to []byte, fn func(k, v []byte) (more bool, err error)) error {
	if rs, ok := raw.(RangeScanner); ok {
		return rs.ScanTo(bucket, from, to, fn)
	}
	return raw.Scan(bucket, from, false, func(k, v []byte) (bool, error) {
		if to != nil && string(k) >= string(to) {
			return false, nil
		}
		return fn(k, v)
	})
}

// ManyGetter is an engine that reads many keys in one go (a server's, where
// each read is a round trip); records read through it where they read
// many keys at once.
type ManyGetter interface {
	// GetMany returns the values at keys, nil for each that has none.
	GetMany(bucket []byte, keys [][]byte) ([][]byte, error)
}

// SmallBuckets are read by nearly every transaction and stay small: the
// schema, policy and inventories, and the indexes of live bookings and
// waiting requests (a key each, with no value). An engine that pays a
// round trip per read does well to read them whole at a transaction's
// first read.
var SmallBuckets = [][]byte{BucketMeta, BucketLive, BucketWaiting}

// Buckets are every bucket a ledger may hold, for engines' tests.
func Buckets() [][]byte { return slices.Clone(knownBuckets) }

// NewTx wraps an engine's transaction, checking (and on a new ledger,
// writing) the schema version. A nil raw reads as an empty ledger.
func NewTx(raw RawTx) (*Tx, error) {
	tx := &Tx{raw: raw}
	if raw == nil {
		return tx, nil
	}
	v, err := raw.Get(BucketMeta, KeySchema)
	if err != nil {
		return nil, err
	}
	switch {
	case v == nil && raw.Writable():
		if err := raw.Put(BucketMeta, KeySchema, []byte{SchemaVersion}); err != nil {
			return nil, err
		}
	case v == nil:
		// A ledger nobody has written yet reads as empty.
	case len(v) != 1:
		return nil, fmt.Errorf("%w: missing or malformed schema version", ErrDamaged)
	case v[0] > SchemaVersion:
		return nil, fmt.Errorf("%w (schema %d; this chronos reads up to %d): upgrade chronos", ErrNewerSchema, v[0], SchemaVersion)
	}
	return tx, nil
}
