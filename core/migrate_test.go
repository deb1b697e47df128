package core

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// hostFile is a host's ledger file as it was before the lab shared one:
// live, released and expired bookings, their events, a policy, made on
// clock.
func hostFile(t *testing.T, clock *clock.Fake) *storage.Ledger {
	t.Helper()
	l := storage.New(filepath.Join(t.TempDir(), "chronos.db"))
	a, r := clientOn(l, clock, alice), clientOn(l, clock, root)
	_, err := r.SetPolicy([]string{"grace=10s"})
	require.NoError(t, err)
	p1, err := a.Create(Request{Device: 0, Memory: Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, err = a.Create(Request{Device: 1, Memory: Fraction(0.2), Duration: time.Minute})
	require.NoError(t, err)
	_, err = a.Release(p1.ID)
	require.NoError(t, err)
	_, err = a.Create(Request{Device: 0, Memory: Fraction(0.3), Duration: 48 * time.Hour})
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
	clock := newFakeClock()
	f1, f2 := hostFile(t, clock), hostFile(t, clock)
	before := storetest.Fingerprint(t, f1)

	rep, err := Migrate(f1, lab, "gpu3")
	require.NoError(t, err)
	require.Equal(t, MigrationReport{Host: "gpu3", Bookings: 3, Live: 2, Events: 5, Policy: "copied", Inventory: true,
		IDs: map[uint64]uint64{1: 1, 2: 2, 3: 3}}, rep)
	rep, err = Migrate(f2, lab, "gpu4")
	require.NoError(t, err)
	require.Equal(t, map[uint64]uint64{1: 4, 2: 5, 3: 6}, rep.IDs)
	require.Equal(t, "the same", rep.Policy)

	_, err = Migrate(f1, lab, "gpu3")
	require.ErrorIs(t, err, ErrMigrated)
	require.ErrorContains(t, err, "holds 3 bookings of host gpu3")
	require.Equal(t, before, storetest.Fingerprint(t, f1), "the file is only read")

	// Read on the clock the files were made on: the 48-hour booking is
	// live whatever today's date.
	c := NewClient(Options{Ledger: lab, Devices: testDevices, As: &alice, Host: "gpu4", Clock: clock})
	all, err := c.List(true)
	require.NoError(t, err)
	require.Len(t, all, 6)
	for i, p := range all {
		require.Equal(t, []string{"gpu3", "gpu4"}[i/3], p.Host)
	}
	require.Equal(t, storage.Released, all[3].State)
	require.Equal(t, int64(300_000), all[5].SharePPM)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 10)
	require.Equal(t, storage.EventReleased, evs[8].Kind)
	require.Equal(t, uint64(4), evs[8].Partition, "gpu4's booking 1, now 4")
	pol, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, pol.Grace)

	// Admission on the lab ledger counts the migrated live bookings.
	_, err = c.Create(Request{Device: 0, Memory: Fraction(0.8), Duration: time.Hour})
	require.ErrorIs(t, err, ErrOverbooked)
	avail, err := c.AvailableOn("gpu3", 0)
	require.NoError(t, err)
	require.Equal(t, int64(700_000), avail[0].FreePPM)
}

// A file larger than one etcd transaction can take is copied whole, in
// several.
func TestMigrateLargeLedger(t *testing.T) {
	t.Parallel()
	l := storage.New(filepath.Join(t.TempDir(), "chronos.db"))
	a := clientOn(l, nil, alice)
	for i := range 130 {
		p, err := a.Create(Request{Device: i % 2, Memory: Fraction(0.001), Duration: time.Hour})
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = a.Release(p.ID)
			require.NoError(t, err)
		}
	}
	lab := storetest.Etcd(t, etcdtest.Shared(t))()
	rep, err := Migrate(l, lab, "gpu5")
	require.NoError(t, err)
	require.Equal(t, 130, rep.Bookings)
	require.Equal(t, 65, rep.Live)
	require.Equal(t, 195, rep.Events)
	live, err := hostClient(lab, "gpu5", alice).List(false)
	require.NoError(t, err)
	require.Len(t, live, 65)
}
