package bolt

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// BenchmarkWriterChecks measures what every write now pays before bbolt
// opens the file — opened without following a link or blocking, fstat,
// one name, (for root) root's own, the meta pages and the free page list
// read and checked — next to a plain open, fstat and close of the same
// file, measured in the same loop. Reported: medians in µs and the extra.
func BenchmarkWriterChecks(b *testing.B) {
	l := New(filepath.Join(b.TempDir(), "chronos.db"))
	l.BackupEvery = -1
	for range 200 {
		addOneB(b, l)
	}
	var plain, checked []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		f, err := os.OpenFile(l.Path, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Stat(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		t1 := time.Now()
		f, err = l.openFile(false)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.checkForWrite(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		t2 := time.Now()
		plain, checked = append(plain, t1.Sub(t0)), append(checked, t2.Sub(t1))
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	p, c := med(plain), med(checked)
	b.ReportMetric(float64(p)/1e3, "plain-µs")
	b.ReportMetric(float64(c)/1e3, "checked-µs")
	b.ReportMetric(float64(c-p)/1e3, "extra-µs")
}

func addOneB(b *testing.B, l *Ledger) {
	b.Helper()
	p := domain.Partition{Device: 0, SharePPM: 1000, State: domain.Live, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	if err := l.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return tx.AddEvent(domain.Event{Kind: domain.EventCreated, Partition: p.ID})
	}); err != nil {
		b.Fatal(err)
	}
}
