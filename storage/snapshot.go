package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
)

// Snapshot is a whole ledger's records as one transaction read them, to
// read elsewhere: a guarded ledger's keeper sends it to members who may
// not reach the ledger themselves (etcd's key is root's), and they read it
// with View as they would the ledger.
type Snapshot struct {
	// Buckets holds each bucket's keys and values, in key order.
	Buckets map[string][]Pair
	// Sequences are the buckets' last handed-out numbers, where the engine
	// says them (doctor checks they are ahead of every id).
	Sequences map[string]uint64
}

// Pair is one key and its value.
type Pair struct{ K, V []byte }

// TakeSnapshot reads every bucket tx holds.
func TakeSnapshot(tx *Tx) (*Snapshot, error) {
	s := &Snapshot{Buckets: map[string][]Pair{}, Sequences: map[string]uint64{}}
	if tx.raw == nil {
		return s, nil
	}
	seq, hasSeq := tx.raw.(Sequencer)
	for _, b := range knownBuckets {
		var pairs []Pair
		err := tx.raw.Scan(b, nil, false, func(k, v []byte) (bool, error) {
			pairs = append(pairs, Pair{K: bytes.Clone(k), V: bytes.Clone(v)})
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		if len(pairs) > 0 {
			s.Buckets[string(b)] = pairs
		}
		if hasSeq {
			n, err := seq.Sequence(b)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				s.Sequences[string(b)] = n
			}
		}
	}
	return s, nil
}

// Encode is the snapshot as bytes, and a version that names its contents:
// equal versions, equal records. Each bucket in name order, then each
// sequence, as uvarint-prefixed byte strings: a ledger of megabytes
// travels and decodes in milliseconds (JSON's base64 took ten times as
// long).
func (s *Snapshot) Encode() (data []byte, version string, err error) {
	put := func(b []byte) {
		data = binary.AppendUvarint(data, uint64(len(b)))
		data = append(data, b...)
	}
	names := slices.Sorted(maps.Keys(s.Buckets))
	data = binary.AppendUvarint(data, uint64(len(names)))
	for _, name := range names {
		put([]byte(name))
		data = binary.AppendUvarint(data, uint64(len(s.Buckets[name])))
		for _, p := range s.Buckets[name] {
			put(p.K)
			put(p.V)
		}
	}
	seqs := slices.Sorted(maps.Keys(s.Sequences))
	data = binary.AppendUvarint(data, uint64(len(seqs)))
	for _, name := range seqs {
		put([]byte(name))
		data = binary.AppendUvarint(data, s.Sequences[name])
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:16]), nil
}

// errSnapshot says bytes are not a snapshot Encode wrote.
var errSnapshot = fmt.Errorf("%w: a snapshot that does not decode", ErrDamaged)

// snapshotReader reads what Encode wrote, remembering the first error.
type snapshotReader struct {
	data []byte
	err  error
}

func (r *snapshotReader) uvarint() uint64 {
	n, size := binary.Uvarint(r.data)
	if size <= 0 {
		r.err, r.data = errSnapshot, nil
		return 0
	}
	r.data = r.data[size:]
	return n
}

func (r *snapshotReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.data)) {
		r.err, r.data = errSnapshot, nil
		return nil
	}
	b := r.data[:n:n]
	r.data = r.data[n:]
	return b
}

// DecodeSnapshot reads what Encode wrote, checking each bucket is in key
// order (View's scans rely on it). The snapshot keeps data's bytes.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	r := &snapshotReader{data: data}
	s := &Snapshot{Buckets: map[string][]Pair{}, Sequences: map[string]uint64{}}
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		name := string(r.bytes())
		count := r.uvarint()
		pairs := make([]Pair, 0, min(count, uint64(len(r.data)/2)))
		for ; count > 0 && r.err == nil; count-- {
			pairs = append(pairs, Pair{K: r.bytes(), V: r.bytes()})
		}
		if !slices.IsSortedFunc(pairs, func(a, b Pair) int { return bytes.Compare(a.K, b.K) }) {
			return nil, fmt.Errorf("%w: its bucket %q is out of order", errSnapshot, name)
		}
		s.Buckets[name] = pairs
	}
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		s.Sequences[string(r.bytes())] = r.uvarint()
	}
	if r.err == nil && len(r.data) > 0 {
		r.err = errSnapshot
	}
	return s, r.err
}

// View runs fn in a read-only transaction over the snapshot.
func (s *Snapshot) View(fn func(*Tx) error) error {
	tx, err := NewTx(snapshotTx{s})
	if err != nil {
		return err
	}
	return fn(tx)
}

// snapshotTx is a read-only RawTx over a snapshot.
type snapshotTx struct{ s *Snapshot }

func (t snapshotTx) find(bucket, key []byte) (int, bool) {
	return slices.BinarySearchFunc(t.s.Buckets[string(bucket)], key, func(p Pair, k []byte) int { return bytes.Compare(p.K, k) })
}

func (t snapshotTx) Get(bucket, key []byte) ([]byte, error) {
	if i, ok := t.find(bucket, key); ok {
		return t.s.Buckets[string(bucket)][i].V, nil
	}
	return nil, nil
}

func (t snapshotTx) Scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	pairs := t.s.Buckets[string(bucket)]
	i, step := 0, 1
	if reverse {
		i, step = len(pairs)-1, -1
	}
	if from != nil {
		at, found := t.find(bucket, from)
		i = at
		if reverse && !found {
			i = at - 1 // the last key <= from
		}
	}
	for ; i >= 0 && i < len(pairs); i += step {
		more, err := fn(pairs[i].K, pairs[i].V)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func (snapshotTx) Put(_, _, _ []byte) error { return fmt.Errorf("%w: a snapshot", ErrReadOnly) }
func (snapshotTx) Delete(_, _ []byte) error { return fmt.Errorf("%w: a snapshot", ErrReadOnly) }
func (snapshotTx) NextSequence([]byte) (uint64, error) {
	return 0, fmt.Errorf("%w: a snapshot", ErrReadOnly)
}
func (snapshotTx) Writable() bool { return false }

// Sequence is the bucket's last handed-out number (see Sequencer).
func (t snapshotTx) Sequence(bucket []byte) (uint64, error) {
	return t.s.Sequences[string(bucket)], nil
}
