package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// checker reads the ledger in View transactions, over and over, and holds
// the invariants at each instant it sees: no device more than 100% booked
// at any instant of any booking (bookings made ahead included), no user
// over a quota (GPUs held at once, GPU-hours in any rolling window), no
// booking still stored as live a grace period past its deadline, no
// booking ended twice, no request granted twice, and the line's order: no
// booking granted to a request of lower priority makes a request ahead of
// it wait longer than it was told; and every gang (a booking of several
// GPUs) it sees live holds each of its GPUs whole.
type checker struct {
	l     storage.Store
	line  *core.Client
	grace time.Duration
	views atomic.Int64
	lat   Hist

	mu         sync.Mutex
	maxPPM     map[gpuKey]int64 // the most each GPU was seen booked
	overbooked []string
	overQuota  []string
	late       map[uint64]bool
	lateMsgs   []string
	lastSeq    uint64
	ends       map[uint64]int
	doubleEnds []string
	grants     map[uint64]int // request -> bookings granted for it
	twice      []string
	misordered []string
	errs       []string
	invs       map[string]domain.Inventory // the hosts' GPUs, read once they are needed
	gangs      map[uint64]bool             // gangs seen live, checked once each
	partial    []string                    // gangs not held whole
	// The line as last seen: each waiting request's ETA, and when.
	prevETA  map[uint64]time.Time
	prevLine time.Time
	checked  map[uint64]bool // grants already checked for order
	waited   int64           // line looks with someone waiting
	pairs    int64           // grants weighed against a request ahead of them
}

// orderMargin is how far apart two requests' priorities must be for the
// order between them to count: priorities drift as usage decays, and a
// request ahead a moment ago may fairly be behind now.
const orderMargin = 0.05

// hoursLookback is how far back the checker reads for GPU-hour quotas:
// longer than any window the soak sets, plus bookings that reach into it.
const hoursLookback = 10 * time.Minute

func newChecker(l storage.Store, grace time.Duration) *checker {
	return &checker{l: l, line: core.NewClient(core.Options{Ledger: l}), grace: grace, maxPPM: map[gpuKey]int64{},
		late: map[uint64]bool{}, ends: map[uint64]int{}, grants: map[uint64]int{}, prevETA: map[uint64]time.Time{}, checked: map[uint64]bool{},
		gangs: map[uint64]bool{}}
}

func (c *checker) violations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.overbooked) + len(c.overQuota) + len(c.lateMsgs) + len(c.doubleEnds) + len(c.twice) + len(c.misordered) + len(c.errs) + len(c.partial)
}

func (c *checker) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c.once()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func note(list *[]string, msg string) {
	if len(*list) < keepFailures {
		*list = append(*list, msg)
	} else if len(*list) == keepFailures {
		*list = append(*list, "…")
	}
}

