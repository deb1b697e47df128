package migrate

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// hostFile is a host's ledger file as it was before the lab shared one:
// live, released and expired bookings, their events, a policy, made on
// clock.
func hostFile(t *testing.T, clock *clock.Fake) *bolt.Ledger {
	t.Helper()
	l := bolt.New(filepath.Join(t.TempDir(), "chronos.db"))
	a, r := servicetest.ClientOn(l, clock, coretest.Alice), servicetest.ClientOn(l, clock, coretest.Root)
	_, err := r.SetPolicy([]string{"grace=10s"})
	require.NoError(t, err)
	p1, err := a.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, err = a.Create(core.Request{Device: 1, Memory: human.Fraction(0.2), Duration: time.Minute})
	require.NoError(t, err)
	_, err = a.Release(p1.ID)
	require.NoError(t, err)
	_, err = a.Create(core.Request{Device: 0, Memory: human.Fraction(0.3), Duration: 48 * time.Hour})
	require.NoError(t, err)
	return l
}

// Two hosts' files go into one lab ledger: each host's bookings keep their
// states and shares under the host's name with fresh ids, events follow
// their bookings, the first policy is kept; migrating a host twice is
// refused, and the files are left as they were.
func TestMigrate(t *testing.T) {
	t.Parallel()
	lab := storetest.Etcd(t, etcdtest.Shared(t))()
	clock := coretest.NewFakeClock()
	f1, f2 := hostFile(t, clock), hostFile(t, clock)
	before := storetest.Fingerprint(t, f1)

	rep, err := Host(context.Background(), f1, lab, "gpu3")
	require.NoError(t, err)
	require.Equal(t, Report{Host: "gpu3", From: "file", To: "etcd", Bookings: 3, Live: 2, Events: 5, Policy: "copied", Inventory: true,
		IDs: map[uint64]uint64{1: 1, 2: 2, 3: 3}}, rep)
	rep, err = Host(context.Background(), f2, lab, "gpu4")
	require.NoError(t, err)
	require.Equal(t, map[uint64]uint64{1: 4, 2: 5, 3: 6}, rep.IDs)
	require.Equal(t, "the same", rep.Policy)

	_, err = Host(context.Background(), f1, lab, "gpu3")
	require.ErrorIs(t, err, ErrMigrated)
	require.ErrorContains(t, err, "holds 3 bookings of host gpu3")
	require.Equal(t, before, storetest.Fingerprint(t, f1), "the file is only read")

	// Read on the clock the files were made on: the 48-hour booking is
	// live whatever today's date.
	c := core.NewClient(core.Options{Ledger: lab, Devices: servicetest.Devices, As: &coretest.Alice, Host: "gpu4", Clock: clock})
	all, err := c.List(true)
	require.NoError(t, err)
	require.Len(t, all, 6)
	for i, p := range all {
		require.Equal(t, []string{"gpu3", "gpu4"}[i/3], p.Host)
	}
	require.Equal(t, domain.Released, all[3].State)
	require.Equal(t, int64(300_000), all[5].SharePPM)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 10)
	require.Equal(t, domain.EventReleased, evs[8].Kind)
	require.Equal(t, uint64(4), evs[8].Partition, "gpu4's booking 1, now 4")
	pol, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, pol.Grace)

	// Admission on the lab ledger counts the migrated live bookings.
	_, err = c.Create(core.Request{Device: 0, Memory: human.Fraction(0.8), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	avail, err := c.AvailableOn("gpu3", 0)
	require.NoError(t, err)
	require.Equal(t, int64(700_000), avail[0].FreePPM)
}

// A file larger than one etcd transaction can take is copied whole, in
// several.
func TestMigrateLargeLedger(t *testing.T) {
	t.Parallel()
	l := bolt.New(filepath.Join(t.TempDir(), "chronos.db"))
	a := servicetest.ClientOn(l, nil, coretest.Alice)
	for i := range 130 {
		p, err := a.Create(core.Request{Device: i % 2, Memory: human.Fraction(0.001), Duration: time.Hour})
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = a.Release(p.ID)
			require.NoError(t, err)
		}
	}
	lab := storetest.Etcd(t, etcdtest.Shared(t))()
	rep, err := Host(context.Background(), l, lab, "gpu5")
	require.NoError(t, err)
	require.Equal(t, 130, rep.Bookings)
	require.Equal(t, 65, rep.Live)
	require.Equal(t, 195, rep.Events)
	live, err := servicetest.HostClient(lab, "gpu5", coretest.Alice).List(false)
	require.NoError(t, err)
	require.Len(t, live, 65)
}

