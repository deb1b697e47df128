package admission

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
)

// Books is what admission and the waiting line read in one transaction:
// every host's, since quotas and fair share are the lab's.
type Books struct {
	// heldSince reads the intervals a user's ended bookings held since an
	// instant, while the transaction lasts (nil once it has ended).
	HeldSince func(uid int, since time.Time) ([]domain.Held, error)
	Now       time.Time
	Here      string                      // this host's name in the ledger ("" in a file)
	Invs      map[string]domain.Inventory // every host's GPUs, by host
	Gpus      int                         // how many GPUs all hosts have: the capacity fair share is measured against
	Pol       domain.Policy
	Parts     []domain.Partition // stored live: started, ahead, or past their deadline and not yet flipped
	Line      []domain.Request   // waiting, oldest first
	Usage     []domain.UserUsage // read when someone waits: it orders the line
	// limits caches each user's limits for this transaction; heldBy, the
	// held intervals of users with an hours quota, read by readHeld.
	Limits map[int]policy.Limits
	HeldBy map[int]Calendar
	// alive says whether a request's waiting process still runs.
	Alive func(domain.Request) bool
	// topos caches each host's topology (see topology).
	topos map[string]gpu.Topology
	// onBehalf is the user root books for (create --user, extending their
	// booking): quota refusals name them. "": the caller's own.
	OnBehalf string
	// laid is the users whose held intervals the last plan laid out.
	laid map[int]bool
}

// gpuName names g as people on this host type it: gpu3:0, or 0 for this
// host's.
func (b *Books) gpuName(g GpuID) string { return GpuName(b.Here, g.Host, g.Device) }

// Held is what the ended bookings held, within the longest window of the
// policy, of the users given who have an hours quota (their limits looked
// up already) and of the members of their groups with an hours cap: those
// that the last plan laid out left out.
func (b *Books) Held(uids ...int) (Calendar, error) {
	var cal Calendar
	done := b.laid // not twice in one plan's calendar
	if done == nil {
		done = map[int]bool{}
	}
	for _, uid := range b.heldNeeded(uids) {
		if done[uid] {
			continue
		}
		done[uid] = true
		held, ok := b.HeldBy[uid]
		if !ok {
			if b.HeldSince == nil {
				return nil, fmt.Errorf("core: the held intervals of uid %d were not read in the transaction", uid)
			}
			rows, err := b.HeldSince(uid, b.Now.Add(-LongestWindow(b.Pol)))
			if err != nil {
				return nil, err
			}
			held = HeldSlots(rows, uid)
			b.HeldBy[uid] = held
		}
		cal = append(cal, held...)
	}
	return cal, nil
}

// ReadHeld reads, while the transaction lasts, the held intervals that
// laying out the line will weigh: those of everyone waiting.
func (b *Books) ReadHeld() error {
	uids := make([]int, 0, len(b.Line))
	for _, r := range b.Line {
		b.LimitsFor(r.UID, r.User)
		uids = append(uids, r.UID)
	}
	_, err := b.Held(uids...)
	return err
}

func (b *Books) LimitsFor(uid int, name string) policy.Limits {
	l, ok := b.Limits[uid]
	if !ok {
		l = policy.LimitsFor(b.Pol, domain.Identity{UID: uid, User: name})
		b.Limits[uid] = l
	}
	return l
}

// devicesFor resolves a request's GPU on its host: the one named, or
// every GPU of the host for any. It is the one place a device is looked
// up for booking.
func (b *Books) devicesFor(host string, index int) ([]domain.Device, error) {
	inv, ok := b.Invs[host]
	if !ok {
		return nil, fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", domain.ErrNoDevice, host)
	}
	if index == domain.AnyDevice && len(inv.Devices) > 0 {
		return inv.Devices, nil
	}
	d, err := FindDevice(inv, index)
	if err != nil && host != b.Here {
		err = fmt.Errorf("on host %s: %w", host, err)
	}
	if err != nil {
		return nil, err
	}
	return []domain.Device{d}, nil
}

// gangOf resolves the GPUs a request for several named GPUs asks for.
func (b *Books) gangOf(r domain.Request) ([]domain.Device, error) {
	devs := make([]domain.Device, 0, len(r.Devices))
	for _, i := range r.Devices {
		d, err := b.devicesFor(r.Host, i)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d[0])
	}
	return devs, nil
}

// askOnAll is r weighed on the devices devs of its host together: a size
// asked is the same share of each, the largest it is of any of them, so
// that each holds at least the size.
func (b *Books) askOnAll(r domain.Request, devs []domain.Device) (Ask, error) {
	a, err := b.askOn(r, devs[0])
	if err != nil || len(devs) == 1 {
		return a, err
	}
	a.Gang = make([]int, len(devs))
	for i, d := range devs {
		a.Gang[i] = d.Index
		if r.Bytes > 0 {
			share, err := shareOf(human.Bytes(r.Bytes), d)
			if err != nil {
				return Ask{}, err
			}
			a.Share = max(a.Share, share)
		}
	}
	return a, nil
}

