package storage

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// ErrNotFound means no record has that id.
var ErrNotFound = errors.New("not found")

// Tx is one open transaction on the ledger, over any engine. A Tx from
// View over a ledger that does not exist yet reads as empty.
type Tx struct {
	raw RawTx
	// written is the keys the transaction has written (see Written).
	written map[string]struct{}
}

// WriteBudget is the most keys one transaction should write: etcd takes
// 128 operations in a transaction by default, and a commit adds some of
// its own (the version key, a turn). Work that may grow with the ledger
// (the monitor's pass, placing the waiting line) stops at it and leaves
// the rest to a transaction of its own.
const WriteBudget = 100

// Written is how many keys the transaction has written so far (a key
// written twice counts once; so does a bucket's sequence): what its
// commit will ask of the engine.
func (tx *Tx) Written() int { return len(tx.written) }

// counted is the engine's transaction, counting what it writes.
type counted struct {
	RawTx
	tx *Tx
}

func (c counted) Put(bucket, k, v []byte) error {
	c.tx.wrote(bucket, k)
	return c.RawTx.Put(bucket, k, v)
}

func (c counted) Delete(bucket, k []byte) error {
	c.tx.wrote(bucket, k)
	return c.RawTx.Delete(bucket, k)
}

func (c counted) NextSequence(bucket []byte) (uint64, error) {
	c.tx.wrote(nil, bucket)
	return c.RawTx.NextSequence(bucket)
}

func (tx *Tx) wrote(bucket, k []byte) {
	if tx.written == nil {
		tx.written = map[string]struct{}{}
	}
	tx.written[string(bucket)+"/"+string(k)] = struct{}{}
}

// Raw is the engine's transaction under tx (nil for a ledger not yet
// written), for engine conformance tests and for copying a ledger whole.
func (tx *Tx) Raw() RawTx { return tx.raw }

func IDKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// scan visits a bucket; an empty ledger has nothing to visit.
func (tx *Tx) scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if tx.raw == nil {
		return nil
	}
	return tx.raw.Scan(bucket, from, reverse, fn)
}

// scanTo is scan, ascending, of the keys below to (nil: all).
func (tx *Tx) scanTo(bucket, from, to []byte, fn func(k, v []byte) (bool, error)) error {
	if tx.raw == nil {
		return nil
	}
	return ScanTo(tx.raw, bucket, from, to, fn)
}

func (tx *Tx) get(bucket, k []byte) ([]byte, error) {
	if tx.raw == nil {
		return nil, nil
	}
	return tx.raw.Get(bucket, k)
}

// writable returns the engine's transaction when it may write, counting
// its writes.
func (tx *Tx) writable(what string) (RawTx, error) {
	if tx.raw == nil || !tx.raw.Writable() {
		return nil, fmt.Errorf("%s: read-only transaction", what)
	}
	return counted{RawTx: tx.raw, tx: tx}, nil
}

// each decodes every record of a bucket in key order.
func each[T any](tx *Tx, bucket []byte, fn func(k []byte, rec T) error) error {
	return eachFrom(tx, bucket, nil, fn)
}

// eachFrom is each from the first key >= from.
func eachFrom[T any](tx *Tx, bucket, from []byte, fn func(k []byte, rec T) error) error {
	return tx.scan(bucket, from, false, func(k, v []byte) (bool, error) {
		var rec T
		if err := Decode(v, &rec); err != nil {
			return false, fmt.Errorf("%s %x: %w", bucket, k, err)
		}
		return true, fn(k, rec)
	})
}