//nolint:gocyclo // one look at the ledger checks every invariant the soak promises
func (c *checker) once() {
	t0 := time.Now()
	var live, recent []domain.Partition
	var evs []domain.Event
	var pol domain.Policy
	var now time.Time
	deep := c.views.Load()%50 == 0 // GPU-hour windows cost more: a few times a second
	err := c.l.View(context.Background(), func(tx *storage.Tx) error {
		var err error
		if live, err = tx.LivePartitions(); err != nil {
			return err
		}
		// An instant after the transaction's first read: what it reads
		// was so then (a file is locked at the start; etcd pins the
		// revision of the first read), and every booking it holds was
		// admitted before, so none that ended by now is counted.
		now = time.Now()
		if pol, _, err = tx.Policy(); err != nil {
			return err
		}
		if c.lacksHostOf(live) {
			if c.invs, err = inventories(tx); err != nil {
				return err
			}
		}
		if deep && pol.UserHours != nil {
			if recent, err = tx.PartitionsSince(now.Add(-hoursLookback)); err != nil {
				return err
			}
		}
		evs, err = tx.Events(c.lastSeq, 0)
		return err
	})
	c.lat.Add(time.Since(t0))
	c.views.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		note(&c.errs, "checker read: "+err.Error())
		return
	}
	c.checkLate(live, now)
	c.checkGangs(live)
	for g, pk := range peaks(live, now, onGPUs) {
		c.maxPPM[g] = max(c.maxPPM[g], pk.ppm)
		if pk.ppm > 1_000_000 {
			note(&c.overbooked, fmt.Sprintf("GPU %s booked %.4f%% at %s", g, float64(pk.ppm)/1e4, pk.at.Format(time.RFC3339Nano)))
		}
	}
	if lim := pol.UserGPUs; lim != nil {
		for uid, pk := range peaks(live, now, forUser) {
			if float64(pk.ppm) > *lim*1e6+0.5 {
				note(&c.overQuota, fmt.Sprintf("uid %d holds %.6f GPUs at %s (user-gpus=%g)", uid, float64(pk.ppm)/1e6, pk.at.Format(time.RFC3339Nano), *lim))
			}
		}
	}
	if lim := pol.UserHours; deep && lim != nil {
		for uid, w := range fullestWindows(recent, pol.HoursWindow) {
			if w.gpuSeconds > *lim*3600+1e-3 {
				note(&c.overQuota, fmt.Sprintf("uid %d booked %.4f GPU-hours in the %s before %s (user-hours=%g/%s)", uid, w.gpuSeconds/3600,
					pol.HoursWindow, w.end.Format(time.RFC3339Nano), *lim, pol.HoursWindow))
			}
		}
	}
	for _, e := range evs {
		c.lastSeq = e.Seq
		switch e.Kind {
		case domain.EventReleased, domain.EventExpired:
			c.ends[e.Partition]++
			if c.ends[e.Partition] == 2 {
				note(&c.doubleEnds, fmt.Sprintf("booking %d ended twice (second: %s by %s)", e.Partition, e.Kind, e.User))
			}
		case domain.EventCreated:
			if req, ok := grantedRequest(e.Detail); ok {
				if c.grants[req]++; c.grants[req] == 2 {
					note(&c.twice, fmt.Sprintf("request %d granted twice (second: booking %d)", req, e.Partition))
				}
			}
		}
	}
	c.checkOrder()
}

// checkLate notes each booking still stored as live a grace period past
// its deadline, once.
func (c *checker) checkLate(live []domain.Partition, now time.Time) {
	for _, p := range live {
		if p.LiveAt(now) || p.Upcoming(now) {
			continue
		}
		if now.Sub(p.Expires) > c.grace && !c.late[p.ID] {
			c.late[p.ID] = true
			note(&c.lateMsgs, fmt.Sprintf("booking %d still live %s after its deadline", p.ID, now.Sub(p.Expires).Round(time.Millisecond)))
		}
	}
}

// checkGangs holds each gang seen live, once, to its GPUs, UUIDs and
// host: granted whole or not at all.
func (c *checker) checkGangs(live []domain.Partition) {
	for _, p := range live {
		if len(p.Devices) > 0 && !c.gangs[p.ID] {
			c.gangs[p.ID] = true
			for _, f := range bookingFlaws(p, c.invs) {
				note(&c.partial, f)
			}
		}
	}
}

// lacksHostOf says whether a gang among live is on a host whose inventory
// the checker has not read yet.
func (c *checker) lacksHostOf(live []domain.Partition) bool {
	for _, p := range live {
		if _, ok := c.invs[p.Host]; len(p.Devices) > 0 && !c.gangs[p.ID] && !ok {
			return true
		}
	}
	return false
}

// checkOrder holds the line's order: a booking granted since the last look
// to a request of lower priority may not be what makes a request ahead of
// it wait past the ETA it was given then (conservative backfill). Its
// ETA without that booking says whether it is.
func (c *checker) checkOrder() {
	since := c.prevLine
	c.prevLine = time.Now()
	lc, err := c.line.CheckLine(since)
	if err != nil {
		note(&c.errs, "checker line: "+err.Error())
		return
	}
	if len(lc.Waiting) > 0 {
		c.waited++
	}
	for _, g := range lc.Granted {
		if c.checked[g.Booking] {
			continue
		}
		c.checked[g.Booking] = true
		for _, q := range lc.Waiting {
			told, ok := c.prevETA[q.ID]
			if !ok || q.Priority <= g.Priority+orderMargin {
				continue
			}
			c.pairs++
			if q.ETA.After(told.Add(time.Second)) && !g.Without[q.ID].After(told.Add(time.Second)) {
				note(&c.misordered, fmt.Sprintf("request %d (priority %.3f) was told %s, now waits until %s: booking %d granted to request %d (priority %.3f) is in its way",
					q.ID, q.Priority, told.Format(time.RFC3339Nano), q.ETA.Format(time.RFC3339Nano), g.Booking, g.Request, g.Priority))
			}
		}
	}
	clear(c.prevETA)
	for _, q := range lc.Waiting {
		c.prevETA[q.ID] = q.ETA
	}
}

