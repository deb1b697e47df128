package core

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

func TestCreateListReleaseExtend(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testCreateListReleaseExtend)
}

func testCreateListReleaseExtend(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := clientOn(open(), clock, coretest.Alice)

	p, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, uint64(1), p.ID)
	require.Equal(t, "alice", p.User)
	require.Equal(t, int64(500_000), p.SharePPM)
	require.Equal(t, uint64(40<<30), p.Bytes)
	require.Equal(t, "GPU-0", p.DeviceUUID)
	require.Equal(t, time.Hour, p.TimeRemaining())

	q, err := c.Create(Request{Device: 1, Memory: human.Bytes(20 << 30), Duration: 30 * time.Minute, Compute: 25})
	require.NoError(t, err)
	require.Equal(t, int64(250_000), q.SharePPM)
	require.Equal(t, 25, q.ComputePct)

	clock.Advance(10 * time.Minute)
	require.Equal(t, 50*time.Minute, p.TimeRemaining())

	parts, err := c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 2)

	avail, err := c.Available(0)
	require.NoError(t, err)
	require.Len(t, avail, 1)
	require.Equal(t, int64(500_000), avail[0].FreePPM)
	require.Equal(t, "50% (40.0 GiB) free on GPU 0", avail[0].String())

	ext, err := c.Extend(p.ID, 30*time.Minute)
	require.NoError(t, err)
	require.Equal(t, clock.Now().Add(80*time.Minute), ext.Expires)

	require.NoError(t, q.Release())
	require.Equal(t, domain.Released, q.State)
	require.Zero(t, q.TimeRemaining())

	parts, err = c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	all, err := c.List(true)
	require.NoError(t, err)
	require.Len(t, all, 2)

	// Every change is in the audit trail, with its actor.
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
		require.Equal(t, "alice", e.User)
		require.NotZero(t, e.Partition)
	}
	require.Equal(t, []string{"created", "created", "extended", "released"}, kinds)

	last, err := c.LastEvents(2)
	require.NoError(t, err)
	require.Len(t, last, 2)
	require.Equal(t, []domain.EventKind{domain.EventExtended, domain.EventReleased}, []domain.EventKind{last[0].Kind, last[1].Kind})
	every, err := c.LastEvents(100)
	require.NoError(t, err)
	require.Len(t, every, 4)
}

func TestTimeIsTheTruth(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testTimeIsTheTruth)
}

func testTimeIsTheTruth(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := clientOn(open(), clock, coretest.Alice)
	p, err := c.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Minute})
	require.NoError(t, err)

	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Minute})
	require.ErrorIs(t, err, domain.ErrOverbooked)

	// No monitor runs: the deadline alone ends the booking everywhere.
	clock.Advance(time.Minute)
	parts, err := c.List(false)
	require.NoError(t, err)
	require.Empty(t, parts)
	avail, err := c.Available(0)
	require.NoError(t, err)
	require.Equal(t, int64(human.Ppm), avail[0].FreePPM)
	require.Zero(t, p.TimeRemaining())
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Minute})
	require.NoError(t, err)
	_, err = c.Release(p.ID)
	require.ErrorIs(t, err, domain.ErrNotLive)
	_, err = c.Extend(p.ID, time.Hour)
	require.ErrorIs(t, err, domain.ErrNotLive)

	all, err := c.List(true)
	require.NoError(t, err)
	require.Equal(t, domain.StatusExpired, domain.Status(all[0].Partition, clock.Now(), time.Minute))
}

func TestAdmissionAddsUpExactly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testAdmissionAddsUpExactly)
}

