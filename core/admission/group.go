package admission

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
)

// Why a request cannot start, for a group's cap.
const (
	blockedGroupGPUs  = "group-gpus"
	blockedGroupHours = "group-hours"
)

// neverInGroups says why a could never start under its groups' caps: it
// asks more than one allows by itself.
func (a Ask) neverInGroups() *blocker {
	for _, c := range a.Limits.Groups {
		switch {
		case c.GPUs != nil && float64(a.total()) > *c.GPUs*human.Ppm+0.5:
			return &blocker{kind: blockedGroupGPUs, gpu: a.Gpu, group: c.Group}
		case c.Hours != nil && a.gpuHours() > *c.Hours+1e-9:
			return &blocker{kind: blockedGroupHours, gpu: a.Gpu, group: c.Group}
		}
	}
	return nil
}

// asGroup is the uid a group's track keeps its members' slots under, so
// that the hours check reads them as one user's: no user has it.
const asGroup = math.MinInt

// groupTracks are a layout's tracks of the capped groups its requests
// are weighed against, each holding its members' slots; kept up to date
// as the line is laid out, like the GPUs' and users' tracks.
type groupTracks struct {
	of     map[string]*track
	groups map[int][]string // each uid's groups, looked up once a layout
}

// in says whether uid is a member of group, as LimitsFor looks it up.
func (g *groupTracks) in(uid int, group string) bool {
	names, ok := g.groups[uid]
	if !ok {
		if g.groups == nil {
			g.groups = map[int][]string{}
		}
		names = proc.GroupsOf(uid)
		g.groups[uid] = names
	}
	return slices.Contains(names, group)
}

// add puts s on the tracks of its owner's groups.
func (g *groupTracks) add(s slot) {
	for name, t := range g.of {
		if g.in(s.uid, name) {
			s.uid = asGroup
			t.put(s)
		}
	}
}

// track is group's track, laid out from cal the first time it is asked.
func (g *groupTracks) track(cal Calendar, group string) *track {
	if t, ok := g.of[group]; ok {
		return t
	}
	t := &track{}
	for _, s := range cal {
		if g.in(s.uid, group) {
			s.uid = asGroup
			t.slots = append(t.slots, s)
		}
	}
	if g.of == nil {
		g.of = map[string]*track{}
	}
	g.of[group] = t
	return t
}

// groupWeighing is one capped group of a request's owner, as the request
// weighs it: the cap and what its members hold.
type groupWeighing struct {
	cap   policy.GroupCap
	track *track
}

func (l *layout) weighGroups(a Ask) []groupWeighing {
	if a.Limits.Exempt {
		return nil
	}
	var out []groupWeighing
	for _, c := range a.Limits.Groups {
		if c.Capped() {
			out = append(out, groupWeighing{cap: c, track: l.groups.track(l.cal, c.Group).lay()})
		}
	}
	return out
}

// hoursAsk is a weighed as the hours check weighs a user's: the group's
// slots are one user's, and its cap their quota.
func (g groupWeighing) hoursAsk(a Ask) Ask {
	a.Uid, a.Limits = asGroup, policy.Limits{UserHours: g.cap.Hours, HoursWindow: g.cap.Window}
	return a
}

// checkGroups says which cap of the request's groups stops it over
// [start, end); nil: none. Every member's slots count, the request's
// owner's too, at every instant.
func (w weighing) checkGroups(start, end time.Time) *blocker {
	a := w.a
	for _, g := range w.groups {
		if lim := g.cap.GPUs; lim != nil {
			if held := g.track.all.mostIn(start, end); float64(held+a.total()) > *lim*human.Ppm+0.5 {
				return &blocker{kind: blockedGroupGPUs, gpu: a.Gpu, group: g.cap.Group, figure: float64(held)}
			}
		}
		if g.cap.Hours != nil {
			if used, over := g.track.slots.HoursPeak(g.hoursAsk(a), start); over {
				return &blocker{kind: blockedGroupHours, gpu: a.Gpu, group: g.cap.Group, figure: used}
			}
		}
	}
	return nil
}

// earliestInGroups is layout.earliest for a request under group caps.
// Under an hours quota or cap, room frees continuously: the instants
// weighed are those earliestByHours weighs, with the groups' (see
// groupInstants). Else room can only appear where a slot ends, on the
// GPU, the owner's or a group's track: it goes from the first instant
// with room on one to the first on the next, until all have room.
func (w weighing) earliestInGroups(l *layout, from time.Time) time.Time {
	a := w.a
	if a.Limits.UserHours != nil || slices.ContainsFunc(w.groups, func(g groupWeighing) bool { return g.cap.Hours != nil }) {
		return w.earliestByHours(l, from)
	}
	type bound struct {
		held steps
		room int64
	}
	var bounds []bound
	for _, k := range w.kept { // each GPU of the request
		bounds = append(bounds, bound{k, human.Ppm - a.Share})
	}
	if lim := a.Limits.UserGPUs; lim != nil {
		bounds = append(bounds, bound{w.mine, roomUnder(*lim, a.total())})
	}
	for _, g := range w.groups {
		bounds = append(bounds, bound{g.track.all, roomUnder(*g.cap.GPUs, a.total())})
	}
	t := from
	for moved := true; moved; {
		moved = false
		for _, b := range bounds {
			next, ok := b.held.roomFrom(t, a.Length, b.room)
			if !ok {
				return time.Time{}
			}
			moved = moved || !next.Equal(t)
			t = next
		}
	}
	if w.check(t) != nil {
		return time.Time{} // not reached: fail safe rather than grant wrongly
	}
	return t
}

