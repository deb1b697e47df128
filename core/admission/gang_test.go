package admission

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
)

const (
	aliceUID = 1001
	bobUID   = 1002
)

// gangBooks is a ledger of n 80 GiB GPUs on this host, with the default
// policy, parts booked and line waiting, as of t0. topo, when given, is
// how the GPUs are linked.
func gangBooks(t testing.TB, n int, topo *gpu.Topology, parts []domain.Partition, line []domain.Request) *Books {
	t.Helper()
	inv := domain.Inventory{Backend: "sim"}
	for i := range n {
		inv.Devices = append(inv.Devices, domain.Device{Index: i, UUID: "SIM-" + string(rune('a'+i)), MemoryTotal: 80 << 30})
	}
	if topo != nil {
		b, err := json.Marshal(*topo)
		require.NoError(t, err)
		inv.Topology = b
	}
	for i := range parts {
		parts[i].ID, parts[i].State = uint64(100+i), domain.Live
		parts[i].Created = parts[i].Start
	}
	for i := range line {
		line[i].ID, line[i].State = uint64(200+i), domain.Waiting
	}
	return &Books{Now: t0, Invs: map[string]domain.Inventory{"": inv}, Gpus: n, Pol: policy.Default(), Parts: parts, Line: line,
		Limits: map[int]policy.Limits{}, HeldBy: map[int]Calendar{}, Alive: func(domain.Request) bool { return true }}
}

// booked is a booking of share (in percent) of devices, from start to end
// (seconds after t0), by uid.
func booked(uid int, pct int64, start, end int, devices ...int) domain.Partition {
	p := domain.Partition{Device: devices[0], UID: uid, User: "u", SharePPM: pct * 10_000, Start: at(start), Expires: at(end)}
	if len(devices) > 1 {
		p.Devices = devices
	}
	return p
}

// ask is a request of share (percent) for length seconds, by uid, of the
// GPUs named (one, or several), created created seconds before t0.
func ask(uid int, pct int64, length, created int, devices ...int) domain.Request {
	r := domain.Request{Device: devices[0], UID: uid, User: "u", SharePPM: pct * 10_000, Duration: time.Duration(length) * time.Second,
		Created: at(-created)}
	if len(devices) > 1 {
		r.Devices = devices
	}
	return r
}

func anyOf(uid int, pct int64, length, created, count int) domain.Request {
	r := ask(uid, pct, length, created, domain.AnyDevice)
	r.Count = count
	return r
}

// A booking of several GPUs is admitted only when each of them has room
// for all of its length: one full GPU among them holds it all back.
func TestGangIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := gangBooks(t, 4, nil, []domain.Partition{booked(bobUID, 60, 0, 3600, 1)}, nil)
	r := ask(aliceUID, 50, 1800, 0, 0, 1)
	plan, err := b.Plan(&r)
	require.NoError(t, err)
	require.Nil(t, plan.CandPart, "GPU 1 has only 40% free")
	require.NotNil(t, plan.CandBlk)
	require.Equal(t, blockedDevice, plan.CandBlk.kind)
	require.Equal(t, 1, plan.CandBlk.gpu.Device, "the refusal names the GPU without room")
	require.Equal(t, at(3600), plan.Cand.ETA, "it starts when GPU 1 frees, on both")
	require.Equal(t, []int{0, 1}, plan.Cand.ETADevices)
	refusal := b.Refusal(plan.Cal, plan.CandBlk, plan.CandFit, t0, true).Error()
	require.Contains(t, refusal, "GPU 1 has 40%")

	r = ask(aliceUID, 50, 1800, 0, 0, 2)
	plan, err = b.Plan(&r)
	require.NoError(t, err)
	require.NotNil(t, plan.CandPart)
	require.Equal(t, []int{0, 2}, plan.CandPart.GPUs())
	require.Equal(t, []string{"SIM-a", "SIM-c"}, plan.CandPart.DeviceUUIDs)
	require.Equal(t, []GpuID{{Device: 0}, {Device: 2}}, GpusOf(*plan.CandPart))
	cal := CalendarOf([]domain.Partition{*plan.CandPart})
	require.Equal(t, int64(500_000), cal.BookedAt(GpuID{Device: 2}, t0), "the booking holds its share of each GPU")
	require.Equal(t, int64(0), cal.BookedAt(GpuID{Device: 1}, t0))
}

