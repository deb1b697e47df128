package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/storage"
)

// FuzzStoredRecords puts arbitrary keys and values into each bucket of a
// real ledger, as a damaged or hand-edited file would hold them, and reads
// them back through every Tx method and the doctor: each returns an error or
// a value, never panics, and a record that does not decode is reported as
// damage.
func FuzzStoredRecords(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"v":1,"id":9,"share_ppm":100,"state":"live","expires":"2999-01-01T00:00:00Z"}`))
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"seq":9,"kind":"created","partition":1}`))
	f.Add(uint8(2), []byte("term/1/2"), []byte(`{"by":"x","at":"bad time"}`))
	f.Add(uint8(3), []byte("policy"), []byte(`{"grace":-1}`))
	f.Add(uint8(3), []byte("inventory"), []byte(`{"devices":[{"index":-1}]}`))
	f.Add(uint8(3), []byte("schema"), []byte{9})
	f.Add(uint8(4), []byte{1}, []byte("x"))
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte(`[`))
	f.Add(uint8(0), []byte{9}, []byte(`{"v":1,"id":9,"share_ppm":100,"state":"live","expires":"2999-01-01T00:00:00Z"}`)) // a key not an id's 8 bytes
	f.Fuzz(func(t *testing.T, where uint8, k, v []byte) {
		l := New(filepath.Join(t.TempDir(), "chronos.db"))
		addOne(t, l)
		buckets := [][]byte{storage.BucketPartitions, storage.BucketEvents, storage.BucketClaims, storage.BucketMeta, storage.BucketLive}
		b := buckets[int(where)%len(buckets)]
		db, err := bbolt.Open(l.Path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(b).Put(k, v) })
		db.Close()
		if err != nil {
			t.Skip(err) // an empty or oversized key: bbolt refuses it
		}
		_ = l.View(context.Background(), func(tx *storage.Tx) error {
			_, _ = tx.Partitions()
			_, _ = tx.Partition(1)
			_, _ = tx.Partition(9)
			_, _ = tx.LivePartitions()
			_, _ = tx.PartitionsSince(time.Time{})
			_, _ = tx.Events(0, 0)
			_ = tx.LastEvent()
			_, _, _ = tx.Inventory()
			_, _, _ = tx.Policy()
			_, _ = tx.Claims()
			return nil
		})
		_ = l.Update(context.Background(), func(tx *storage.Tx) error { return tx.DropClaims(time.Now()) })
		d, err := l.Diagnose()
		if err != nil {
			t.Fatal(err)
		}
		if !d.Healthy && len(d.Problems) == 0 {
			t.Fatal("unhealthy with no problem named")
		}
	})
}
