package bolt

// bbolt as a storage engine: its transaction as a RawTx.

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"
)

// boltTx is bbolt's transaction as a RawTx: a bucket per name, created on
// first write.
type boltTx struct{ btx *bbolt.Tx }

func (t boltTx) Get(bucket, k []byte) ([]byte, error) {
	if b := t.btx.Bucket(bucket); b != nil {
		return b.Get(k), nil
	}
	return nil, nil
}

func (t boltTx) writeBucket(name []byte) (*bbolt.Bucket, error) {
	if b := t.btx.Bucket(name); b != nil {
		return b, nil
	}
	b, err := t.btx.CreateBucket(name)
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", name, err)
	}
	return b, nil
}

func (t boltTx) Put(bucket, k, v []byte) error {
	b, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	return b.Put(k, v)
}

func (t boltTx) Delete(bucket, k []byte) error {
	if b := t.btx.Bucket(bucket); b != nil {
		return b.Delete(k)
	}
	return nil
}

func (t boltTx) Scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	b := t.btx.Bucket(bucket)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	var k, v []byte
	switch {
	case !reverse && from == nil:
		k, v = c.First()
	case !reverse:
		k, v = c.Seek(from)
	case from == nil:
		k, v = c.Last()
	default:
		// The last key <= from: Seek finds the first key >= from.
		if k, v = c.Seek(from); k == nil {
			k, v = c.Last()
		} else if !bytes.Equal(k, from) {
			k, v = c.Prev()
		}
	}
	for ; k != nil; k, v = step(c, reverse) {
		if v == nil && b.Bucket(k) != nil {
			continue // a nested bucket is no record
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func step(c *bbolt.Cursor, reverse bool) ([]byte, []byte) {
	if reverse {
		return c.Prev()
	}
	return c.Next()
}

func (t boltTx) NextSequence(bucket []byte) (uint64, error) {
	b, err := t.writeBucket(bucket)
	if err != nil {
		return 0, err
	}
	return b.NextSequence()
}

// Sequence is the bucket's last handed-out number (see Sequencer).
func (t boltTx) Sequence(bucket []byte) (uint64, error) {
	if b := t.btx.Bucket(bucket); b != nil {
		return b.Sequence(), nil
	}
	return 0, nil
}

func (t boltTx) Writable() bool { return t.btx.Writable() }

func bucketNames(btx *bbolt.Tx) []string {
	var names []string
	_ = btx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		names = append(names, string(name))
		return nil
	})
	return names
}
