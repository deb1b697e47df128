package admission

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

// GpuID is a GPU as fairness sees it: its host (empty in a host's own
// ledger file) and its index there. Two hosts' GPU 0 are two GPUs.
type GpuID struct {
	Host   string
	Device int
}

// GpusOf are the GPUs a booking holds.
func GpusOf(p domain.Partition) []GpuID {
	gs := make([]GpuID, 0, 1)
	for _, d := range p.GPUs() {
		gs = append(gs, GpuID{Host: p.Host, Device: d})
	}
	return gs
}

// noGPU marks a slot that holds no GPU: what an ended booking held, which
// only quotas and reports look back on.
var noGPU = GpuID{Device: domain.AnyDevice - 1}

// slot is one interval of the calendar: a share of a GPU held by a user
// over [start, end). Every booking is a slot, ended ones over the time they
// were held (the hours quota looks back); so is the place the line keeps
// for a request ahead that cannot start yet.
type slot struct {
	gpu        GpuID
	uid        int
	share      int64 // parts per million of the device
	start, end time.Time
	request    uint64 // a place kept for this waiting request; 0: a booking
}

// slotsOf are the intervals a booking holds (or held) its share: one on
// each of its GPUs.
func slotsOf(p domain.Partition) []slot {
	end := p.Expires
	if p.State == domain.Released && p.Ended.Before(end) {
		end = p.Ended
	}
	ss := make([]slot, 0, 1)
	for _, g := range GpusOf(p) {
		ss = append(ss, slot{gpu: g, uid: p.UID, share: p.SharePPM, start: p.Start, end: end})
	}
	return ss
}

// Calendar is the slots that admission weighs a request against.
type Calendar []slot

// CalendarOf is the calendar of a set of bookings.
func CalendarOf(parts []domain.Partition) Calendar {
	cal := make(Calendar, 0, len(parts))
	for _, p := range parts {
		for _, s := range slotsOf(p) {
			if s.end.After(s.start) {
				cal = append(cal, s)
			}
		}
	}
	return cal
}

// Peak is the most the matching slots hold at any instant of [from, to),
// in parts per million. The sum is piecewise constant and rises only where
// a slot starts, so a sweep over the starts and ends inside the interval
// finds it.
func (c Calendar) Peak(match func(slot) bool, from, to time.Time) int64 {
	type step struct {
		at    time.Time
		delta int64
	}
	var sum int64
	var steps []step
	for _, s := range c {
		if !match(s) || !s.start.Before(to) || !s.end.After(from) {
			continue
		}
		if s.start.After(from) {
			steps = append(steps, step{s.start, s.share})
		} else {
			sum += s.share
		}
		if s.end.Before(to) {
			steps = append(steps, step{s.end, -s.share})
		}
	}
	// At one instant, ends come before starts: intervals are half-open.
	slices.SortFunc(steps, func(a, b step) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta))
	})
	most := sum
	for _, st := range steps {
		sum += st.delta
		most = max(most, sum)
	}
	return most
}

// BookedAt is the share of g booked at instant t.
func (c Calendar) BookedAt(g GpuID, t time.Time) int64 {
	return c.Peak(onGPU(g), t, t.Add(time.Nanosecond))
}

func onGPU(g GpuID) func(slot) bool {
	return func(s slot) bool { return s.gpu == g && s.request == 0 }
}

func OfUser(uid int) func(slot) bool {
	return func(s slot) bool { return s.uid == uid }
}

// GpuSeconds is the share-weighted time the user's slots hold within
// [from, to): a 50% booking held an hour is 1,800.
func (c Calendar) GpuSeconds(uid int, from, to time.Time) float64 {
	var sum float64
	for _, s := range c {
		if s.uid != uid {
			continue
		}
		a, b := Later(s.start, from), Earlier(s.end, to)
		if b.After(a) {
			sum += float64(s.share) / human.Ppm * b.Sub(a).Seconds()
		}
	}
	return sum
}

