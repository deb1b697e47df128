package monitor

import (
	"context"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

// samplesKept is how long the per-GPU minutes stay in the ledger.
const samplesKept = 24 * time.Hour

// accountant sums a monitor's GPU samples over the current window; the
// finished window is written by whichever monitor commits it first.
type accountant struct {
	cur  *window
	done *window // finished, not yet written
}

// window is what one monitor saw of one minute.
type window struct {
	start, first time.Time
	gpus         map[int]*gpuWindow
	books        map[uint64]*bookingWindow
	unbooked     map[unbookedKey]*unbookedWindow
}

type gpuWindow struct {
	dev            gpu.Device
	samples        int
	utilSum, utilN int
	memPeak        uint64
}

// bookingWindow is one booking's samples: how many were taken while it was
// live, how many saw its processes, the sum of its SM activity over the
// samples where that was known, and how many could not tell (dark).
type bookingWindow struct {
	device                   int
	samples, withProcs       int
	activitySum, known, dark int
	memPeak                  uint64
}

type unbookedKey struct{ device, uid int }

type unbookedWindow struct {
	user  string
	smSum int
}

func (w *window) end() time.Time { return w.start.Add(domain.AccountEvery) }

// observe adds one sample to the window it falls in. A sample in a later
// window finishes the current one.
func (a *accountant) observe(s gpu.Sample, atts []admission.Attribution, parts []domain.Partition, now time.Time) {
	start := now.Truncate(domain.AccountEvery)
	if a.cur != nil && !a.cur.start.Equal(start) {
		// A monitor that came in late saw too little of the window to
		// judge it; another monitor, or the next window, will.
		if a.cur.start.Before(start) && !a.cur.first.After(a.cur.start.Add(domain.AccountEvery/2)) {
			a.done = a.cur
		}
		a.cur = nil
	}
	if a.cur == nil {
		a.cur = &window{start: start, first: now, gpus: map[int]*gpuWindow{}, books: map[uint64]*bookingWindow{}, unbooked: map[unbookedKey]*unbookedWindow{}}
	}
	a.cur.add(s, atts, parts, now)
}

func (w *window) add(s gpu.Sample, atts []admission.Attribution, parts []domain.Partition, now time.Time) {
	for _, d := range s.Devices {
		g := w.gpus[d.Index]
		if g == nil {
			g = &gpuWindow{dev: d.Device}
			w.gpus[d.Index] = g
		}
		g.samples++
		if d.Util != procfs.NA {
			g.utilSum += d.Util
			g.utilN++
		}
		g.memPeak = max(g.memPeak, d.MemoryUsed)
	}
	work := activity(s, atts)
	for _, p := range parts {
		// Only bookings of the GPUs this monitor samples: on a ledger many
		// hosts share, GPU 0 of another host is another GPU.
		g := w.gpus[p.Device]
		if g == nil || (p.DeviceUUID != "" && p.DeviceUUID != g.dev.UUID) || !p.LiveAt(now) {
			continue
		}
		b := w.books[p.ID]
		if b == nil {
			b = &bookingWindow{device: p.Device}
			w.books[p.ID] = b
		}
		b.samples++
		r, ok := work[p.ID]
		if !ok {
			b.known++ // no process: no work, for certain
			continue
		}
		b.withProcs++
		b.memPeak = max(b.memPeak, r.memory)
		if r.known {
			b.activitySum += r.sm
			b.known++
		} else {
			b.dark++
		}
	}
	for _, a := range atts {
		if (a.Verdict != admission.Unbooked && a.Verdict != admission.Ended) || a.UID == procfs.NA || a.SM == procfs.NA || a.MadeUp {
			continue // a simulated GPU's made-up users are nobody's use
		}
		k := unbookedKey{a.Device, a.UID}
		u := w.unbooked[k]
		if u == nil {
			u = &unbookedWindow{user: a.User}
			w.unbooked[k] = u
		}
		u.smSum += a.SM
	}
}

// reading is one booking's GPU work in one sample.
type reading struct {
	device int
	procs  int
	sm     int // percent of the GPU, 0..100
	known  bool
	memory uint64
}

// activity is the SM activity of each booking with processes in one
// sample: NVML's per-process utilization summed, and the device's
// utilization too where the booking's processes are the GPU's only ones (as
// when it holds the whole GPU). Not known when a process's figure is
// missing and the device's cannot stand in for it.
func activity(s gpu.Sample, atts []admission.Attribution) map[uint64]reading {
	out := map[uint64]reading{}
	for _, a := range atts {
		if a.Verdict != admission.Booked && a.Verdict != admission.OverBudget {
			continue
		}
		r, ok := out[a.Partition]
		if !ok {
			r = reading{device: a.Device, known: true}
		}
		r.procs++
		r.memory += a.MemoryUsed
		if a.SM == procfs.NA {
			r.known = false
		} else {
			r.sm += a.SM
		}
		out[a.Partition] = r
	}
	for id, r := range out {
		for _, d := range s.Devices {
			if d.Index == r.device && r.procs == len(d.Processes) && d.Util != procfs.NA {
				r.sm, r.known = max(r.sm, d.Util), true
			}
		}
		r.sm = min(r.sm, 100)
		out[id] = r
	}
	return out
}

// minuteVerdict is what a window says of one booking.
type minuteVerdict int

const (
	verdictStarting minuteVerdict = iota // no processes yet, within idle-start
	verdictIdle
	verdictBusy
	verdictUnknown // the GPU could not tell: never counted as idle
	verdictUnseen  // idle to a monitor that doesn't keep its owner's records: not judged
)

// Writes account may make for one booking (its usage, an event, and a
// release by the idle ladder: the booking and its live entry, and its
// owner charged) and for one GPU besides (its minute).
const (
	accountBookingWrites = 4 + ledger.ChargeWrites
	accountGPUWrites     = 1
)

// account writes the finished window, if any: for each GPU no other monitor
// has written that minute for, its minute sample, its bookings' usage and
// its unbooked use; then it moves the idle ladder of those bookings. It
// returns the acts (warnings, reclaims) to report, and whether every GPU
// is done. It writes within budget more writes, since etcd takes 128 in
// a transaction by default: bookings while one more fits, a GPU's minute
// once its last booking is written; the next pass does the rest, passing
// over the bookings and the GPUs already written (skipTaken over whole
// windows). A GPU with more bookings in the window than a transaction
// takes (a hundred short ones a minute, under soak) used to be written
// whole, which failed the pass and every pass after it, expiries with
// it, for as long as the window waited to be written.
func (m *Monitor) account(tx *storage.Tx, pol domain.Policy, now time.Time, budget int) ([]Act, bool, error) {
	w := m.acct.done
	if w == nil {
		return nil, true, nil
	}
	var acts []Act
	// What the pass has written counts, and what a booking may write at
	// most (its usage; the ladder's event, or its release and charge) is
	// kept free before each: a booking's usage alone is one write.
	ceiling := tx.Written() + budget - storage.DropMax // DropGPUMinutes
	room := func(n int) bool { return tx.Written()+n <= ceiling }
	incomplete := func() ([]Act, bool, error) { return acts, false, tx.DropGPUMinutes(now.Add(-samplesKept)) }
	for _, idx := range domain.SortedKeys(w.gpus) {
		g := w.gpus[idx]
		taken, err := tx.HasGPUMinute(w.start, g.dev.UUID)
		if err != nil || taken {
			if err != nil {
				return nil, false, err
			}
			continue
		}
		var ids []uint64 // the GPU's bookings
		for _, id := range domain.SortedKeys(w.books) {
			if w.books[id].device == idx {
				ids = append(ids, id)
			}
		}
		// Their records and usage at once: on etcd a read is a round trip.
		parts, err := tx.PartitionsByID(ids)
		if err != nil {
			return nil, false, err
		}
		usage, err := tx.UsageOf(ids)
		if err != nil {
			return nil, false, err
		}
		gpuWrites := accountGPUWrites
		for k := range w.unbooked {
			if k.device == idx {
				gpuWrites++
			}
		}
		minute := domain.GPUMinute{Minute: w.start, Device: idx, UUID: g.dev.UUID, Util: procfs.NA, MemoryUsed: g.memPeak, MemoryTotal: g.dev.MemoryTotal}
		if g.utilN > 0 {
			minute.Util = (g.utilSum + g.utilN/2) / g.utilN
		}
		for i, id := range ids {
			if usage[i].Through.Before(w.end()) && !room(gpuWrites+accountBookingWrites) {
				return incomplete() // the next pass goes on from this booking
			}
			more, verdict, err := m.accountBooking(tx, parts[i], usage[i], w.books[id], w, pol, now)
			if err != nil {
				return nil, false, err
			}
			acts = append(acts, more...)
			switch verdict {
			case verdictIdle:
				minute.Idle = append(minute.Idle, id)
			case verdictBusy:
				minute.Active = append(minute.Active, id)
			}
		}
		if !room(gpuWrites) {
			return incomplete() // its bookings are in; its minute next time
		}
		for k, u := range w.unbooked {
			if k.device != idx || u.smSum == 0 {
				continue
			}
			used := time.Duration(float64(domain.AccountEvery) * float64(u.smSum) / 100 / float64(g.samples))
			if err := tx.AddUnbooked(w.start, k.uid, u.user, used); err != nil {
				return nil, false, err
			}
		}
		if err := tx.PutGPUMinute(minute); err != nil {
			return nil, false, err
		}
	}
	return acts, true, tx.DropGPUMinutes(now.Add(-samplesKept))
}

// accountBooking adds one window to booking p's usage u and moves its
// ladder, and returns the window's verdict on it. A booking whose usage
// has the window already (an earlier pass wrote it) gets its verdict, for
// its GPU's minute, and nothing written.
func (m *Monitor) accountBooking(tx *storage.Tx, p domain.Partition, u domain.BookingUsage, b *bookingWindow, w *window, pol domain.Policy, now time.Time) ([]Act, minuteVerdict, error) {
	// The part of the window the booking held its share.
	from, to := admission.Later(w.start, p.Start), w.end()
	if !p.Ended.IsZero() {
		to = admission.Earlier(to, p.Ended)
	}
	to = admission.Earlier(to, p.Expires)
	held := max(0, to.Sub(from))

	verdict := verdictUnknown
	mean := 0.0
	if b.known > 0 {
		mean = float64(b.activitySum) / float64(b.known)
	}
	switch {
	case b.withProcs == 0 && !to.After(p.Start.Add(pol.IdleStart)):
		verdict = verdictStarting
	case b.withProcs == 0:
		verdict = verdictIdle
		held = max(0, to.Sub(admission.Later(from, p.Start.Add(pol.IdleStart))))
	case b.known > 0 && mean >= float64(pol.IdleSM):
		verdict = verdictBusy
	case b.known > 0 && b.dark == 0:
		verdict = verdictIdle
	}
	kept := proc.KeepsRecordsOf(m.root, p.UID)
	if verdict == verdictIdle && !kept {
		// No process seen may be processes hidden from this monitor
		// (another user's, under hidepid=2 or from a namespace): idle is
		// root's, or the owner's, to judge; the ladder waits for them.
		verdict = verdictUnseen
	}
	if !u.Through.Before(w.end()) {
		return nil, verdict, nil // accounted already
	}
	if b.known > 0 {
		u.GPUTime += time.Duration(mean / 100 * float64(held) * float64(b.known) / float64(b.samples))
	}
	switch verdict {
	case verdictIdle:
		u.Idle += held
		u.IdleFor += held
	case verdictBusy:
		u.LastActive = to
		fallthrough
	case verdictUnknown:
		u.IdleFor, u.Warnings, u.WarnedAt = 0, 0, time.Time{}
	}
	u.MemoryPeak = max(u.MemoryPeak, b.memPeak)
	u.Through = w.end()

	var acts []Act
	if p.LiveAt(now) && kept {
		var err error
		if acts, err = m.ladder(tx, &p, &u, pol, now); err != nil {
			return nil, verdict, err
		}
	}
	return acts, verdict, tx.PutBookingUsage(u)
}

// accounted tells the accountant its finished window is in the ledger.
func (a *accountant) accounted() { a.done = nil }

// skipTaken drops the finished window when other monitors have written it
// for every GPU already, so that this one does not write for nothing.
func (a *accountant) skipTaken(ctx context.Context, l storage.Store) error {
	if a.done == nil {
		return nil
	}
	all := true
	err := l.View(ctx, func(tx *storage.Tx) error {
		for _, g := range a.done.gpus {
			taken, err := tx.HasGPUMinute(a.done.start, g.dev.UUID)
			if err != nil || !taken {
				all = false
				return err
			}
		}
		return nil
	})
	if err == nil && all {
		a.accounted()
	}
	return err
}
