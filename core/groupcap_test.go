package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Two users of the group gc-core and one outside it, none with an account
// here: their groups are put in the lookup cache, as NSS would answer.
var (
	gcAnn = domain.Identity{UID: 424401, User: "ann"}
	gcBen = domain.Identity{UID: 424402, User: "ben"}
	gcCid = domain.Identity{UID: 424403, User: "cid"}
)

const gcGroup = "gc-core"

func init() {
	kernel := time.Now() // the cache ages on the kernel's clock
	proc.KnownGroups.Lock()
	defer proc.KnownGroups.Unlock()
	if proc.KnownGroups.Of == nil {
		proc.KnownGroups.Of = map[int]proc.GroupsAt{}
	}
	for uid, groups := range map[int][]string{gcAnn.UID: {gcGroup}, gcBen.UID: {"gc-ben", gcGroup}, gcCid.UID: {"gc-cid"}} {
		proc.KnownGroups.Of[uid] = proc.GroupsAt{Names: groups, At: kernel}
	}
}

// groupPolicy stores the policy with settings for gc-core, which (a group
// only the cache knows) SetPolicy would not find.
func groupPolicy(t *testing.T, l *onLedger, settings ...string) {
	t.Helper()
	p, err := policy.Apply(policy.Default(), append(settings, "for=@"+gcGroup))
	require.NoError(t, err)
	require.NoError(t, l.open().Update(context.Background(), func(tx *storage.Tx) error { return tx.PutPolicy(p) }))
}

// group-gpus holds the group's members together, at every instant of a
// booking: a create, an extension and the line's ETA and reason all say
// which cap and the group's figure; a user outside the group is not held.
func TestGroupGPUsHoldTheMembersTogether(t *testing.T) {
	storetest.Each(t, testGroupGPUsHoldTheMembersTogether)
}

func testGroupGPUsHoldTheMembersTogether(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	groupPolicy(t, l, "group-gpus=0.8")
	ann, ben, cid := l.as(gcAnn), l.as(gcBen), l.as(gcCid)
	now := l.clock.Now()
	annP, err := ann.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Hour})
	require.NoError(t, err)

	_, err = ben.Create(Request{Device: 1, Memory: human.Fraction(0.4), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "over your quota: group-gpus=0.8 for @gc-core: the group would hold 0.9 GPUs at once (0.5 already, 0.4 asked)")
	var later *admission.FitsLaterError
	require.ErrorAs(t, err, &later)
	require.Equal(t, annP.Expires, later.At, "when ann's booking ends")
	_, err = cid.Create(Request{Device: 1, Memory: human.Fraction(0.4), Duration: time.Hour})
	require.NoError(t, err, "cid is not in the group")

	// Ben books ahead, from when ann's ends: ann's extension would meet it.
	_, err = ben.Create(Request{Device: 1, Memory: human.Fraction(0.4), Duration: time.Hour, Start: now.Add(2 * time.Hour)})
	require.NoError(t, err)
	_, err = ann.Extend(annP.ID, time.Hour)
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "group-gpus=0.8 for @gc-core: the group would hold 0.9 GPUs at once (0.4 already, 0.5 asked)")

	// GPU 0 has room for ben now; the group has not until ann's ends.
	_, e, err := ben.Enqueue(Request{Device: 0, Memory: human.Fraction(0.4), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, e)
	require.Equal(t, annP.Expires, e.ETA)
	require.Equal(t, "group-gpus=0.8 for @gc-core: the group holds 0.5 GPUs, asks 0.4", e.Reason)
	q, err := cid.Queue()
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, e.Reason, q[0].Reason)

	// Ann's release places the line: ben's request fits the cap now.
	_, err = ann.Release(annP.ID)
	require.NoError(t, err)
	q, err = cid.Queue()
	require.NoError(t, err)
	require.Empty(t, q)
	mine, err := ben.List(false)
	require.NoError(t, err)
	require.Len(t, mine, 3, "ann's ended; cid's, ben's ahead and ben's granted")
}

// group-hours holds the GPU-hours the members book together in a rolling
// window, ended bookings included; the line's ETA is when a member's old
// use has slid far enough out of it.
func TestGroupHoursHoldTheMembersTogether(t *testing.T) {
	storetest.Each(t, testGroupHoursHoldTheMembersTogether)
}

func testGroupHoursHoldTheMembersTogether(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	groupPolicy(t, l, "group-hours=1/1d")
	ann, ben, cid := l.as(gcAnn), l.as(gcBen), l.as(gcCid)
	start := l.clock.Now()
	p, err := ann.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	l.clock.Advance(30 * time.Minute)
	_, err = ann.Release(p.ID) // held half a GPU-hour
	require.NoError(t, err)

	whole := Request{Device: 1, Memory: human.Fraction(1), Duration: time.Hour}
	_, err = ben.Create(whole)
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "over your quota: group-hours=1/1d for @gc-core: the group has 0.5 GPU-hours booked in the window, 1.0 asked")
	_, err = ben.Create(Request{Device: 1, Memory: human.Fraction(0.5), Duration: 3 * time.Hour})
	require.ErrorContains(t, err, "group-hours=1/1d for @gc-core: 1.5 GPU-hours asked can never be granted")
	_, err = cid.Create(whole)
	require.NoError(t, err, "cid is not in the group")

	whole.Device = 0
	_, e, err := ben.Enqueue(whole, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, e)
	require.Equal(t, "group-hours=1/1d for @gc-core: the group has 0.5 GPU-hours booked in the window, asks 1.0", e.Reason)
	// Ben's hour fits once the window it ends has slid past ann's half hour.
	require.WithinDuration(t, start.Add(30*time.Minute+24*time.Hour-time.Hour), e.ETA, time.Second)
}