// Ask is one request weighed against the calendar on one GPU, or on
// several of one host together: Share of each, all or nothing.
type Ask struct {
	Gpu GpuID // the GPU, the first of them when there are several
	// Gang are the indices of all the GPUs on Gpu's host when there are
	// several, Gpu's first; nil for one.
	Gang   []int
	Uid    int
	Share  int64 // of each GPU
	Length time.Duration
	Limits policy.Limits
}

// gpus are the GPUs a asks for.
func (a Ask) gpus() []GpuID {
	if len(a.Gang) == 0 {
		return []GpuID{a.Gpu}
	}
	gs := make([]GpuID, len(a.Gang))
	for i, d := range a.Gang {
		gs[i] = GpuID{Host: a.Gpu.Host, Device: d}
	}
	return gs
}

// total is what a holds on all its GPUs together, in parts per million
// of a GPU: what quotas count.
func (a Ask) total() int64 { return a.Share * int64(max(1, len(a.Gang))) }

// slots are the places a takes from start: one on each of its GPUs.
func (a Ask) slots(start time.Time, request uint64) []slot {
	gs := a.gpus()
	ss := make([]slot, len(gs))
	for i, g := range gs {
		ss[i] = slot{gpu: g, uid: a.Uid, share: a.Share, start: start, end: start.Add(a.Length), request: request}
	}
	return ss
}

// Why a request cannot start at an instant.
const (
	blockedDevice   = "device"    // the GPU is booked
	blockedReserved = "reserved"  // the room is kept for requests ahead in line
	blockedGPUs     = "user-gpus" // the user's quota of GPUs held at once
	blockedHours    = "user-hours"
)

// quota says whether b is one of the user's quotas (not a GPU's room).
func (b *blocker) quota() bool {
	return b != nil && (b.kind == blockedGPUs || b.kind == blockedHours || b.group != "")
}

// blocker is why a request cannot start at an instant, with the figure
// that stands in the way: the share booked or held (parts per million of
// a GPU), or the GPU-hours used. Quotas count across every host.
type blocker struct {
	kind   string
	gpu    GpuID
	group  string // the group whose cap it is (group-gpus, group-hours)
	figure float64
	asked  int // GPUs asked, when too few have room (blockedCount)
}

// Check says what stops a starting at start; nil: nothing.
func (c Calendar) Check(a Ask, start time.Time) *blocker {
	return newLayout(c).weigh(a).check(start)
}

// HoursPeak checks every rolling window that holds part of the new slot:
// the GPU-hours in it, with the new slot, may not pass the limit. The sum
// over a window is piecewise linear in where the window ends, so its most
// is at a window ending where some slot starts or ends, or a window's
// length after, or just after the new slot starts. It returns the
// GPU-hours the user has, before the new
// slot, in the window that the new slot fills fullest, and whether that
// window goes over.
func (c Calendar) HoursPeak(a Ask, start time.Time) (float64, bool) {
	w := a.Limits.HoursWindow
	limit := *a.Limits.UserHours * 3600
	// One slot of the whole share stands for the gang's: quotas count
	// N GPUs at a share each as N shares.
	fresh := Calendar{{gpu: a.Gpu, uid: a.Uid, share: a.total(), start: start, end: start.Add(a.Length)}}
	var mine Calendar
	for _, s := range c {
		if s.uid == a.Uid && s.end.After(start.Add(-w)) {
			mine = append(mine, s)
		}
	}
	held := mine.cumulative()
	last := fresh[0].end.Add(w)
	fullest, before := -1.0, 0.0
	for _, s := range append(mine, fresh[0]) {
		for _, t := range [5]time.Time{start, s.start, s.end, s.start.Add(w), s.end.Add(w)} {
			// Windows ending in (start, last] hold some of the new slot;
			// the one ending at start stands for those ending just after.
			if t.Before(start) || t.After(last) {
				continue
			}
			old := held.by(t) - held.by(t.Add(-w))
			if total := old + fresh.GpuSeconds(a.Uid, t.Add(-w), t); total > fullest {
				fullest, before = total, old
			}
		}
	}
	return before / 3600, fullest > limit+1e-6
}