// askOn is r weighed on device d of its host.
func (b *Books) askOn(r domain.Request, d domain.Device) (Ask, error) {
	share := r.SharePPM
	if r.Bytes > 0 {
		var err error
		if share, err = shareOf(human.Bytes(r.Bytes), d); err != nil {
			return Ask{}, err
		}
	}
	return Ask{Gpu: GpuID{Host: r.Host, Device: d.Index}, Uid: r.UID, Share: share, Length: r.Duration, Limits: b.LimitsFor(r.UID, r.User)}, nil
}

// Fit is where and when a request can start: on Devs of Ask.Gpu's host
// (one, or those of a booking of several), and for any several GPUs, why
// those.
type Fit struct {
	Devs      []domain.Device
	Ask       Ask
	Placement string
	start     time.Time
}

// Dev is the (first) GPU of the fit.
func (f Fit) Dev() domain.Device {
	if len(f.Devs) == 0 {
		return domain.Device{Index: f.Ask.Gpu.Device}
	}
	return f.Devs[0]
}

// possible says why r could never be granted, whatever the calendar held:
// no such GPU, more than a GPU has, longer than allowed, more than a quota
// allows by itself. Nil: it can, some time.
func (b *Books) possible(r domain.Request) error {
	devs, err := b.devicesFor(r.Host, r.Device)
	if err != nil {
		return err
	}
	if err := CheckLength(b.LimitsFor(r.UID, r.User), r.Duration, b.Now, b.Now); err != nil {
		return err
	}
	switch {
	case len(r.Devices) > 1:
		if devs, err = b.gangOf(r); err != nil {
			return err
		}
		return b.possibleOn(r, devs)
	case r.Count > 1:
		return b.possibleAny(r, devs)
	}
	var first error
	for _, d := range devs {
		a, err := b.askOn(r, d)
		if err == nil {
			if blk := a.never(); blk == nil {
				return nil
			} else {
				err = b.neverRefusal(blk, a)
			}
		}
		first = cmp.Or(first, err)
	}
	return first
}

// earliest is where and when r can first start at or after from, and what
// stops it at from (nil: it starts at from). Among GPUs that fit as soon,
// the first listed wins; what stops it is a quota when a quota stops it
// on one of them: a full GPU 0 is not why "any" waits when GPU 1 has room
// the user's quota keeps them from.
func (b *Books) earliest(lay *layout, r domain.Request, from time.Time) (Fit, *blocker) {
	switch {
	case len(r.Devices) > 1:
		return b.earliestOn(lay, r, from)
	case r.Count > 1:
		return b.earliestAny(lay, r, from)
	}
	devs, _ := b.devicesFor(r.Host, r.Device)
	var best Fit
	var why *blocker
	for _, d := range devs {
		a, err := b.askOn(r, d)
		if err != nil || a.never() != nil {
			continue
		}
		t, blk := lay.earliest(a, from)
		switch {
		case t.IsZero():
		case best.start.IsZero() || t.Before(best.start):
			best, why = Fit{Devs: []domain.Device{d}, Ask: a, start: t}, blk
		case t.Equal(best.start) && blk.quota() && !why.quota():
			why = blk
		}
	}
	return best, why
}

// booking is the booking r gets at f.
func (b *Books) booking(r domain.Request, f Fit) domain.Partition {
	dev := f.Dev()
	bytes := r.Bytes
	if bytes == 0 {
		bytes = BytesOf(f.Ask.Share, dev.MemoryTotal)
	}
	p := domain.Partition{Host: f.Ask.Gpu.Host, Device: dev.Index, DeviceUUID: dev.UUID, SharePPM: f.Ask.Share, Bytes: bytes,
		ComputePct: r.ComputePct, UID: r.UID, User: r.User, Created: b.Now, Start: f.start,
		Expires: f.start.Add(r.Duration), State: domain.Live}
	if len(f.Devs) > 1 {
		p.Placement = f.Placement
		for _, d := range f.Devs {
			p.Devices, p.DeviceUUIDs = append(p.Devices, d.Index), append(p.DeviceUUIDs, d.UUID)
		}
	}
	return p
}

