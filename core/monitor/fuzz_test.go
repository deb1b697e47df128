package monitor

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// FuzzStoredPartition stores arbitrary bytes as a booking in a real ledger
// (as a damaged or hand-edited file would hold) and reads it through every
// path that reads bookings: each returns an error or a value, never panics.
func FuzzStoredPartition(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":1,"device":0,"share_ppm":500000,"bytes":1,"uid":0,"user":"root","created":"2026-11-29T12:00:00Z","expires":"2026-11-29T13:00:00Z","state":"live"}`), true)
	f.Add([]byte(`{"v":1,"id":1,"device":-5,"share_ppm":-1,"state":"live","expires":"9999-12-31T23:59:59Z"}`), true)
	f.Add([]byte(`{"id":1,"device":99999999999,"share_ppm":1e30}`), false)
	f.Add([]byte(`not json`), true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, record []byte, indexed bool) {
		path := filepath.Join(t.TempDir(), "chronos.db")
		clock := coretest.NewFakeClock()
		c := servicetest.ClientAt(path, clock, coretest.Alice)
		if _, err := c.Create(core.Request{Device: 1, Memory: human.Fraction(0.25), Duration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			k := []byte{0, 0, 0, 0, 0, 0, 0, 2}
			if err := tx.Bucket([]byte("partitions")).Put(k, record); err != nil {
				return err
			}
			if indexed {
				return tx.Bucket([]byte("live")).Put(k, nil)
			}
			return nil
		})
		db.Close()
		if err != nil {
			t.Skip(err) // bbolt refuses some keys/values (too large)
		}
		_, _ = c.List(false)
		_, _ = c.List(true)
		_, _ = c.Get(2)
		_, _ = c.Available(-1)
		_, _ = c.Recent(0)
		_, _ = c.Release(2)
		_, _ = c.Extend(2, time.Minute)
		_, _ = c.Create(core.Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
		sim := gpu.NewSim(gpu.SimOptions{Count: 2, Now: clock.Now})
		m := New(c, Options{Backend: sim, Signaller: noSignals{}})
		_, _ = m.Tick()
		clock.Advance(2 * time.Hour)
		_, _ = m.Tick()
		if _, err := c.Stats(sim, procfs.MPS{}); err != nil {
			_ = err.Error()
		}
	})
}

// noSignals is a Signaller that signals nothing.
type noSignals struct{}

func (noSignals) Signal(int, uint64, syscall.Signal) error { return nil }