// cumulative is the share-weighted time a set of slots has held by each
// instant: a piecewise linear function, kept as its breakpoints.
type cumulative struct {
	at   []time.Time
	sum  []float64 // GPU-seconds held by at[i]
	rate []float64 // GPUs held from at[i] to the next breakpoint
}

func (c Calendar) cumulative() cumulative {
	type step struct {
		at    time.Time
		delta float64
	}
	steps := make([]step, 0, 2*len(c))
	for _, s := range c {
		steps = append(steps, step{s.start, float64(s.share) / human.Ppm}, step{s.end, -float64(s.share) / human.Ppm})
	}
	slices.SortFunc(steps, func(a, b step) int { return a.at.Compare(b.at) })
	var f cumulative
	sum, rate := 0.0, 0.0
	for i, st := range steps {
		if i > 0 {
			sum += rate * st.at.Sub(steps[i-1].at).Seconds()
		}
		rate += st.delta
		if n := len(f.at); n > 0 && f.at[n-1].Equal(st.at) {
			f.rate[n-1] = rate
			continue
		}
		f.at, f.sum, f.rate = append(f.at, st.at), append(f.sum, sum), append(f.rate, rate)
	}
	return f
}

// by is the GPU-seconds held by instant t.
func (f cumulative) by(t time.Time) float64 {
	i, found := slices.BinarySearchFunc(f.at, t, time.Time.Compare)
	switch {
	case found:
		return f.sum[i]
	case i == 0:
		return 0
	}
	return f.sum[i-1] + f.rate[i-1]*t.Sub(f.at[i-1]).Seconds()
}

// never says why a could not start whatever the calendar held: it asks
// more than a quota allows by itself.
func (a Ask) never() *blocker {
	switch {
	case a.Limits.Exempt:
		return nil
	case a.Limits.UserGPUs != nil && float64(a.total()) > *a.Limits.UserGPUs*human.Ppm+0.5:
		return &blocker{kind: blockedGPUs, gpu: a.Gpu}
	case a.Limits.UserHours != nil && a.gpuHours() > *a.Limits.UserHours+1e-9:
		return &blocker{kind: blockedHours, gpu: a.Gpu}
	}
	return a.neverInGroups()
}

// layout is a calendar with its slots kept by GPU and by user, each as
// the changes of what they hold in time order: laying out a line of
// hundreds weighs each request at hundreds of starts against a calendar
// that grows by a slot each time, and sorting it anew each time would cost
// the line's length squared. A GPU's or user's track is laid out from the
// calendar the first time a request asks for it, as a group's is: a
// booking made with nobody waiting weighs its own GPUs and owner only.
type layout struct {
	cal    Calendar
	gpus   map[GpuID]*track
	users  map[int]*track
	groups groupTracks // of the capped groups weighed so far
}

// track is the slots of one GPU, user or group, and what they hold over
// time: the bookings alone, and with the places kept for requests, laid
// out from the slots when first asked for (see lay).
type track struct {
	slots       Calendar
	laid        bool
	booked, all steps
}

func newLayout(c Calendar) *layout {
	return &layout{cal: slices.Clip(c), gpus: map[GpuID]*track{}, users: map[int]*track{}}
}

// add puts s in the calendar, and on the tracks already laid out.
func (l *layout) add(s slot) {
	l.cal = append(l.cal, s)
	if t, ok := l.gpus[s.gpu]; ok {
		t.put(s)
	}
	if t, ok := l.users[s.uid]; ok {
		t.put(s)
	}
	l.groups.add(s)
}

