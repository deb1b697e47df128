package admission

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
)

// Three users no account here has: two of the group "gc-lab", one not.
// Their groups are put in the lookup cache, as NSS would answer.
const (
	gcAnn, gcBen, gcCid = 424301, 424302, 424303
	gcLab               = "gc-lab"
)

func init() {
	kernel := time.Now() // the cache ages on the kernel's clock
	proc.KnownGroups.Lock()
	defer proc.KnownGroups.Unlock()
	if proc.KnownGroups.Of == nil {
		proc.KnownGroups.Of = map[int]proc.GroupsAt{}
	}
	for uid, groups := range map[int][]string{gcAnn: {"gc-ann", gcLab}, gcBen: {gcLab}, gcCid: {"gc-cid"}} {
		proc.KnownGroups.Of[uid] = proc.GroupsAt{Names: groups, At: kernel}
	}
}

func labCap(gpus, hours float64, window time.Duration) policy.Limits {
	c := policy.GroupCap{Group: gcLab}
	if gpus >= 0 {
		c.GPUs = new(gpus)
	}
	if hours >= 0 {
		c.Hours, c.Window = new(hours), window
	}
	return policy.Limits{Share: 1, Groups: []policy.GroupCap{c}}
}

// A group's cap is set for the group only, and reaches its members, not
// others; a member's own limits stay theirs.
func TestGroupCapIsTheGroups(t *testing.T) {
	t.Parallel()
	p, err := policy.Apply(policy.Default(), []string{"group-gpus=4", "for=@" + gcLab, "group-hours=500/7d", "for=@" + gcLab})
	require.NoError(t, err, "for= repeated, as the issue types it")
	p, err = policy.Apply(p, []string{"user-gpus=0.5", "for=@" + gcLab})
	require.NoError(t, err)
	require.Equal(t, "group-gpus=4 group-hours=500/7d user-gpus=0.5 for=@"+gcLab, policy.FormatOverride(p.Overrides[0]))

	ben := policy.LimitsFor(p, domain.Identity{UID: gcBen, User: "ben"})
	require.Equal(t, []policy.GroupCap{{Group: gcLab, GPUs: new(4.0), Hours: new(500.0), Window: 7 * 24 * time.Hour}}, ben.Groups)
	require.Equal(t, new(0.5), ben.UserGPUs, "user-gpus stays each member's own")
	require.Empty(t, policy.LimitsFor(p, domain.Identity{UID: gcCid, User: "cid"}).Groups)
	require.Equal(t, 7*24*time.Hour, LongestWindow(p), "the held intervals are kept as long as the cap looks back")
	require.True(t, policy.CapsGroupHours(p))

	for _, bad := range [][]string{{"group-gpus=4", "for=alice"}, {"group-gpus=4"}, {"group-hours=5/7d", "for=1001"}} {
		_, err := policy.Apply(policy.Default(), bad)
		require.ErrorIs(t, err, domain.ErrInput, "%v", bad)
		require.ErrorContains(t, err, "it needs a group, for=@GROUP", "%v", bad)
	}
	_, err = policy.Apply(policy.Default(), []string{"group-gpus=4", "for=alice"})
	require.ErrorContains(t, err, "group-gpus caps a group's members together: it needs a group, for=@GROUP (for=@students); for=alice names a user, whom user-gpus limits alone")
	for _, bad := range []string{"group-gpus=-1", "group-gpus=lots", "group-hours=5/0", "group-hours=x/7d"} {
		_, err := policy.Apply(policy.Default(), []string{bad, "for=@" + gcLab})
		require.ErrorIs(t, err, domain.ErrInput, bad)
		require.ErrorContains(t, err, strings.Split(bad, "=")[0], bad)
	}
	_, err = policy.Apply(policy.Default(), []string{"group-gpus=4", "for=@a", "for=@b"})
	require.ErrorContains(t, err, "for= given twice")

	// default and none take it away.
	p, err = policy.Apply(p, []string{"group-gpus=default", "group-hours=none", "user-gpus=default", "for=@" + gcLab})
	require.NoError(t, err)
	require.Empty(t, policy.LimitsFor(p, domain.Identity{UID: gcBen, User: "ben"}).Groups, "group-hours=none is no cap")
	require.False(t, policy.CapsGroupHours(p))

	knobs, _ := policy.Knobs(p)
	i := slices.IndexFunc(knobs, func(k policy.Setting) bool { return k.Key == "group-gpus" })
	require.GreaterOrEqual(t, i, 0, "policy lists group-gpus")
	require.Equal(t, "none", knobs[i].Value)
}