// Everything of a host's goes in, and its part comes back out: a hold and
// the idle time of a live booking, the interval a released one held (hours
// quotas count it), the users' fair-share usage (added to what the lab
// holds), the line's past. Out again, only that host's bookings come, as
// the file's own, and the file's client sees them live and held.
func TestMigrateCarriesEverythingBothWays(t *testing.T) {
	t.Parallel()
	lab := storetest.Etcd(t, etcdtest.Shared(t))()
	clock := coretest.NewFakeClock()
	file := hostFile(t, clock)
	a := servicetest.ClientOn(file, clock, coretest.Alice)
	_, err := a.Hold(3, time.Hour, "preprocessing on CPU")
	require.NoError(t, err)
	// A past request: bob waited, then left the line.
	b := servicetest.ClientOn(file, clock, coretest.Bob)
	held, err := b.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, q, err := b.Enqueue(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, q)
	require.NoError(t, b.Cancel(q.ID))
	clock.Advance(20 * time.Minute)
	_, err = b.Release(held.ID)
	require.NoError(t, err)
	// Bob has used GPU time in the lab before (another host).
	other := core.NewClient(core.Options{Ledger: lab, Devices: servicetest.Devices, As: &coretest.Bob, Host: "gpu1", Clock: clock})
	p, err := other.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	clock.Advance(30 * time.Minute)
	_, err = other.Release(p.ID)
	require.NoError(t, err)
	before := usageOf(t, lab, coretest.Bob.UID)

	rep, err := Host(context.Background(), file, lab, "gpu3")
	require.NoError(t, err)
	require.Equal(t, 4, rep.Bookings)
	require.Equal(t, 1, rep.Requests)
	require.GreaterOrEqual(t, rep.Holds, 1)
	require.Equal(t, 1, rep.Held, "bob's 20 minutes count toward hours quotas in the lab")
	require.Equal(t, 1, rep.Users)
	hold := rep.IDs[3]
	in := core.NewClient(core.Options{Ledger: lab, Devices: servicetest.Devices, As: &coretest.Alice, Host: "gpu3", Clock: clock})
	u, err := in.BookingUsage(hold)
	require.NoError(t, err)
	require.Equal(t, "preprocessing on CPU", u.HoldReason)
	require.Greater(t, usageOf(t, lab, coretest.Bob.UID), before, "bob's use on the file adds to his use in the lab")

	out := bolt.New(filepath.Join(t.TempDir(), "back.db"))
	back, err := Host(context.Background(), lab, out, "gpu3")
	require.NoError(t, err)
	require.Equal(t, "etcd", back.From)
	require.Equal(t, "file", back.To)
	require.Equal(t, 4, back.Bookings, "gpu3's bookings, not gpu1's")
	require.Equal(t, 1, back.Requests)
	mine := servicetest.ClientOn(out, clock, coretest.Alice)
	live, err := mine.List(false)
	require.NoError(t, err)
	require.Len(t, live, 1, "alice's 48-hour booking; the rest ended")
	for _, p := range live {
		require.Empty(t, p.Host, "a file's bookings are its host's")
	}
	u, err = mine.BookingUsage(back.IDs[hold])
	require.NoError(t, err)
	require.Equal(t, "preprocessing on CPU", u.HoldReason)

	_, err = Host(context.Background(), lab, out, "gpu3")
	require.ErrorIs(t, err, ErrMigrated, "the file holds bookings of its own now")
	_, err = Host(context.Background(), file, out, "gpu3")
	require.ErrorIs(t, err, domain.ErrInput, "two files: nothing to move between")
}

// usageOf is uid's decayed usage as the ledger holds it.
func usageOf(t *testing.T, s storage.Store, uid int) float64 {
	t.Helper()
	var u domain.UserUsage
	require.NoError(t, s.View(context.Background(), func(tx *storage.Tx) error {
		var err error
		u, _, err = tx.UserUsage(uid)
		return err
	}))
	return u.GPUSeconds
}

// A host whose processes still work on the file by its ids is not moved:
// a waiter would be granted on the file, a chronos run would release its
// booking there. Nothing is written; the message says what to do.
func TestMigrateWaitsForWorkOnTheFile(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	file := hostFile(t, clock)
	b := servicetest.ClientOn(file, clock, coretest.Bob)
	_, err := b.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, q, err := b.Enqueue(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)

	lab := storetest.Etcd(t, etcdtest.Shared(t))()
	_, err = Host(context.Background(), file, lab, "gpu3")
	require.ErrorIs(t, err, ErrBlocked)
	require.ErrorContains(t, err, fmt.Sprintf("request %d (bob) waits in the line", q.ID))
	require.ErrorContains(t, err, fmt.Sprintf("chronos queue cancel %d", q.ID))
	require.NoError(t, lab.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		require.Empty(t, parts, "nothing written")
		return err
	}))

	require.NoError(t, b.Cancel(q.ID))
	w, err := proc.ThisWrapper(0)
	require.NoError(t, err)
	require.NoError(t, b.SetWrapper(4, w))
	_, err = Host(context.Background(), file, lab, "gpu3")
	require.ErrorIs(t, err, ErrBlocked)
	require.ErrorContains(t, err, "booking 4 (bob) is held by chronos run")
}
