package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// A gang is a booking of several GPUs of one host: all of them or none.
// The checks here are written apart from core's admission, so that the two
// check each other.

// gangShape is what a worker asks of a gang: named GPUs (a list or a
// range), or a count of any; Device is the first named, or AnyDevice.
type gangShape struct {
	Device  int
	Devices []int
	Count   int
}

// pickGang draws a gang on a host of n GPUs (n ≥ 2): half the time any
// --gpus k, else k named GPUs, a range (1-3) or a list (0,2), in order.
func pickGang(rng *rand.Rand, n int) gangShape {
	k := 2 + rng.IntN(n-1)
	if rng.IntN(2) == 0 {
		return gangShape{Device: domain.AnyDevice, Count: k}
	}
	var devs []int
	if rng.IntN(2) == 0 {
		first := rng.IntN(n - k + 1)
		for d := first; d < first+k; d++ {
			devs = append(devs, d)
		}
	} else {
		devs = rng.Perm(n)[:k]
		slices.Sort(devs)
	}
	return gangShape{Device: devs[0], Devices: devs}
}

// arg is the shape as the command line takes it: the GPU argument, and
// --gpus N for a count.
func (g gangShape) arg() (string, []string) {
	if g.Count > 0 {
		return "any", []string{"--gpus", fmt.Sprint(g.Count)}
	}
	return human.FormatGPUs("", g.Devices), nil
}

// grantFlaw says how a booking granted for a request is not what it asked
// ("" when it is): exactly the named GPUs, in order, or exactly Count of
// any, or one GPU, the one named; on the host asked. A request with no ID
// is a direct create's ask.
func grantFlaw(r domain.Request, p domain.Partition) string {
	who := "a create"
	if r.ID != 0 {
		who = fmt.Sprintf("request %d", r.ID)
	}
	got := p.GPUs()
	want := max(1, len(r.Devices), r.Count)
	switch {
	case r.Host != "" && p.Host != r.Host:
		return fmt.Sprintf("%s asked for host %s, booking %d is on %s", who, r.Host, p.ID, p.Host)
	case len(got) != want:
		return fmt.Sprintf("%s asked for %d GPUs, booking %d holds %d (%v)", who, want, p.ID, len(got), got)
	case len(r.Devices) > 0 && !slices.Equal(got, r.Devices):
		return fmt.Sprintf("%s asked for GPUs %v, booking %d holds %v", who, r.Devices, p.ID, got)
	case want == 1 && r.Device != domain.AnyDevice && p.Device != r.Device:
		return fmt.Sprintf("%s asked for GPU %d, booking %d holds GPU %d", who, r.Device, p.ID, p.Device)
	}
	return ""
}

// bookingFlaws says what is wrong with a booking as stored, for one
// granted whole: a gang names two GPUs or more and each one's UUID,
// Device first, no GPU twice; and every GPU it holds is one of its
// host's, by index and UUID. invs are the hosts' inventories by host (""
// a file's own host); nil skips that.
func bookingFlaws(p domain.Partition, invs map[string]domain.Inventory) []string {
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("booking %d (GPUs %v): ", p.ID, p.Devices)+fmt.Sprintf(format, args...))
	}
	if len(p.Devices) > 0 {
		if len(p.Devices) == 1 { // core leaves Devices empty for one GPU
			bad("a gang of one GPU")
		}
		if len(p.DeviceUUIDs) != len(p.Devices) {
			bad("%d GPUs, %d UUIDs", len(p.Devices), len(p.DeviceUUIDs))
		}
		if p.Devices[0] != p.Device {
			bad("Device is %d, not the first of its GPUs", p.Device)
		}
		if len(p.DeviceUUIDs) > 0 && p.DeviceUUIDs[0] != p.DeviceUUID {
			bad("DeviceUUID %s is not the first GPU's %s", p.DeviceUUID, p.DeviceUUIDs[0])
		}
		seen := map[int]bool{}
		for _, d := range p.Devices {
			if seen[d] {
				bad("GPU %d twice", d)
			}
			seen[d] = true
		}
	}
	if invs == nil {
		return out
	}
	inv, ok := invs[p.Host]
	if !ok {
		bad("no inventory of host %q", p.Host)
		return out
	}
	uuids := p.DeviceUUIDs
	if len(p.Devices) == 0 {
		uuids = []string{p.DeviceUUID}
	}
	for i, d := range p.GPUs() {
		j := slices.IndexFunc(inv.Devices, func(x domain.Device) bool { return x.Index == d })
		switch {
		case j < 0:
			bad("GPU %d is not one of host %q's %d", d, p.Host, len(inv.Devices))
		case i < len(uuids) && uuids[i] != "" && inv.Devices[j].UUID != "" && uuids[i] != inv.Devices[j].UUID:
			bad("GPU %d's UUID %s is not the host's %s", d, uuids[i], inv.Devices[j].UUID)
		}
	}
	return out
}