// Partitions returns every partition, oldest first.
func (tx *Tx) Partitions() ([]domain.Partition, error) {
	var out []domain.Partition
	err := each(tx, BucketPartitions, func(_ []byte, p domain.Partition) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// PartitionsFrom returns the partitions numbered id and up, oldest first.
func (tx *Tx) PartitionsFrom(id uint64) ([]domain.Partition, error) {
	var out []domain.Partition
	err := eachFrom(tx, BucketPartitions, IDKey(id), func(_ []byte, p domain.Partition) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// Partition returns the partition with that id, or ErrNotFound.
func (tx *Tx) Partition(id uint64) (domain.Partition, error) {
	var p domain.Partition
	v, err := tx.get(BucketPartitions, IDKey(id))
	if err != nil {
		return p, err
	}
	if v == nil {
		return p, ErrNotFound
	}
	if err := Decode(v, &p); err != nil {
		return p, fmt.Errorf("partition %d: %w", id, err)
	}
	return p, nil
}

// PutPartition stores p, giving it the next id when it has none yet. Ids are
// never reused.
func (tx *Tx) PutPartition(p *domain.Partition) error {
	raw, err := tx.writable("put partition")
	if err != nil {
		return err
	}
	if p.ID == 0 {
		id, err := raw.NextSequence(BucketPartitions)
		if err != nil {
			return err
		}
		p.ID = id
	}
	p.V = SchemaVersion
	if err := PutRecord(raw, BucketPartitions, IDKey(p.ID), p); err != nil {
		return err
	}
	if p.State == domain.Live {
		return raw.Put(BucketLive, IDKey(p.ID), []byte{})
	}
	return raw.Delete(BucketLive, IDKey(p.ID))
}

// getMany reads keys of bucket in as few reads as the engine allows (one
// per key, or a ManyGetter's batches); nil for each key with no value.
func (tx *Tx) getMany(bucket []byte, keys [][]byte) ([][]byte, error) {
	if many, ok := tx.raw.(ManyGetter); ok {
		return many.GetMany(bucket, keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := tx.get(bucket, k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func idKeys(ids []uint64) [][]byte {
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = IDKey(id)
	}
	return keys
}

// PartitionsByID reads the partitions with those ids, in that order, in as
// few reads as the engine allows; a missing one is an error.
func (tx *Tx) PartitionsByID(ids []uint64) ([]domain.Partition, error) {
	vals, err := tx.getMany(BucketPartitions, idKeys(ids))
	if err != nil {
		return nil, err
	}
	out := make([]domain.Partition, 0, len(ids))
	for i, v := range vals {
		if v == nil {
			return nil, fmt.Errorf("partition %d: %w", ids[i], ErrNotFound)
		}
		p, err := partitionMemo.decode(ids[i], v)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", ids[i], err)
		}
		out = append(out, p)
	}
	return out, nil
}

// liveIDs lists the ids in the live index.
func (tx *Tx) liveIDs() ([]uint64, error) {
	var ids []uint64
	err := tx.scan(BucketLive, nil, false, func(k, _ []byte) (bool, error) {
		if len(k) != 8 {
			return false, fmt.Errorf("%w: live index key %x", ErrDamaged, k)
		}
		ids = append(ids, binary.BigEndian.Uint64(k))
		return true, nil
	})
	return ids, err
}

// LivePartitions returns the partitions stored as live, oldest first. Some
// may be past their deadline: check LiveAt.
func (tx *Tx) LivePartitions() ([]domain.Partition, error) {
	ids, err := tx.liveIDs()
	if err != nil {
		return nil, err
	}
	out, err := tx.PartitionsByID(ids)
	if err != nil {
		return nil, fmt.Errorf("live index: %w", err)
	}
	return out, nil
}

// PartitionsSince returns the partitions created at or after since, and
// every partition still stored as live, oldest first.
func (tx *Tx) PartitionsSince(since time.Time) ([]domain.Partition, error) {
	var recent []domain.Partition
	err := tx.scan(BucketPartitions, nil, true, func(k, v []byte) (bool, error) {
		var p domain.Partition
		var err error
		if len(k) == 8 {
			p, err = partitionMemo.decode(binary.BigEndian.Uint64(k), v)
		} else { // a damaged key: decoded, not kept
			err = Decode(v, &p)
		}
		if err != nil {
			return false, fmt.Errorf("partition %x: %w", k, err)
		}
		if p.Created.Before(since) {
			return false, nil
		}
		recent = append(recent, p)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(recent)
	seen := make(map[uint64]bool, len(recent))
	for _, p := range recent {
		seen[p.ID] = true
	}
	// Older bookings still stored as live: read only those not read above.
	ids, err := tx.liveIDs()
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return seen[id] })
	older, err := tx.PartitionsByID(ids)
	if err != nil {
		return nil, fmt.Errorf("live index: %w", err)
	}
	recent = append(recent, older...)
	slices.SortFunc(recent, func(a, b domain.Partition) int { return cmp.Compare(a.ID, b.ID) })
	return recent, nil
}

// Policy returns the stored policy; ok is false when the admin set none.
func (tx *Tx) Policy() (p domain.Policy, ok bool, err error) {
	ok, err = tx.getMeta(KeyPolicy, &p)
	return p, ok, err
}

// PutPolicy stores the policy.
func (tx *Tx) PutPolicy(p domain.Policy) error { return tx.putMeta(KeyPolicy, p) }

func (tx *Tx) getMeta(k []byte, into any) (bool, error) {
	v, err := tx.get(BucketMeta, k)
	if err != nil || v == nil {
		return false, err
	}
	if err := Decode(v, into); err != nil {
		return false, fmt.Errorf("%s: %w", k, err)
	}
	return true, nil
}

func (tx *Tx) putMeta(k []byte, v any) error {
	raw, err := tx.writable("put " + string(k))
	if err != nil {
		return err
	}
	return PutRecord(raw, BucketMeta, k, v)
}

func PutRecord(raw RawTx, bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return raw.Put(bucket, k, data)
}

// decode reads one stored record; a record that doesn't decode is damage.
// A record stored by an older chronos gets the fields it lacks.
func Decode(data []byte, into any) error {
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if d, ok := into.(interface{ FillDefaults() }); ok {
		d.FillDefaults()
	}
	return nil
}

// deleteWhere deletes the keys of bucket that drop picks, scanning in key
// order from the first key >= from (nil: the first), below to (nil: to the
// end), until it says no more or most are picked; keys are collected
// first, since a scan may not delete as it goes.
func deleteWhere(tx *Tx, raw RawTx, bucket, from, to []byte, most int, drop func(k, v []byte) (del, more bool)) error {
	var old [][]byte
	err := tx.scanTo(bucket, from, to, func(k, v []byte) (bool, error) {
		del, more := drop(k, v)
		if del {
			old = append(old, append([]byte(nil), k...))
		}
		return more && len(old) < most, nil
	})
	for _, k := range old {
		if err == nil {
			err = raw.Delete(bucket, k)
		}
	}
	return err
}