// group-gpus holds the members together at every instant of a request,
// those ahead included: a member's 0.5 leaves another member 0.5 under a
// cap of 1, whatever GPU; a user outside the group is not held by it, nor
// counts in it.
func TestGroupGPUsCapTheMembersTogether(t *testing.T) {
	t.Parallel()
	gpu0, gpu1, gpu2 := GpuID{Device: 0}, GpuID{Device: 1}, GpuID{Host: "gpu3", Device: 0}
	cal := Calendar{
		{gpu: gpu0, uid: gcAnn, share: 500_000, start: at(0), end: at(3600)},
		{gpu: gpu2, uid: gcCid, share: 900_000, start: at(0), end: at(3600)}, // outside the group
	}
	ben := func(share int64, length time.Duration) Ask {
		return Ask{Gpu: gpu1, Uid: gcBen, Share: share, Length: length, Limits: labCap(1, -1, 0)}
	}
	blk := cal.Check(ben(600_000, time.Hour), at(0))
	require.NotNil(t, blk)
	require.Equal(t, blockedGroupGPUs, blk.kind)
	require.Equal(t, gcLab, blk.group)
	require.InDelta(t, 500_000, blk.figure, 0)
	require.True(t, blk.quota())
	require.Nil(t, cal.Check(ben(500_000, time.Hour), at(0)), "the group holds 1: the cap")
	require.Nil(t, cal.Check(ben(600_000, time.Hour), at(3600)), "once ann's has ended")
	cid := Ask{Gpu: gpu1, Uid: gcCid, Share: 600_000, Length: time.Hour, Limits: policy.Limits{Share: 1}}
	require.Nil(t, cal.Check(cid, at(0)), "cid is not in the group")

	// Ann's next booking is ahead, from 1800: ben's hour from 0 meets it;
	// half an hour does not. His earliest is when it ends.
	cal = Calendar{{gpu: gpu0, uid: gcAnn, share: 500_000, start: at(1800), end: at(5400)}}
	require.NotNil(t, cal.Check(ben(600_000, time.Hour), at(0)))
	require.Nil(t, cal.Check(ben(600_000, 30*time.Minute), at(0)))
	got, why := newLayout(cal).earliest(ben(600_000, time.Hour), at(0))
	require.Equal(t, at(5400), got)
	require.Equal(t, blockedGroupGPUs, why.kind)

	// A member's place kept in line counts as their booking does.
	kept := Calendar{{gpu: gpu0, uid: gcAnn, share: 500_000, start: at(0), end: at(3600), request: 7}}
	require.NotNil(t, kept.Check(ben(600_000, time.Hour), at(0)))

	// Asking more than the cap alone can never be granted; exempt is not held.
	require.Equal(t, blockedGroupGPUs, ben(1_100_000, time.Hour).never().kind)
	exempt := ben(600_000, time.Hour)
	exempt.Limits.Exempt = true
	require.Nil(t, Calendar{{gpu: gpu0, uid: gcAnn, share: 500_000, start: at(0), end: at(3600)}}.Check(exempt, at(0)))
}

// group-hours holds the members' GPU-hours together in every rolling
// window, ended bookings included; the ETA is when a member's old use has
// slid far enough out, to the second.
func TestGroupHoursCapTheMembersTogether(t *testing.T) {
	t.Parallel()
	// Ann held a GPU from 0 to 3600 (ended: what Held reads); cid, outside
	// the group, held one as long. The cap is 1.5 GPU-hours a day.
	cal := Calendar{
		{gpu: noGPU, uid: gcAnn, share: human.Ppm, start: at(0), end: at(3600)},
		{gpu: noGPU, uid: gcCid, share: human.Ppm, start: at(0), end: at(3600)},
	}
	ben := Ask{Gpu: GpuID{Device: 1}, Uid: gcBen, Share: human.Ppm, Length: time.Hour, Limits: labCap(-1, 1.5, 24*time.Hour)}
	blk := cal.Check(ben, at(3600))
	require.NotNil(t, blk)
	require.Equal(t, blockedGroupHours, blk.kind)
	require.InDelta(t, 1.0, blk.figure, 1e-9, "ann's hour, not cid's")
	half := ben
	half.Share = human.Ppm / 2
	require.Nil(t, cal.Check(half, at(3600)), "1.5 GPU-hours together: the cap")

	got, why := newLayout(cal).earliest(ben, at(3600))
	require.Equal(t, blockedGroupHours, why.kind)
	// The window ending when ben's hour ends may hold half an hour of ann's.
	require.WithinDuration(t, at(1800+24*3600-3600), got, time.Second)
	require.NotNil(t, cal.Check(ben, got.Add(-2*time.Second)))
	require.Nil(t, cal.Check(ben, got))

	require.Equal(t, blockedGroupHours, Ask{Share: human.Ppm, Length: 2 * time.Hour, Limits: labCap(-1, 1.5, time.Hour)}.never().kind)
}

