package report

import (
	"cmp"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
)

// BenchmarkUsage is `chronos usage` on a ledger with 2,000 bookings over the
// last 60 days, from 20 users (alice among them), each with its usage, its held interval, a
// signal and its ending in the audit trail, and 20 live bookings.
func BenchmarkUsage(b *testing.B) {
	clock := coretest.NewFakeClock()
	c := servicetest.ClientAt(filepath.Join(b.TempDir(), "chronos.db"), clock, coretest.Alice)
	now := clock.Now()
	if err := c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
		for i := range 2000 {
			start := now.Add(-time.Duration(i) * 43 * time.Minute) // 2,000 of them span 60 days
			uid := 1001 + i%20
			p := domain.Partition{Device: i % 2, SharePPM: 250_000, UID: uid, User: "user" + strconv.Itoa(uid),
				Created: start.Add(-2 * time.Hour), Expires: start, Ended: start, State: domain.Expired}
			err := tx.PutPartition(&p)
			err = cmp.Or(err, tx.PutBookingUsage(domain.BookingUsage{Partition: p.ID, Through: p.Ended, GPUTime: time.Hour, Idle: 30 * time.Minute}))
			err = cmp.Or(err, tx.AddHeld(uid, domain.Held{Partition: p.ID, Start: p.Created, End: p.Ended, SharePPM: p.SharePPM}))
			err = cmp.Or(err, tx.PutUserUsage(domain.UserUsage{UID: uid, User: p.User, GPUSeconds: 3600, At: start}))
			err = cmp.Or(err, tx.AddEvent(domain.Event{Time: start, Kind: domain.EventSignalled, Partition: p.ID}))
			err = cmp.Or(err, tx.AddEvent(domain.Event{Time: start, Kind: domain.EventExpired, Partition: p.ID}))
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for range 20 {
		if _, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		users, err := Usage(c)
		if err != nil || len(users) != 20 {
			b.Fatal(err, len(users))
		}
	}
}
