package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
)

// epoch is the simulated week's first instant: any fixed one.
var epoch = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// fairLine is Chronos's schedule: the real admission code's plan of the
// waiting line (admission.Books.Plan — fair-share order, each request
// starting now if it fits beside the bookings and the places kept for
// those ahead, else keeping its place at its ETA on all its GPUs) over
// the books a ledger would hold: the live bookings, the line, each
// user's decayed usage. Every job asks for any N whole GPUs of the box
// (any --gpus N), booked for its length, and --wait.
type fairLine struct {
	users []user
	inv   domain.Inventory
	pol   domain.Policy
	parts []domain.Partition
	line  []domain.Request
	usage map[int]domain.UserUsage
	jobs  map[uint64]*job
	// plans counts the plans made and what they took (real time, for
	// the record: no simulated instant depends on it).
	plans    int
	planned  time.Duration
	longest  time.Duration
	maxQueue int
}

// newFairLine is the schedule on a box of n whole GPUs, all NVLinked
// (an HGX-like box), under the default policy.
func newFairLine(users []user, n int) *fairLine {
	topo := gpu.NewTopology(n)
	for x := range n {
		for y := x + 1; y < n; y++ {
			topo.SetLink(x, y, gpu.Link{Level: gpu.LinkNVLink, NVLinks: 18})
		}
	}
	inv := domain.Inventory{Backend: "sim"}
	inv.Topology, _ = json.Marshal(topo)
	for i := range n {
		inv.Devices = append(inv.Devices, domain.Device{Index: i, UUID: fmt.Sprintf("SIM-%d", i), MemoryTotal: 80 << 30})
	}
	return &fairLine{users: users, inv: inv, pol: policy.Default(), usage: map[int]domain.UserUsage{}, jobs: map[uint64]*job{}}
}

func (*fairLine) name() string { return "chronos" }

func (f *fairLine) arrive(j *job, now time.Duration) {
	u := f.users[j.user]
	r := domain.Request{ID: uint64(j.id), Device: domain.AnyDevice, SharePPM: human.Ppm, Duration: j.booked,
		UID: u.uid, User: u.name, Created: epoch.Add(now), State: domain.Waiting}
	if j.gpus > 1 {
		r.Count = j.gpus
	}
	f.line = append(f.line, r)
	f.jobs[r.ID] = j
}

// release ends j's booking and charges its owner what it held, as the
// ledger's release does (core's charge).
func (f *fairLine) release(j *job, now time.Duration) error {
	i := slices.IndexFunc(f.parts, func(p domain.Partition) bool { return p.ID == uint64(j.id) })
	if i < 0 {
		return fmt.Errorf("chronos: job %d ended without a booking", j.id)
	}
	p, end := f.parts[i], epoch.Add(now)
	f.parts = slices.Delete(f.parts, i, i+1)
	u, ok := f.usage[p.UID]
	if !ok {
		u = domain.UserUsage{UID: p.UID, User: p.User, At: end}
	}
	u.GPUSeconds = admission.Decay(u.GPUSeconds, u.At, end, f.pol.HalfLife) + admission.HeldSeconds(p, end)
	u.At = end
	f.usage[p.UID] = u
	return nil
}

// start plans the line at now and starts what the plan grants.
func (f *fairLine) start(now time.Duration) ([]*job, error) {
	usage := make([]domain.UserUsage, 0, len(f.usage))
	for _, u := range f.usage {
		usage = append(usage, u)
	}
	slices.SortFunc(usage, func(a, b domain.UserUsage) int { return a.UID - b.UID })
	b := &admission.Books{Now: epoch.Add(now), Invs: map[string]domain.Inventory{"": f.inv}, Gpus: len(f.inv.Devices),
		Pol: f.pol, Parts: f.parts, Line: f.line, Usage: usage, Limits: map[int]policy.Limits{},
		HeldBy: map[int]admission.Calendar{}, Alive: func(domain.Request) bool { return true }}
	t := time.Now()
	plan, err := b.Plan(nil)
	took := time.Since(t)
	f.plans, f.planned, f.longest, f.maxQueue = f.plans+1, f.planned+took, max(f.longest, took), max(f.maxQueue, len(f.line))
	if err != nil {
		return nil, fmt.Errorf("chronos: plan at %v: %w", now, err)
	}
	if len(plan.Leaves) > 0 {
		r := plan.Leaves[0]
		return nil, fmt.Errorf("chronos: request %d left the line: %s", r.ID, r.Reason)
	}
	var out []*job
	for _, g := range plan.Grants {
		j := f.jobs[g.Req.ID]
		p := g.Part
		if !p.Start.Equal(b.Now) || len(p.GPUs()) != j.gpus || p.SharePPM != human.Ppm {
			return nil, fmt.Errorf("chronos: job %d (%d GPUs) granted %v from %v", j.id, j.gpus, p.GPUs(), p.Start)
		}
		p.ID, p.State = g.Req.ID, domain.Live
		f.parts = append(f.parts, p)
		f.line = slices.DeleteFunc(f.line, func(r domain.Request) bool { return r.ID == g.Req.ID })
		j.devices = p.GPUs()
		out = append(out, j)
	}
	return out, nil
}