// A request for several GPUs that reaches the head of the line keeps
// those GPUs from its ETA: a smaller request behind it starts now only if
// it ends before then (conservative backfill), and one that would run
// into the reservation waits until after it.
func TestGangReservesAndSmallRequestsBackfill(t *testing.T) {
	t.Parallel()
	parts := []domain.Partition{booked(bobUID, 100, 0, 3600, 0)}
	gang := ask(aliceUID, 100, 7200, 600, 0, 1, 2, 3) // waiting ten minutes: the head of the line
	b := gangBooks(t, 4, nil, parts, []domain.Request{gang})
	plan, err := b.Plan(nil)
	require.NoError(t, err)
	require.Len(t, plan.Order, 1)
	require.Equal(t, at(3600), plan.Order[0].ETA)
	require.Equal(t, []int{0, 1, 2, 3}, plan.Order[0].ETADevices)

	short := ask(bobUID, 100, 1800, 0, 1)
	plan, err = b.Plan(&short)
	require.NoError(t, err)
	require.NotNil(t, plan.CandPart, "ending before the reservation, it uses the gap now")

	long := ask(bobUID, 100, 7200, 0, 1)
	plan, err = b.Plan(&long)
	require.NoError(t, err)
	require.Nil(t, plan.CandPart, "it would delay the gang")
	require.Equal(t, blockedReserved, plan.CandBlk.kind)
	require.Equal(t, at(3600+7200), plan.Cand.ETA, "it starts when the gang ends")

	anyOne := ask(bobUID, 100, 7200, 0, domain.AnyDevice)
	plan, err = b.Plan(&anyOne)
	require.NoError(t, err)
	require.Nil(t, plan.CandPart, "every GPU is kept for the gang from its ETA")
}

// any --gpus N picks, among the GPUs with room, the best connected: an
// NVLink pair before two GPUs across a PCIe switch, and says so.
func TestAnyGangPicksTheBestConnected(t *testing.T) {
	t.Parallel()
	topo := gpu.NewTopology(4)
	for a := range 4 {
		for c := a + 1; c < 4; c++ {
			topo.SetLink(a, c, gpu.Link{Level: gpu.LinkPCIeSwitch})
		}
	}
	topo.SetLink(0, 1, gpu.Link{Level: gpu.LinkNVLink, NVLinks: 4})
	topo.SetLink(2, 3, gpu.Link{Level: gpu.LinkNVLink, NVLinks: 4})
	b := gangBooks(t, 4, &topo, []domain.Partition{booked(bobUID, 100, 0, 3600, 1)}, nil)
	r := anyOf(aliceUID, 100, 3600, 0, 2)
	plan, err := b.Plan(&r)
	require.NoError(t, err)
	require.NotNil(t, plan.CandPart)
	require.Equal(t, []int{2, 3}, plan.CandPart.GPUs(), "GPU 1 is full: 2-3 are NVLinked, 0 and 2 only share a switch")
	require.Contains(t, plan.CandPart.Placement, "NVLink")

	// Three GPUs asked, three have room: those, whatever their links.
	r = anyOf(aliceUID, 100, 3600, 0, 3)
	plan, err = b.Plan(&r)
	require.NoError(t, err)
	require.Equal(t, []int{0, 2, 3}, plan.CandPart.GPUs())

	// Four asked: it waits for GPU 1, and says why.
	r = anyOf(aliceUID, 100, 3600, 0, 4)
	plan, err = b.Plan(&r)
	require.NoError(t, err)
	require.Nil(t, plan.CandPart)
	require.Equal(t, at(3600), plan.Cand.ETA)
	require.Equal(t, "only 3 of the GPUs of this host have 100% free over its length, 4 asked", plan.Cand.Reason)
	require.EqualError(t, b.Refusal(plan.Cal, plan.CandBlk, plan.CandFit, t0, true),
		"not enough free share on that GPU: only 3 of the GPUs of this host have 100% free over its length, 4 asked. It would fit at "+
			human.FormatTime(at(3600), t0)+" (--wait joins the line)")
}

