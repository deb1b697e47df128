package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// FuzzStoredRecordsOnEtcd is storage's FuzzStoredRecords on etcd: arbitrary
// keys and values put through the engine's RawTx into each bucket of a
// ledger on a real etcd, as a damaged or hand-edited ledger would hold
// them, then read back through every records method. Each returns a value
// or an error, never panics; every error says the ledger is damaged (or
// newer, or that a record is not there), never an etcd failure.
func FuzzStoredRecordsOnEtcd(f *testing.F) {
	buckets := storage.Buckets()
	in := func(name string) uint8 { // a seed's bucket, by name
		i := slices.IndexFunc(buckets, func(b []byte) bool { return string(b) == name })
		if i < 0 {
			f.Fatalf("no bucket %q", name)
		}
		return uint8(i)
	}
	f.Add(in("partitions"), []byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"v":1,"id":9,"share_ppm":100,"state":"live","expires":"2999-01-01T00:00:00Z"}`))
	f.Add(in("partitions"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte(`[`))
	f.Add(in("partitions"), []byte{}, []byte{})
	f.Add(in("partitions"), []byte{9}, []byte(`{"v":1,"id":9,"share_ppm":100,"state":"live","expires":"2999-01-01T00:00:00Z"}`)) // a key not an id's 8 bytes
	f.Add(in("events"), []byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"seq":9,"kind":"created","partition":1}`))
	f.Add(in("events"), []byte{1}, []byte("x"))
	f.Add(in("claims"), []byte("term/1/2"), []byte(`{"by":"x","at":"bad time"}`))
	f.Add(in("meta"), []byte("policy"), []byte(`{"grace":-1}`))
	f.Add(in("meta"), []byte("inventory"), []byte(`{"devices":[{"index":-1}]}`))
	f.Add(in("meta"), []byte("reading/0"), []byte(`{"index":"x"}`))
	f.Add(in("meta"), []byte("schema"), []byte{9})
	f.Add(in("meta"), []byte("schema"), []byte{})
	f.Add(in("live"), []byte{0, 0, 0, 0, 0, 0, 0, 7}, []byte("x"))
	f.Add(in("booking-usage"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte(`{"gpu_seconds":"x"}`))
	f.Add(in("samples"), []byte("\xff/"), []byte(`null`))
	f.Add(in("unbooked"), []byte{0}, []byte(`{`))
	endpoints := etcdtest.Shared(f).Endpoints()
	f.Fuzz(func(t *testing.T, where uint8, k, v []byte) {
		s, err := Open(Config{Endpoints: endpoints, Prefix: fuzzPrefix()})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if _, err := addBooking(s); err != nil {
			t.Fatal(err)
		}
		b := buckets[int(where)%len(buckets)]
		if err := s.Update(context.Background(), func(tx *storage.Tx) error { return tx.Raw().Put(b, k, v) }); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, storage.ErrDamaged) && !errors.Is(err, storage.ErrNewerSchema) && !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s: %v: not an error about the record", what, err)
			}
		}
		check("view", s.View(context.Background(), func(tx *storage.Tx) error {
			for what, read := range map[string]func() error{
				"partitions":       func() error { _, err := tx.Partitions(); return err },
				"partition 1":      func() error { _, err := tx.Partition(1); return err },
				"partition 9":      func() error { _, err := tx.Partition(9); return err },
				"partitions by id": func() error { _, err := tx.PartitionsByID([]uint64{1, 9}); return err },
				"live":             func() error { _, err := tx.LivePartitions(); return err },
				"since":            func() error { _, err := tx.PartitionsSince(time.Time{}); return err },
				"events":           func() error { _, err := tx.Events(0, 0); return err },
				"last event":       func() error { _ = tx.LastEvent(); return nil },
				"inventory":        func() error { _, _, err := tx.Inventory(); return err },
				"inventories":      func() error { _, err := tx.HostInventories(); return err },
				"readings":         func() error { _, err := tx.DeviceReadings(); return err },
				"policy":           func() error { _, _, err := tx.Policy(); return err },
				"claims":           func() error { _, err := tx.Claims(); return err },
				"usages":           func() error { _, err := tx.BookingUsages(); return err },
				"usage of":         func() error { _, err := tx.UsageOf([]uint64{1, 9}); return err },
				"gpu minutes":      func() error { _, err := tx.GPUMinutes(time.Time{}, time.Now(), ""); return err },
				"unbooked":         func() error { _, err := tx.Unbooked(time.Time{}); return err },
			} {
				check(what, read())
			}
			return nil
		}))
		check("drop claims", s.Update(context.Background(), func(tx *storage.Tx) error { return tx.DropClaims(time.Now()) }))
	})
}

// fuzzPrefix keeps each run's ledger apart on the shared server.
func fuzzPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "/fuzz-" + hex.EncodeToString(b)
}