func testAdmissionAddsUpExactly(t *testing.T, open storetest.Opener) {
	c := clientOn(open(), nil, coretest.Alice)
	// Ten 10% bookings fill a device exactly, however the floats round.
	for i := range 10 {
		_, err := c.Create(Request{Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err, "booking %d", i)
	}
	_, err := c.Create(Request{Device: 1, Memory: human.Bytes(1 << 20), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "GPU 1 has 0% (0 MiB) free")
}

// Every refusal names its reason and leaves the ledger file byte for byte as
// it was.
func TestRefusalsLeaveLedgerUnchanged(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRefusalsLeaveLedgerUnchanged)
}

func testRefusalsLeaveLedgerUnchanged(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	s := open()
	a := clientOn(s, clock, coretest.Alice)
	b := clientOn(open(), clock, coretest.Bob)
	r := clientOn(open(), clock, coretest.Root)
	mine, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	old, err := a.Create(Request{Device: 1, Memory: human.Fraction(0.1), Duration: time.Minute})
	require.NoError(t, err)
	_, err = a.Release(old.ID)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		do   func() error
		want error
		msg  string
	}{
		{"overbooked", func() error {
			_, err := b.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
			return err
		}, domain.ErrOverbooked, "GPU 0 has 40% (32.0 GiB) free, 50% asked"},
		{"unknown device", func() error {
			_, err := a.Create(Request{Device: 7, Memory: human.Fraction(0.1), Duration: time.Hour})
			return err
		}, domain.ErrNoDevice, "GPUs 0–1"},
		{"zero share", func() error {
			_, err := a.Create(Request{Device: 0, Duration: time.Hour})
			return err
		}, domain.ErrInput, "no memory share"},
		{"share above one", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Fraction(1.5), Duration: time.Hour})
			return err
		}, domain.ErrInput, "at most 100%"},
		{"more bytes than the GPU", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Bytes(100 << 30), Duration: time.Hour})
			return err
		}, domain.ErrInput, "more than GPU 0 has"},
		{"zero duration", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.1)})
			return err
		}, domain.ErrInput, "at least a second"},
		{"longer than policy", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: 30 * 24 * time.Hour})
			return err
		}, domain.ErrTooLong, "the most is 7d"},
		{"bad compute", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour, Compute: 300})
			return err
		}, domain.ErrInput, "compute share"},
		{"for another user, not root", func() error {
			_, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour, For: "bob"})
			return err
		}, domain.ErrNotRoot, "--user bob"},
		{"for an unknown user", func() error {
			_, err := r.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour, For: "no-such-user-x"})
			return err
		}, domain.ErrUnknownUser, "no-such-user-x"},
		{"release unknown id", func() error { _, err := a.Release(99); return err }, domain.ErrNoPartition, "99"},
		{"release another's", func() error { _, err := b.Release(mine.ID); return err }, domain.ErrNotOwner, "belongs to alice"},
		{"extend another's", func() error { _, err := b.Extend(mine.ID, time.Hour); return err }, domain.ErrNotOwner, "only they or root"},
		{"release ended", func() error { _, err := a.Release(old.ID); return err }, domain.ErrNotLive, "released"},
		{"extend past the maximum", func() error { _, err := a.Extend(mine.ID, 7*24*time.Hour); return err }, domain.ErrTooLong, "the most is 7d"},
		{"extend by nothing", func() error { _, err := a.Extend(mine.ID, 0); return err }, domain.ErrInput, "at least a second"},
		{"policy by non-root", func() error { _, err := a.SetPolicy([]string{"grace=1s"}); return err }, domain.ErrNotRoot, "policy"},
		{"bad policy", func() error { _, err := r.SetPolicy([]string{"expiry=explode"}); return err }, domain.ErrInput, "terminate, notify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := storetest.Fingerprint(t, s)
			err := tc.do()
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			require.Equal(t, before, storetest.Fingerprint(t, s), "the ledger changed")
		})
	}
}

func TestRootMayActForOthers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRootMayActForOthers)
}

func testRootMayActForOthers(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	a := clientOn(open(), clock, coretest.Alice)
	r := clientOn(open(), clock, coretest.Root)
	p, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.2), Duration: time.Hour})
	require.NoError(t, err)
	_, err = r.Extend(p.ID, time.Hour)
	require.NoError(t, err)
	_, err = r.Release(p.ID)
	require.NoError(t, err)

	q, err := r.Create(Request{Device: 0, Memory: human.Fraction(0.2), Duration: time.Hour, For: "0"})
	require.NoError(t, err)
	require.Equal(t, 0, q.UID)
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testPolicy)
}

func testPolicy(t *testing.T, open storetest.Opener) {
	c := clientOn(open(), nil, coretest.Root)
	p, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, policy.Default(), p)
	p, err = c.SetPolicy([]string{"expiry=notify", "overbudget=terminate", "grace=5s", "max=1d"})
	require.NoError(t, err)
	require.Equal(t, policy.ActNotify, p.Expiry)
	require.Equal(t, policy.ActTerminate, p.OverBudget)
	require.Equal(t, 5*time.Second, p.Grace)
	require.Equal(t, 24*time.Hour, p.MaxLength)
	// What policy.Format prints, policy.Apply reads back.
	again, err := policy.Apply(policy.Default(), splitFields(policy.Format(p)))
	require.NoError(t, err)
	require.Equal(t, p, again)
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: 2 * 24 * time.Hour})
	require.ErrorIs(t, err, domain.ErrTooLong)
}