// grantedRequest reads the request a "created" event's booking was granted
// for: "…, granted from the line (request 12, after 3s in line; placed by
// root)".
func grantedRequest(detail string) (uint64, bool) {
	i := strings.LastIndex(detail, "(request ")
	if i < 0 {
		return 0, false
	}
	var id uint64
	_, err := fmt.Sscanf(detail[i:], "(request %d,", &id)
	return id, err == nil
}

type peak struct {
	ppm int64
	at  time.Time
}

// gpuKey is one GPU of one host: the unit of "never over 100%".
type gpuKey struct {
	host   string
	device int
}

// onGPUs is what a booking holds of each of its GPUs: its share of each.
func onGPUs(p domain.Partition, add func(gpuKey, int64)) {
	for _, d := range p.GPUs() {
		add(gpuKey{p.Host, d}, p.SharePPM)
	}
}

// forUser is what a booking counts against its user's quota: its share
// times its GPUs.
func forUser(p domain.Partition, add func(int, int64)) {
	add(p.UID, p.SharePPM*int64(len(p.GPUs())))
}

func (g gpuKey) String() string {
	if g.host == "" {
		return strconv.Itoa(g.device)
	}
	return g.host + ":" + strconv.Itoa(g.device)
}

// peaks is, per key (a GPU, a user across hosts), the most the bookings
// stored as live hold at now or at any start after it: the sum only rises
// where a booking starts. holds says what a booking holds under which
// keys: a gang its share on each of its GPUs. Written apart from core's
// calendar, so the two check each other.
func peaks[K comparable](live []domain.Partition, now time.Time, holds func(domain.Partition, func(K, int64))) map[K]peak {
	instants := []time.Time{now}
	for _, p := range live {
		if p.Start.After(now) {
			instants = append(instants, p.Start)
		}
	}
	out := map[K]peak{}
	for _, t := range instants {
		sums := map[K]int64{}
		add := func(k K, ppm int64) { sums[k] += ppm }
		for _, p := range live {
			if p.State == domain.Live && !t.Before(p.Start) && t.Before(p.Expires) {
				holds(p, add)
			}
		}
		for k, v := range sums {
			if v > out[k].ppm {
				out[k] = peak{v, t}
			}
		}
	}
	return out
}

type window struct {
	end        time.Time
	gpuSeconds float64
}

// fullestWindows is, per user, the window of length w holding the most
// share-weighted GPU-seconds of their bookings (held time, for those
// released early). The sum is piecewise linear in where the window ends,
// so the fullest ends where a booking starts or ends, or w after.
func fullestWindows(parts []domain.Partition, w time.Duration) map[int]window {
	type held struct {
		share      float64
		start, end time.Time
	}
	byUser := map[int][]held{}
	for _, p := range parts {
		end := p.Expires
		if p.State == domain.Released && p.Ended.Before(end) {
			end = p.Ended
		}
		if end.After(p.Start) {
			byUser[p.UID] = append(byUser[p.UID], held{float64(p.SharePPM*int64(len(p.GPUs()))) / 1e6, p.Start, end})
		}
	}
	out := map[int]window{}
	for uid, hs := range byUser {
		for _, h := range hs {
			for _, t := range []time.Time{h.start, h.end, h.start.Add(w), h.end.Add(w)} {
				sum := 0.0
				for _, o := range hs {
					a, b := o.start, o.end
					if a.Before(t.Add(-w)) {
						a = t.Add(-w)
					}
					if b.After(t) {
						b = t
					}
					if b.After(a) {
						sum += o.share * b.Sub(a).Seconds()
					}
				}
				if sum > out[uid].gpuSeconds {
					out[uid] = window{t, sum}
				}
			}
		}
	}
	return out
}