// heldUntil is when a booking stopped holding its share: its deadline, or
// before it when it was released (or reclaimed) early.
func heldUntil(p domain.Partition) time.Time {
	if !p.Ended.IsZero() && p.Ended.Before(p.Expires) {
		return p.Ended
	}
	return p.Expires
}

// sweep is the whole history's check of "no GPU over 100%": each booking
// held its share of each of its GPUs over [Start, heldUntil); per GPU, the
// sum only changes at those ends, so a sweep over them, ends before starts
// at one instant, finds every peak. It returns each GPU's highest sum and
// each stretch of time one was over 100%.
func sweep(parts []domain.Partition) (map[gpuKey]peak, []string) {
	type step struct {
		gpu gpuKey
		at  time.Time
		ppm int64
	}
	var steps []step
	for _, p := range parts {
		end := heldUntil(p)
		if !end.After(p.Start) {
			continue
		}
		for _, d := range p.GPUs() {
			g := gpuKey{p.Host, d}
			steps = append(steps, step{g, p.Start, p.SharePPM}, step{g, end, -p.SharePPM})
		}
	}
	slices.SortFunc(steps, func(a, b step) int {
		return cmp.Or(cmp.Compare(a.gpu.String(), b.gpu.String()), a.at.Compare(b.at), cmp.Compare(a.ppm, b.ppm))
	})
	peaks := map[gpuKey]peak{}
	var over []string
	var sum int64
	var spell peak // the stretch over 100% the sweep is in: its most, and from when
	var from time.Time
	for _, s := range steps {
		sum += s.ppm // back to 0 at each GPU's last end
		if sum > peaks[s.gpu].ppm {
			peaks[s.gpu] = peak{sum, s.at}
		}
		switch {
		case sum > human.Ppm && spell.ppm == 0:
			spell, from = peak{sum, s.at}, s.at
		case sum > spell.ppm && spell.ppm > 0:
			spell = peak{sum, s.at}
		case sum <= human.Ppm && spell.ppm > 0:
			note(&over, fmt.Sprintf("GPU %s booked %.4f%% at %s, over 100%% from %s to %s (whole-history sweep)", s.gpu, float64(spell.ppm)/1e4,
				spell.at.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano), s.at.Format(time.RFC3339Nano)))
			spell = peak{}
		}
	}
	return peaks, over
}

// inventories are the device inventories of every host of the ledger, by
// host: a file's own under "".
func inventories(tx *storage.Tx) (map[string]domain.Inventory, error) {
	invs, err := tx.HostInventories()
	if err != nil {
		return nil, err
	}
	inv, ok, err := tx.Inventory()
	if ok {
		invs[""] = inv
	}
	return invs, err
}

// gangFinal is what the final look counts and finds of gangs.
type gangFinal struct {
	bySize                                 map[int]int // bookings by how many GPUs, 2 and up
	requests, granted, timedOut, cancelled int
	events                                 int // gangs without exactly one created and one end event
}