func splitFields(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func TestInventoryIsCachedOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testInventoryIsCachedOnce)
}

func testInventoryIsCachedOnce(t *testing.T, open storetest.Opener) {
	calls := 0
	c := NewClient(Options{Ledger: open(), As: &coretest.Alice, Devices: func() (Listing, error) {
		calls++
		return testDevices()
	}})
	for range 3 {
		_, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
	}
	require.Equal(t, 1, calls)

	failing := NewClient(Options{Ledger: storetest.Bolt(t)(), As: &coretest.Alice,
		Devices: func() (Listing, error) { return Listing{}, errors.New("NVML: no driver") }})
	_, err := failing.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.ErrorContains(t, err, "list GPUs: NVML: no driver")
}

// A refusal says who holds the GPU and until when, and which GPUs have room.
func TestOverbookedNamesHoldersAndRoom(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	path := filepath.Join(t.TempDir(), "chronos.db")
	a := clientAt(path, clock, coretest.Alice)
	b := clientAt(path, clock, coretest.Bob)
	first, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	second, err := b.Create(Request{Device: 0, Memory: human.Fraction(0.4), Duration: 3 * 24 * time.Hour})
	require.NoError(t, err)
	_, err = b.Create(Request{Device: 1, Memory: human.Fraction(0.4), Duration: time.Hour})
	require.NoError(t, err)

	_, err = a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	now := clock.Now()
	require.EqualError(t, err, "not enough free share on that GPU: GPU 0 has 0% (0 MiB) free, 10% asked: held by alice (60%, #1, until "+
		human.FormatTime(first.Expires, now)+"), bob (40%, #2, until "+human.FormatTime(second.Expires, now)+"). GPU 1 has 60% free. "+
		"It would fit at "+human.FormatTime(first.Expires, now)+" (--wait joins the line)")
	require.NotEqual(t, human.FormatTime(first.Expires, now), human.FormatTime(second.Expires, now), "a date three days ahead names its day")
	var later *admission.FitsLaterError // the app offers to wait in line with it
	require.ErrorAs(t, err, &later)
	require.Equal(t, first.Expires, later.At)
	require.NotContains(t, later.Why.Error(), "It would fit")

	_, err = a.Create(Request{Device: 0, Memory: human.Fraction(0.7), Duration: time.Hour})
	require.ErrorContains(t, err, ". No other GPU has 70% free")
}

// 1 ppm booked leaves 99.9999% free: the refusal of 100% must not read
// "100% free, 100% asked", and `available` must not promise 100% either.
func TestFreeShareIsShownAsCompared(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil, coretest.Alice)
	_, err := c.Create(Request{Device: 1, Memory: human.Fraction(0.000001), Duration: time.Hour})
	require.NoError(t, err)
	_, err = c.Create(Request{Device: 1, Memory: human.Fraction(1), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "GPU 1 has 99.9% (79.9 GiB) free, 100% asked")
	avail, err := c.Available(1)
	require.NoError(t, err)
	require.Equal(t, "99.9% (79.9 GiB) free on GPU 1", avail[0].String())

	// What is shown free can be booked.
	_, err = c.Create(Request{Device: 1, Memory: human.Fraction(0.999), Duration: time.Hour})
	require.NoError(t, err)
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	at := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.Local) }
	now := at(2026, 11, 30, 9)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{at(2026, 11, 30, 12), "12:00:00"},
		{at(2026, 11, 30, 8), "08:00:00"},
		{at(2026, 12, 2, 9), "Wed Dec 2 09:00:00"},
		{at(2026, 10, 31, 9), "Sat Oct 31 09:00:00"},
		{at(2027, 3, 10, 9), "Wed Mar 10 2027 09:00:00"},
		{at(2026, 5, 14, 9), "Thu May 14 2026 09:00:00"},
	} {
		require.Equal(t, tc.want, human.FormatTime(tc.at, now))
	}
}