// gpu is g's track.
func (l *layout) gpu(g GpuID) *track {
	return trackOf(l.gpus, g, l.cal, func(s slot) bool { return s.gpu == g })
}

// user is uid's track.
func (l *layout) user(uid int) *track {
	return trackOf(l.users, uid, l.cal, func(s slot) bool { return s.uid == uid })
}

// put puts s on t, and on its steps once they are laid out.
func (t *track) put(s slot) {
	t.slots = append(t.slots, s)
	if !t.laid || !s.end.After(s.start) {
		return
	}
	t.all.add(s.start, s.end, s.share)
	if s.request == 0 {
		t.booked.add(s.start, s.end, s.share)
	}
}

// lay lays t's steps out from its slots, the first time they are asked
// for, all at once (see stepsOf): a user's track is asked for its steps
// only under a user-gpus cap.
func (t *track) lay() *track {
	if !t.laid {
		t.all = stepsOf(t.slots, func(slot) bool { return true })
		if slices.ContainsFunc(t.slots, func(s slot) bool { return s.request != 0 }) {
			t.booked = stepsOf(t.slots, func(s slot) bool { return s.request == 0 })
		} else {
			t.booked = steps{at: slices.Clone(t.all.at), sum: slices.Clone(t.all.sum)} // its own: puts change each apart
		}
		t.laid = true
	}
	return t
}

// trackOf is m's track for k: the slots of cal that are its, gathered the
// first time it is asked for.
func trackOf[K comparable](m map[K]*track, k K, cal Calendar, its func(slot) bool) *track {
	if t, ok := m[k]; ok {
		return t
	}
	t := &track{}
	for _, s := range cal {
		if its(s) {
			t.slots = append(t.slots, s)
		}
	}
	m[k] = t
	return t
}

// stepsOf is what the slots of cal that in takes hold over time: the
// steps their adds one by one make (see put), laid out at once. Sorting
// their starts and ends costs n log n; adding them one by one cost n²,
// each add moving the steps after it: the admission of a member's create
// among 700 of their live bookings took 2.5 ms (0.7 ms laid out at once,
// BenchmarkCreateAmongManyBookings).
func stepsOf(cal Calendar, in func(slot) bool) steps {
	type edge struct {
		sec   int64 // at, to sort by, as seconds and nanoseconds: any time a ledger holds
		nsec  int
		at    time.Time
		delta int64
	}
	edgeAt := func(t time.Time, delta int64) edge { return edge{t.Unix(), t.Nanosecond(), t, delta} }
	edges := make([]edge, 0, 2*len(cal))
	for _, s := range cal {
		if in(s) && s.end.After(s.start) {
			edges = append(edges, edgeAt(s.start, s.share), edgeAt(s.end, -s.share))
		}
	}
	if len(edges) == 0 {
		return steps{}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec)) })
	f := steps{at: make([]time.Time, 0, len(edges)), sum: make([]int64, 0, len(edges))}
	var held int64
	for i, e := range edges {
		held += e.delta
		if i+1 < len(edges) && edges[i+1].sec == e.sec && edges[i+1].nsec == e.nsec {
			continue // one step for every edge at this instant
		}
		f.at, f.sum = append(f.at, e.at), append(f.sum, held)
	}
	return f
}

// weighing is one request weighed against a layout: what each of its
// GPUs and its owner hold, as steps.
type weighing struct {
	a         Ask
	gpus      []GpuID
	booked    []steps // each GPU's bookings
	kept      []steps // and with the places kept
	mine      steps   // the owner's, on every GPU and host (user-gpus)
	mineSlots Calendar
	groups    []groupWeighing // the owner's capped groups
}

func (l *layout) weigh(a Ask) weighing {
	u := l.user(a.Uid)
	w := weighing{a: a, gpus: a.gpus(), mineSlots: u.slots, groups: l.weighGroups(a)}
	for _, g := range w.gpus {
		t := l.gpu(g).lay()
		w.booked, w.kept = append(w.booked, t.booked), append(w.kept, t.all)
	}
	if a.Limits.UserGPUs != nil && !a.Limits.Exempt {
		w.mine = u.lay().all
	}
	return w
}