// Quotas count a booking of several GPUs as that many shares.
func TestGangQuotaCountsEveryGPU(t *testing.T) {
	t.Parallel()
	b := gangBooks(t, 4, nil, []domain.Partition{booked(aliceUID, 100, 0, 3600, 3)}, nil)
	b.Pol.UserGPUs = new(2.5)
	r := ask(aliceUID, 100, 1800, 0, 0, 1, 2)
	_, err := b.Plan(&r)
	require.ErrorIs(t, err, domain.ErrQuota, "3 GPUs at once can never fit under 2.5")
	require.ErrorContains(t, err, "3 GPUs asked at once can never be granted")

	r = ask(aliceUID, 100, 1800, 0, 0, 1)
	plan, err := b.Plan(&r)
	require.NoError(t, err)
	require.Nil(t, plan.CandPart, "1 held and 2 asked is over 2.5")
	require.Equal(t, blockedGPUs, plan.CandBlk.kind)
	require.Equal(t, at(3600), plan.Cand.ETA)
	require.ErrorContains(t, b.Refusal(plan.Cal, plan.CandBlk, plan.CandFit, t0, true), "would hold 3 GPUs at once (1 already, 2 asked)")

	r = ask(aliceUID, 50, 1800, 0, 0, 1, 2)
	plan, err = b.Plan(&r)
	require.NoError(t, err)
	require.NotNil(t, plan.CandPart, "1 held and 3 × 0.5 asked is 2.5")
}

// Bad requests for several GPUs are refused with what is wrong.
func TestGangRequestsThatCanNeverStart(t *testing.T) {
	t.Parallel()
	b := gangBooks(t, 4, nil, nil, nil)
	r := ask(aliceUID, 50, 60, 0, 2, 3, 4, 5)
	_, err := b.Plan(&r)
	require.ErrorIs(t, err, domain.ErrNoDevice)
	require.ErrorContains(t, err, "GPU 4 (this machine has GPUs 0–3)")

	r = anyOf(aliceUID, 50, 60, 0, 8)
	_, err = b.Plan(&r)
	require.ErrorIs(t, err, domain.ErrNoDevice)
	require.EqualError(t, err, "no such GPU: 8 GPUs asked, and this host has 4")

	r = anyOf(aliceUID, 0, 60, 0, 2)
	r.Bytes = 100 << 30
	_, err = b.Plan(&r)
	require.ErrorContains(t, err, "100.0 GiB is more than GPU 3 has")
}

// earliest for a gang is the first instant at which every one of its
// GPUs has room for its whole length: checked against the calendar
// summed by hand, at every instant where room may appear, on random
// calendars.
func TestGangEarliestIsTheFirstFit(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 23))
	for range 2000 {
		cal := randomCalendar(rng, 1)
		n := 2 + rng.IntN(2)
		devs := rng.Perm(4)[:n]
		a := Ask{Gpu: GpuID{Device: devs[0]}, Gang: devs, Uid: 9, Share: int64(1+rng.IntN(10)) * 100_000,
			Length: time.Duration(1+rng.IntN(30)) * time.Second}
		for i := range cal {
			cal[i].gpu.Host = "" // one host: a gang is of one host's GPUs
			cal[i].gpu.Device = rng.IntN(4)
		}
		from := at(rng.IntN(30))
		got, _ := newLayout(cal).earliest(a, from)
		fits := func(t time.Time) bool {
			for _, g := range a.gpus() {
				if cal.Peak(onGPUOrKept(g), t, t.Add(a.Length))+a.Share > human.Ppm {
					return false
				}
			}
			return true
		}
		require.True(t, fits(got), "earliest %v does not fit", got)
		candidates := []time.Time{from}
		for _, s := range cal {
			if s.end.After(from) && s.end.Before(got) {
				candidates = append(candidates, s.end)
			}
		}
		for _, c := range candidates {
			if c.Before(got) {
				require.False(t, fits(c), "%v fits, before the earliest %v", c, got)
			}
		}
	}
}

// A GPU that leaves the inventory while a request for it waits (or keeps
// its place) takes the request out of the line, saying why, and frees
// what it kept.
func TestGangWaitingForAGPUThatIsGoneLeaves(t *testing.T) {
	t.Parallel()
	waiting := ask(aliceUID, 100, 3600, 60, 0, 1, 2, 3)
	b := gangBooks(t, 4, nil, []domain.Partition{booked(bobUID, 100, 0, 3600, 0)}, []domain.Request{waiting})
	plan, err := b.Plan(nil)
	require.NoError(t, err)
	require.Len(t, plan.Order, 1, "it waits, keeping 0-3 from 3600")

	inv := b.Invs[""]
	inv.Devices = inv.Devices[:3] // GPU 3 is gone
	b.Invs[""] = inv
	plan, err = b.Plan(nil)
	require.NoError(t, err)
	require.Empty(t, plan.Order)
	require.Len(t, plan.Leaves, 1)
	require.Equal(t, domain.Cancelled, plan.Leaves[0].State)
	require.Contains(t, plan.Leaves[0].Reason, "it can never be granted: no such GPU: GPU 3")
}
