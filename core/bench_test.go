package core

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// BenchmarkLedgerOps measures create and release through the public API —
// each opens the ledger, runs one durable transaction and closes it — next
// to the floor they stand on: a bare bbolt open, one small durable update
// and close on a file of the same size, measured in the same loop.
// Reported: medians in ms and each as a ratio to the bare update.
func BenchmarkLedgerOps(b *testing.B) {
	dir := b.TempDir()
	c := clientAt(filepath.Join(dir, "chronos.db"), nil, coretest.Alice)
	barePath := filepath.Join(dir, "bare.db")
	// A few live bookings in the background, as on a busy machine.
	for range 20 {
		if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	// GPU readings stored, as where monitors run: create reads its GPU's.
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var rs []domain.DeviceReading
		for d := range 2 {
			r := domain.DeviceReading{Time: time.Now(), Backend: coretest.TestBackend, Index: d, UUID: fmt.Sprintf("GPU-%d", d),
				MemoryTotal: coretest.TestGPUMemory, MemoryUsed: coretest.TestGPUMemory / 2}
			for h := range admission.ReadingHolders {
				r.Holders = append(r.Holders, domain.Holder{User: "user" + strconv.Itoa(h), UID: 2000 + h, Bytes: 4 << 30, PIDs: []int{100000 + h, 100100 + h, 100200 + h}})
			}
			rs = append(rs, r)
		}
		return tx.PutDeviceReadings(rs)
	})
	if err != nil {
		b.Fatal(err)
	}
	bare := bareUpdate(b, barePath)
	b.ResetTimer()
	bareT, createT, releaseT := timeCreateRelease(b, c, bare)
	b.StopTimer()
	mb, mc, mr := coretest.Median(bareT), coretest.Median(createT), coretest.Median(releaseT)
	b.ReportMetric(coretest.Ms(mb), "bare-ms")
	b.ReportMetric(coretest.Ms(mc), "create-ms")
	b.ReportMetric(coretest.Ms(mr), "release-ms")
	b.ReportMetric(float64(mc)/float64(mb), "create/bare")
	b.ReportMetric(float64(mr)/float64(mb), "release/bare")
	b.ReportMetric(coretest.Ms(coretest.Percentile(createT, 0.99)), "create-p99-ms")
}

// bareUpdate is the floor a durable ledger write stands on: a bare bbolt
// open, one small durable update and close of the file at path.
func bareUpdate(b *testing.B, path string) func() {
	value := make([]byte, 300) // about the size of a stored booking
	return func() {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 3 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			seq, _ := bk.NextSequence()
			k := make([]byte, 8)
			binary.BigEndian.PutUint64(k, seq)
			return bk.Put(k, value)
		})
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// timeCreateRelease times, b.N times in one loop, the baseline bare, then a
// create of 1% of GPU 1 and its release through c.
func timeCreateRelease(b *testing.B, c *Client, bare func()) (bareT, createT, releaseT []time.Duration) {
	for range b.N {
		t0 := time.Now()
		bare()
		t1 := time.Now()
		p, err := c.Create(Request{Device: 1, Memory: human.Fraction(0.01), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		bareT = append(bareT, t1.Sub(t0))
		createT = append(createT, t2.Sub(t1))
		releaseT = append(releaseT, t3.Sub(t2))
	}
	return bareT, createT, releaseT
}

// BenchmarkList reads 1,000 live bookings, as `chronos list` does.
func BenchmarkList(b *testing.B) {
	c := clientAt(filepath.Join(b.TempDir(), "chronos.db"), nil, coretest.Alice)
	for i := range 1000 {
		if _, err := c.Create(Request{Device: i % 2, Memory: human.Bytes(1 << 20), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		parts, err := c.List(false)
		if err != nil || len(parts) != 1000 {
			b.Fatal(err, len(parts))
		}
	}
}