// check says what stops the request starting at start; nil: nothing. A
// booked GPU stops it before a kept place on another: what is booked
// frees only when a booking ends.
func (w weighing) check(start time.Time) *blocker {
	if blk := w.room(start); blk != nil {
		return blk
	}
	return w.quota(start)
}

// room says which of the request's GPUs lacks room from start.
func (w weighing) room(start time.Time) *blocker {
	a := w.a
	end := start.Add(a.Length)
	for i, g := range w.gpus {
		if used := w.booked[i].mostIn(start, end); used+a.Share > human.Ppm {
			return &blocker{kind: blockedDevice, gpu: g, figure: float64(used)}
		}
	}
	for i, g := range w.gpus {
		if used := w.kept[i].mostIn(start, end); used+a.Share > human.Ppm {
			return &blocker{kind: blockedReserved, gpu: g, figure: float64(used)}
		}
	}
	return nil
}

// quota says which of the owner's quotas stops the request from start.
func (w weighing) quota(start time.Time) *blocker {
	a := w.a
	end := start.Add(a.Length)
	if a.Limits.Exempt {
		return nil
	}
	if lim := a.Limits.UserGPUs; lim != nil {
		if held := w.mine.mostIn(start, end); float64(held+a.total()) > *lim*human.Ppm+0.5 {
			return &blocker{kind: blockedGPUs, gpu: a.Gpu, figure: float64(held)}
		}
	}
	if a.Limits.UserHours != nil {
		if used, over := w.mineSlots.HoursPeak(a, start); over {
			return &blocker{kind: blockedHours, gpu: a.Gpu, figure: used}
		}
	}
	return w.checkGroups(start, end)
}

// earliest is the first instant at or after from when a fits, and what
// stops it at from (nil when it starts at from). The calendar's slots all
// end, so a request that is not refused by never() always fits somewhere:
// at the latest once every slot it meets has ended, and for the hours
// quota, a window after that.
func (l *layout) earliest(a Ask, from time.Time) (time.Time, *blocker) {
	w := l.weigh(a)
	first := w.check(from)
	if first == nil {
		return from, nil
	}
	if len(w.groups) > 0 {
		return w.earliestInGroups(l, from), first
	}
	if a.Limits.UserHours != nil && !a.Limits.Exempt {
		return w.earliestByHours(l, from), first
	}
	// Room on each GPU, and under user-gpus, can each only appear where
	// one of its slots ends: go from the first instant with room on every
	// GPU to the first with room under the quota, and back, until both
	// hold.
	quotaRoom := int64(math.MaxInt64) // no user-gpus: only the GPUs stop it
	if lim := a.Limits.UserGPUs; lim != nil {
		quotaRoom = int64(math.Floor(*lim*human.Ppm+0.5)) - a.total()
	}
	for t, ok := from, true; ok; {
		if t, ok = w.roomFrom(t); !ok || w.check(t) == nil {
			return t, first
		}
		// Only user-gpus stops it at t.
		if t, ok = w.mine.roomFrom(t, a.Length, quotaRoom); ok && w.check(t) == nil {
			return t, first
		}
	}
	// Not reached for a request never() allows; fail safe, not forever.
	return time.Time{}, first
}

// roomFrom is the first start at or after t when every GPU of the
// request has room over its length: each GPU's first start moves the
// others' on, until all agree.
func (w weighing) roomFrom(t time.Time) (time.Time, bool) {
	room := human.Ppm - w.a.Share
	for moved := true; moved; {
		moved = false
		for _, k := range w.kept {
			next, ok := k.roomFrom(t, w.a.Length, room)
			if !ok {
				return time.Time{}, false
			}
			if next.After(t) {
				t, moved = next, true
			}
		}
	}
	return t, true
}