// QueueEntry is one request in the waiting line as it stands now.
type QueueEntry struct {
	domain.Request
	Position int     `json:"position"` // 1 is next
	Factor   float64 `json:"fair_share"`
	Priority float64 `json:"priority"`
	// ETA is when it should start, given the bookings and the requests
	// ahead of it; ETADevice the GPU of its host it would start on, and
	// for several, ETADevices all of them: the GPUs the line keeps for it
	// from then, which requests behind it may use only until then.
	ETA        time.Time `json:"eta"`
	ETADevice  int       `json:"eta_device"`
	ETADevices []int     `json:"eta_devices,omitempty"`
	Placement  string    `json:"placement,omitempty"` // why those GPUs, for any several
	Reason     string    `json:"reason"`              // why it cannot start now
}

type grant struct {
	Req  domain.Request
	Part domain.Partition
}

// LinePlan is what one pass over the line decides.
type LinePlan struct {
	Order  []QueueEntry     // still waiting, in order
	Grants []grant          // start now (or at their --at)
	Leaves []domain.Request // leave unbooked, with why
	// cal is the calendar with every grant and the places kept for the
	// requests still waiting, and what the ended bookings of heldOf's
	// users held (for their hours quotas).
	Cal    Calendar
	HeldOf map[int]bool
	// The request being made, when there is one: booked, or its entry and
	// what stops it now.
	CandPart *domain.Partition
	Cand     *QueueEntry
	CandFit  Fit
	CandBlk  *blocker
}

func (p LinePlan) Pending() bool { return len(p.Grants)+len(p.Leaves) > 0 }

// keptForCandidate marks the place kept for a request not yet stored.
const keptForCandidate = math.MaxUint64

// Plan orders the line and places it on the calendar: requests whose time
// ran out or whose process is gone leave; the rest go in priority order,
// each starting now if it fits beside the bookings and the places kept for
// those ahead, else keeping its own place at its ETA (conservative
// backfill: nobody behind can delay it). cand is a request being made now,
// weighed like the others; an error says it could never be granted.
func (b *Books) Plan(cand *domain.Request) (LinePlan, error) {
	var p LinePlan
	var entries []QueueEntry
	for _, r := range b.Line {
		if state, why := b.leaving(r); why != "" {
			r.State, r.Reason, r.Ended = state, why, b.Now
			p.Leaves = append(p.Leaves, r)
			continue
		}
		entries = append(entries, QueueEntry{Request: r})
	}
	if cand != nil {
		if err := b.possible(*cand); err != nil {
			return p, err
		}
		entries = append(entries, QueueEntry{Request: *cand})
	}
	if len(b.Line) > 0 {
		b.prioritise(entries)
	}
	p.Cal = CalendarOf(b.Parts)
	p.HeldOf = map[int]bool{}
	for _, e := range entries {
		b.LimitsFor(e.UID, e.User)
		p.HeldOf[e.UID] = true
	}
	b.laid = map[int]bool{}
	held, err := b.Held(slices.Collect(maps.Keys(p.HeldOf))...)
	if err != nil {
		return p, err
	}
	lay := newLayout(append(p.Cal, held...))
	for _, e := range entries {
		from := Later(b.Now, e.NotBefore)
		f, blk := b.earliest(lay, e.Request, from)
		isCand := cand != nil && e.ID == 0
		if f.start.IsZero() {
			continue // possible() said it can; keep no place rather than a wrong one
		}
		if blk == nil {
			part := b.booking(e.Request, f)
			for _, s := range slotsOf(part) {
				lay.add(s)
			}
			if isCand {
				p.CandPart = &part
			} else {
				p.Grants = append(p.Grants, grant{Req: e.Request, Part: part})
			}
			continue
		}
		e.Position, e.ETA, e.ETADevice, e.Placement, e.Reason = len(p.Order)+1, f.start, f.Dev().Index, f.Placement, b.reason(blk, f.Ask)
		if len(f.Devs) > 1 {
			e.ETADevices = f.Ask.Gang
		}
		keep := e.ID
		if isCand {
			keep = keptForCandidate
		}
		for _, s := range f.Ask.slots(f.start, keep) {
			lay.add(s)
		}
		p.Order = append(p.Order, e)
		if isCand {
			p.Cand, p.CandFit, p.CandBlk = &e, f, blk
		}
	}
	p.Cal = lay.cal
	return p, nil
}

// leaving says why a waiting request leaves the line unbooked, if it does.
func (b *Books) leaving(r domain.Request) (domain.RequestState, string) {
	switch {
	case !r.Deadline.IsZero() && !b.Now.Before(r.Deadline):
		return domain.TimedOut, fmt.Sprintf("waited %s (--timeout)", human.FormatDuration(r.Deadline.Sub(r.Created)))
	case !b.Alive(r):
		return domain.Cancelled, fmt.Sprintf("its waiting process (pid %d on %s) is gone", r.Waiter.PID, r.Waiter.Host)
	}
	if err := b.possible(r); err != nil {
		return domain.Cancelled, "it can never be granted: " + err.Error()
	}
	return "", ""
}