// On random calendars of the three users, with caps on the group of two,
// a check agrees with summing the group's slots by hand, the start
// earliest gives fits, and under group-gpus it is the first second that
// does.
func TestGroupEarliestIsTheFirstFit(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	uids := []int{gcAnn, gcBen, gcCid}
	member := func(s slot) bool { return s.uid != gcCid }
	for round := range 2000 {
		cal := randomCalendar(rng, 1)
		for i := range cal {
			cal[i].uid = uids[cal[i].uid]
		}
		a := Ask{Gpu: randomGPU(rng), Uid: uids[rng.IntN(2)], Share: int64(1+rng.IntN(10)) * 100_000,
			Length: time.Duration(1+rng.IntN(20)) * time.Second, Limits: policy.Limits{Share: 1}}
		c := policy.GroupCap{Group: gcLab, GPUs: new(float64(1+rng.IntN(25)) / 10)}
		if rng.IntN(3) == 0 {
			c.Hours, c.Window = new(float64(1+rng.IntN(60))/3600), time.Duration(10+rng.IntN(40))*time.Second
		}
		if rng.IntN(3) == 0 {
			a.Limits.UserGPUs = new(float64(1+rng.IntN(15)) / 10)
		}
		a.Limits.Groups = []policy.GroupCap{c}
		if a.never() != nil {
			continue
		}
		from := at(rng.IntN(30))
		for s := from; s.Before(from.Add(10 * time.Second)); s = s.Add(time.Second) {
			over := float64(cal.Peak(member, s, s.Add(a.Length))+a.Share) > *c.GPUs*human.Ppm+0.5
			blk := cal.Check(a, s)
			if over {
				require.NotNil(t, blk, "round %d: the group is over its cap at %v", round, s)
			}
			if blk != nil && blk.kind == blockedGroupGPUs {
				require.True(t, over, "round %d: %v", round, s)
				require.InDelta(t, float64(cal.Peak(member, s, s.Add(a.Length))), blk.figure, 0, "round %d", round)
			}
		}
		got, why := newLayout(cal).earliest(a, from)
		require.False(t, got.IsZero(), "round %d: no fit found", round)
		require.Nil(t, cal.Check(a, got), "round %d: %v does not fit", round, got)
		require.Equal(t, got.Equal(from), why == nil, "round %d", round)
		if c.Hours != nil {
			// Under an hours cap, earliestByHours weighs the instants where
			// room may appear: like a user's hours quota's (a seed other
			// than calendar_test's shows it there too), it can miss a gap
			// that members' later bookings close again, and give a later
			// ETA, never an earlier one.
			continue
		}
		for s := from; s.Before(got); s = s.Add(time.Second) {
			require.NotNil(t, cal.Check(a, s), "round %d: %v fits, earlier than %v", round, s, got)
		}
	}
}

// A booking of several GPUs counts against its group's cap as that many
// shares: two half GPUs on top of a member's half is 1.5 GPUs.
func TestGroupGPUsCountEveryGPUOfAGang(t *testing.T) {
	t.Parallel()
	cal := Calendar{{gpu: GpuID{Device: 0}, uid: gcAnn, share: 500_000, start: at(0), end: at(3600)}}
	gang := Ask{Gpu: GpuID{Device: 1}, Gang: []int{1, 2}, Uid: gcBen, Share: 500_000, Length: time.Hour, Limits: labCap(1, -1, 0)}
	blk := cal.Check(gang, at(0))
	require.NotNil(t, blk, "0.5 held and 2 × 0.5 asked is over 1")
	require.Equal(t, blockedGroupGPUs, blk.kind)
	got, _ := newLayout(cal).earliest(gang, at(0))
	require.Equal(t, at(3600), got)
	gang.Limits = labCap(1.5, -1, 0)
	require.Nil(t, cal.Check(gang, at(0)))
	gang.Limits = labCap(0.75, -1, 0)
	require.Equal(t, blockedGroupGPUs, gang.never().kind, "1 GPU asked at once is over 0.75 by itself")
}