// earliestByHours is earliest under an hours quota, which frees as old
// use slides out of its window as well as where slots end: it weighs
// every instant where room may appear — where a slot of the GPU or of its
// owner ends, or where one leaves the window ending when a would end —
// then refines.
func (w weighing) earliestByHours(l *layout, from time.Time) time.Time {
	a := w.a
	var at []time.Time
	consider := func(t time.Time) {
		if t.After(from) {
			at = append(at, t)
		}
	}
	for _, g := range w.gpus {
		for _, s := range l.gpu(g).slots {
			consider(s.end)
		}
	}
	win := a.Limits.HoursWindow
	for _, s := range w.mineSlots {
		consider(s.end)
		consider(s.start.Add(win - a.Length))
		consider(s.end.Add(win - a.Length))
		consider(s.start.Add(win))
		consider(s.end.Add(win))
	}
	w.groupInstants(consider)
	slices.SortFunc(at, time.Time.Compare)
	prev := from
	for _, t := range slices.Compact(at) {
		if w.check(t) != nil {
			prev = t
			continue
		}
		return w.refine(prev, t)
	}
	return time.Time{}
}

// refine moves a start that fits earlier, towards one that does not, while
// it still fits: the hours quota frees continuously as old use slides out
// of the window, not only where slots begin or end.
func (w weighing) refine(bad, good time.Time) time.Time {
	for good.Sub(bad) > time.Second {
		mid := bad.Add(good.Sub(bad) / 2)
		if w.check(mid) == nil {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// steps is what a set of slots holds over time, a step function: from
// at[i] until at[i+1] they hold sum[i] (before at[0], nothing).
type steps struct {
	at  []time.Time
	sum []int64
}

// add adds delta to what f holds over [from, to): a slot kept up to date
// as the line is laid out, rather than summed again for every request.
func (f *steps) add(from, to time.Time, delta int64) {
	i, j := f.split(from), f.split(to)
	for k := i; k < j; k++ {
		f.sum[k] += delta
	}
}

// split makes a step start at t, holding what held there, and returns its
// index.
func (f *steps) split(t time.Time) int {
	i, found := slices.BinarySearchFunc(f.at, t, time.Time.Compare)
	if found {
		return i
	}
	var held int64
	if i > 0 {
		held = f.sum[i-1]
	}
	f.at, f.sum = slices.Insert(f.at, i, t), slices.Insert(f.sum, i, held)
	return i
}

// holding is the step that holds at t: -1 before the first.
func (f steps) holding(t time.Time) int {
	i, found := slices.BinarySearchFunc(f.at, t, time.Time.Compare)
	if !found {
		i--
	}
	return i
}

// mostIn is the most f holds at any instant of [from, to).
func (f steps) mostIn(from, to time.Time) int64 {
	var most int64
	for i := max(f.holding(from), 0); i < len(f.at) && f.at[i].Before(to); i++ {
		most = max(most, f.sum[i])
	}
	return most
}

// roomFrom is the first start at or after t over whose length f never
// holds more than limit; false when there is none.
func (f steps) roomFrom(t time.Time, length time.Duration, limit int64) (time.Time, bool) {
	if limit < 0 {
		return time.Time{}, false
	}
	i := f.holding(t)
	for {
		if i >= 0 && f.sum[i] > limit {
			// Too much from at[i] on: no start before the next step.
			if i+1 == len(f.at) {
				return time.Time{}, false
			}
			i++
			t = f.at[i]
			continue
		}
		k := i + 1
		for k < len(f.at) && f.at[k].Before(t.Add(length)) && f.sum[k] <= limit {
			k++
		}
		if k == len(f.at) || !f.at[k].Before(t.Add(length)) {
			return t, true
		}
		i = k // too much from at[k] on, within the length
	}
}

func Later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func Earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