// prioritise computes each entry's fair-share factor and priority, and
// sorts them: highest priority first, then the oldest.
func (b *Books) prioritise(entries []QueueEntry) {
	used := UsageAt(b.Usage, b.Parts, b.Now, b.Pol.HalfLife)
	for i := range entries {
		e := &entries[i]
		e.Factor = FairShare(used[e.UID], b.Gpus, b.Pol.HalfLife, b.LimitsFor(e.UID, e.User).Share)
		e.Priority = Priority(e.Factor, b.Now.Sub(e.Created), b.Pol)
	}
	slices.SortStableFunc(entries, func(x, y QueueEntry) int {
		return cmp.Or(cmp.Compare(y.Priority, x.Priority), x.Created.Compare(y.Created), cmp.Compare(x.ID, y.ID))
	})
}

// What one request's leaving the line, or its grant, writes: the request
// and its waiting index entry, and its event ("left"); or those and its
// booking with the booking's live index entry (the event is "created").
const (
	LeaveWrites = 3
	GrantWrites = 5
)

// PlanRead lays the line out on books that readLine read in a transaction
// that has ended: the same plan lineIn makes, from the same snapshot.
func (b *Books) PlanRead() (LinePlan, error) {
	b.HeldSince = nil
	return b.Plan(nil)
}

// DescribeBooking is what a "created" event says of a booking.
func DescribeBooking(p domain.Partition) string {
	s := fmt.Sprintf("%s (%s) of GPU %s for %s", human.FormatPercent(p.SharePPM), human.FormatBytes(p.Bytes), human.FormatGPUs(p.Host, p.GPUs()), human.FormatDuration(p.Expires.Sub(p.Start)))
	if p.Start.After(p.Created) {
		s += ", from " + p.Start.UTC().Format(time.RFC3339)
	}
	return s
}

func OwnerOf(r domain.Request) domain.Identity { return domain.Identity{UID: r.UID, User: r.User} }

func LineDetail(r domain.Request, why string) string {
	return fmt.Sprintf("request %d (%s): %s", r.ID, DescribeRequest(r), why)
}

// DescribeRequest says what a request asks: "50% of GPU 0 for 2h", "50%
// of any GPU of gpu3 for 2h".
func DescribeRequest(r domain.Request) string {
	what := human.FormatPercent(r.SharePPM)
	if r.Bytes > 0 {
		what = human.FormatBytes(r.Bytes)
	}
	gpuName := "GPU " + human.FormatGPU(r.Host, r.Device)
	anyGPU := "any GPU"
	if r.Count > 1 {
		anyGPU = fmt.Sprintf("any %d GPUs", r.Count)
	}
	switch {
	case len(r.Devices) > 1:
		gpuName = "GPU " + human.FormatGPUs(r.Host, r.Devices)
	case r.Device != domain.AnyDevice:
	case r.Host == "":
		gpuName = anyGPU
	default:
		gpuName = anyGPU + " of " + r.Host
	}
	s := fmt.Sprintf("%s of %s for %s", what, gpuName, human.FormatDuration(r.Duration))
	if !r.NotBefore.IsZero() {
		s += ", from " + r.NotBefore.UTC().Format(time.RFC3339)
	}
	if r.User != "" {
		s += ", " + r.User
	}
	return s
}

// WaitOptions say how a request waits in line.
type WaitOptions struct {
	// Timeout is how long it waits before it leaves the line (0: for ever).
	Timeout time.Duration
	// PID is the waiting process (0: this one); when it is gone, the
	// request leaves the line.
	PID int
}

const JoinTries = 3

// ErrGranted says the request left the line with a booking.
var ErrGranted = errors.New("already granted")

// Soonest is the earlier of two instants, a zero one not counting.
func Soonest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// LayoutEvery is how long a waiter leaves between laying out a line of n
// after the ledger changed: a second, and for a long line longer, so that
// all its waiters together lay it out about twenty times a second at most
// (a line of 200 takes some 5 ms to read and lay out, much more on a
// loaded machine); plus as much again at random, so that the waiters a
// change woke together do not read together.
func LayoutEvery(n int) time.Duration {
	d := max(time.Second, time.Duration(n)*50*time.Millisecond)
	return d + rand.N(d)
}

// SettleFor is how long, at most, a waiter in a line of n lets a change
// settle before it reads its request: 10 ms a waiter, up to 2 s — so that
// a line's waiters read about two hundred times a second at most after a
// burst of changes (a file's readers hold its writers off), and each
// learns of its booking within a second in a line of up to a hundred,
// within two in a longer one.
func SettleFor(n int) time.Duration {
	return min(time.Duration(max(n, 1))*10*time.Millisecond, 2*time.Second)
}
