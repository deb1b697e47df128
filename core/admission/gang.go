package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
)

// A booking of several GPUs is one booking: the same share of each, from
// one start to one end, admitted only if every one of them has room at
// every instant, and counted by quotas as that many shares. This file
// places requests for several: named ones (0-3), or any number of a
// host's GPUs, the best connected that have room.

// blockedCount: fewer of the host's GPUs have room than a request for
// any several asks.
const blockedCount = "gpus"

// possibleOn says why r, for the named devs together, could never be
// granted; nil: it can, some time.
func (b *Books) possibleOn(r domain.Request, devs []domain.Device) error {
	a, err := b.askOnAll(r, devs)
	if err != nil {
		return err
	}
	if blk := a.never(); blk != nil {
		return b.neverRefusal(blk, a)
	}
	return nil
}

// possibleAny says why r, for any r.Count of its host's GPUs (devs),
// could never be granted: the host has fewer GPUs that can hold the share
// asked, or the quota allows that many shares at no time.
func (b *Books) possibleAny(r domain.Request, devs []domain.Device) error {
	var fit []domain.Device
	var why error
	for _, d := range devs {
		if _, err := b.askOn(r, d); err != nil {
			why = err
			continue
		}
		fit = append(fit, d)
	}
	if len(fit) < r.Count {
		what := fmt.Sprintf("%d GPUs asked, and %s has %d", r.Count, b.hostName(r.Host), len(devs))
		if len(fit) < len(devs) {
			what = fmt.Sprintf("%d GPUs asked, and only %d of the %d of %s can hold the size (%v)", r.Count, len(fit), len(devs), b.hostName(r.Host), why)
		}
		return fmt.Errorf("%w: %s", domain.ErrNoDevice, what)
	}
	return b.possibleOn(r, fit[:r.Count])
}

// hostName is how a refusal names a host: "this host" for one's own.
func (b *Books) hostName(host string) string {
	if host == b.Here {
		return "this host"
	}
	return "host " + host
}

// earliestOn is earliest for the several GPUs r names.
func (b *Books) earliestOn(lay *layout, r domain.Request, from time.Time) (Fit, *blocker) {
	devs, err := b.gangOf(r)
	if err != nil {
		return Fit{}, nil
	}
	a, err := b.askOnAll(r, devs)
	if err != nil || a.never() != nil {
		return Fit{}, nil
	}
	t, blk := lay.earliest(a, from)
	if t.IsZero() {
		return Fit{}, blk
	}
	return Fit{Devs: devs, Ask: a, start: t}, blk
}

// earliestAny is earliest for any r.Count GPUs of r's host. Room on a GPU
// appears only where one of its slots ends, so it looks at from and at
// each such end in turn: the GPUs with room over the whole length there,
// and once there are enough, the best connected of them (gpu.Place),
// started as soon as the owner's quotas allow. What stops it at from is
// too few GPUs with room, or, with enough, a quota.
func (b *Books) earliestAny(lay *layout, r domain.Request, from time.Time) (Fit, *blocker) {
	devs, _ := b.devicesFor(r.Host, domain.AnyDevice)
	var cands []domain.Device
	var ws []weighing
	at := []time.Time{from}
	for _, d := range devs {
		a, err := b.askOn(r, d)
		if err != nil {
			continue
		}
		cands, ws = append(cands, d), append(ws, lay.weigh(a))
		for _, s := range lay.gpu(a.Gpu).slots {
			if s.end.After(from) {
				at = append(at, s.end)
			}
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	topo := b.topology(r.Host)
	var first *blocker
	for i, t := range slices.Compact(at) {
		var free []int
		byIndex := map[int]domain.Device{}
		for j, w := range ws {
			if w.room(t) == nil {
				free = append(free, cands[j].Index)
				byIndex[cands[j].Index] = cands[j]
			}
		}
		if len(free) < r.Count {
			if i == 0 {
				first = &blocker{kind: blockedCount, gpu: GpuID{Host: r.Host, Device: domain.AnyDevice}, figure: float64(len(free)), asked: r.Count}
			}
			continue
		}
		pl, err := gpu.Place(topo, free, r.Count)
		if err != nil {
			continue
		}
		chosen := make([]domain.Device, len(pl.GPUs))
		for j, g := range pl.GPUs {
			chosen[j] = byIndex[g]
		}
		a, err := b.askOnAll(r, chosen)
		if err != nil || a.never() != nil {
			return Fit{}, first
		}
		start, blk := lay.earliest(a, t)
		if start.IsZero() {
			continue
		}
		if i == 0 {
			first = blk
		}
		return Fit{Devs: chosen, Ask: a, Placement: pl.Reason, start: start}, first
	}
	return Fit{}, first
}

// AskedGPUs names the GPUs r asks for as people on host here type them:
// 0, 0-3, gpu3:0, any, any×4.
func AskedGPUs(here string, r domain.Request) string {
	host := r.Host
	if host == here {
		host = ""
	}
	switch {
	case len(r.Devices) > 1:
		return human.FormatGPUs(host, r.Devices)
	case r.Device != domain.AnyDevice:
		return human.FormatGPU(host, r.Device)
	}
	name := human.FormatGPU(host, domain.AnyDevice)
	if r.Count > 1 {
		name += "×" + strconv.Itoa(r.Count)
	}
	return name
}

// ETAGPUs are the GPUs e's ETA places it on.
func (e QueueEntry) ETAGPUs() []int {
	if len(e.ETADevices) > 0 {
		return e.ETADevices
	}
	return []int{e.ETADevice}
}

// ExtensionOf is what extending booking p by length asks, on all its
// GPUs, and where: the fit a refusal describes.
func (b *Books) ExtensionOf(p domain.Partition, length time.Duration) (Ask, Fit) {
	a := Ask{Gpu: GpuID{Host: p.Host, Device: p.Device}, Uid: p.UID, Share: p.SharePPM, Length: length, Limits: b.LimitsFor(p.UID, p.User)}
	if len(p.Devices) > 1 {
		a.Gang = p.Devices
	}
	f := Fit{Ask: a}
	for _, i := range p.GPUs() {
		d, _ := FindDevice(b.Invs[p.Host], i)
		f.Devs = append(f.Devs, d)
	}
	return a, f
}

// topology is how host's GPUs are linked, as its inventory recorded; all
// links unknown when it recorded none (then the lowest indices win).
// It is read once per host and Books: laying out a line weighs it for
// each request for any several GPUs, and decoding it was a third of that.
func (b *Books) topology(host string) gpu.Topology {
	if t, ok := b.topos[host]; ok {
		return t
	}
	inv := b.Invs[host]
	var t gpu.Topology
	if len(inv.Topology) == 0 || json.Unmarshal(inv.Topology, &t) != nil {
		n := 0
		for _, d := range inv.Devices {
			n = max(n, d.Index+1)
		}
		t = gpu.NewTopology(n)
	}
	if b.topos == nil {
		b.topos = map[string]gpu.Topology{}
	}
	b.topos[host] = t
	return t
}