// roomUnder is what others may hold beside a share under a limit in
// GPU-equivalents.
func roomUnder(limit float64, share int64) int64 {
	return int64(math.Floor(limit*human.Ppm+0.5)) - share
}

// groupInstants offers earliestByHours the instants where a group's
// room may appear: where a member's slot ends, and where one leaves the
// window of an hours cap.
func (w weighing) groupInstants(consider func(time.Time)) {
	for _, g := range w.groups {
		win := g.cap.Window
		for _, s := range g.track.slots {
			consider(s.end)
			if g.cap.Hours != nil {
				consider(s.start.Add(win - w.a.Length))
				consider(s.end.Add(win - w.a.Length))
				consider(s.start.Add(win))
				consider(s.end.Add(win))
			}
		}
	}
}

// heldNeeded is the users whose ended bookings weighing the requests of
// uids looks back on: each with an hours quota of their own, and every
// member of their groups with an hours cap who has held a GPU (such a
// user has a usage record; b.Usage is read whenever a group has one).
func (b *Books) heldNeeded(uids []int) []int {
	var out []int
	var capped []string
	for _, uid := range uids {
		l := b.Limits[uid]
		if l.Exempt {
			continue
		}
		if l.UserHours != nil {
			out = append(out, uid)
		}
		for _, c := range l.Groups {
			if c.Hours != nil {
				capped = append(capped, c.Group)
			}
		}
	}
	if len(capped) == 0 {
		return out
	}
	for _, u := range b.Usage {
		if slices.ContainsFunc(proc.GroupsOf(u.UID), func(g string) bool { return slices.Contains(capped, g) }) {
			out = append(out, u.UID)
		}
	}
	return out
}

// groupReason is reason for a group's cap: what the queue shows.
func groupReason(blk *blocker, a Ask) string {
	c := a.Limits.GroupCap(blk.group)
	if blk.kind == blockedGroupGPUs {
		return fmt.Sprintf("%s: the group holds %s, asks %s", capName(blk.kind, c), FormatGPUCount(int64(blk.figure)), formatGPUs(a.total()))
	}
	return fmt.Sprintf("%s: the group has %s GPU-hours booked in the window, asks %s", capName(blk.kind, c),
		FormatGPUHours(blk.figure), FormatGPUHours(a.gpuHours()))
}

// groupRefusal is the refusal of a request a group's cap stops now.
func groupRefusal(over error, blk *blocker, a Ask) error {
	c := a.Limits.GroupCap(blk.group)
	if blk.kind == blockedGroupGPUs {
		return fmt.Errorf("%w: %s: the group would hold %s at once (%s already, %s asked)", over, capName(blk.kind, c),
			FormatGPUCount(int64(blk.figure)+a.total()), formatGPUs(int64(blk.figure)), formatGPUs(a.total()))
	}
	return fmt.Errorf("%w: %s: the group has %s GPU-hours booked in the window, %s asked", over, capName(blk.kind, c),
		FormatGPUHours(blk.figure), FormatGPUHours(a.gpuHours()))
}

// groupNever is the refusal of a request a group's cap could never grant.
func groupNever(over error, blk *blocker, a Ask) error {
	c := a.Limits.GroupCap(blk.group)
	switch {
	case blk.kind == blockedGroupGPUs && *c.GPUs == 0:
		return fmt.Errorf("%w: %s: its members may hold no GPU at all (group-gpus=none is no limit)", over, capName(blk.kind, c))
	case blk.kind == blockedGroupGPUs:
		return fmt.Errorf("%w: %s: %s asked at once can never be granted", over, capName(blk.kind, c), FormatGPUCount(a.total()))
	case *c.Hours == 0:
		return fmt.Errorf("%w: %s: its members may book no GPU-hours at all (group-hours=none is no limit)", over, capName(blk.kind, c))
	}
	return fmt.Errorf("%w: %s: %s GPU-hours asked can never be granted", over, capName(blk.kind, c), FormatGPUHours(a.gpuHours()))
}

// capName is a group's cap as it was set, and for whom: "group-gpus=4
// for @students".
func capName(kind string, c policy.GroupCap) string {
	v := policy.FormatLimit(c.GPUs)
	if kind == blockedGroupHours {
		v = policy.FormatHours(c.Hours, c.Window)
	}
	return kind + "=" + v + " for @" + c.Group
}
