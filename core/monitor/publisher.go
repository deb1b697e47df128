package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// A monitor on a ledger many hosts share publishes its host's status every
// presenceEvery; a status lapses presenceTTL after the last publication, so
// a host whose monitors have all stopped fades from the others' live view
// (its bookings stay).
const (
	presenceEvery = 2 * time.Second
	presenceTTL   = 6 * time.Second
	// historyKept is how long the ledger's old versions stay in etcd (see
	// storage.HistoryKeeper): far longer than any of chronos's own
	// operations reads them (seconds).
	historyKept = 10 * time.Minute
)

// publisher publishes this host's status for the other hosts and measures
// their clocks from theirs.
type publisher struct {
	c       *core.Client
	pr      storage.Presence
	samples chan gpu.Sample // the latest reading; a newer one replaces it
	// errs carries a failure to publish to the monitor's goroutine, once
	// per spell of failures.
	errs    chan error
	failing bool
	// forgetting says the last try to compact etcd's history failed.
	forgetting bool

	ttl     time.Duration // how long a status lasts after its publication
	started time.Time     // when the monitor began, by this host's clock

	mu      sync.Mutex
	offsets map[string][]time.Duration // recent readings of each host's clock minus ours, less the delay
	seen    map[string]time.Time       // when each host's last status arrived, by our clock
}

// skewWindow is how many of a host's statuses its skew is measured over.
const skewWindow = 8

func newPublisher(c *core.Client, ttl time.Duration) *publisher {
	pr := c.Presence()
	if pr == nil {
		return nil
	}
	if ttl <= 0 {
		ttl = presenceTTL
	}
	return &publisher{c: c, pr: pr, ttl: ttl, started: c.Now(), samples: make(chan gpu.Sample, 1), errs: make(chan error, 1),
		offsets: map[string][]time.Duration{}, seen: map[string]time.Time{}}
}

// standing is this host's clock against every host measured since the
// monitor started. A host whose status lapsed keeps its last reading: a
// host left alone has nobody to check its clock against, and one found
// wrong while others were there stays in doubt.
func (p *publisher) standing() core.ClockStanding {
	if p == nil {
		return core.ClockStanding{Hosts: 1, Agree: 1}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.standingLocked()
}

func (p *publisher) standingLocked() core.ClockStanding {
	others := make([]time.Duration, 0, len(p.offsets))
	for _, rs := range p.offsets {
		others = append(others, slices.Max(rs))
	}
	return core.StandingOf(p.c.Host(), others)
}

// measured reports whether the other hosts have had time to show up since
// the monitor began, so that its clock's standing means something: until
// then it takes over no host's bookings.
func (p *publisher) measured(now time.Time) bool {
	return p == nil || now.Sub(p.started) >= presenceEvery
}

// staleAfter is how long after another host's last status arrived, by
// this host's clock, its clock's reading is stale while it publishes: it
// publishes every presenceEvery.
const staleAfter = presenceEvery + core.SkewBound

// current reports whether every host present (others publishing now, by
// etcd) has had a status measured lately by this host's clock. A clock
// stepped since the last statuses arrived makes them look old (stepped
// ahead) or yet to come (back) before the next shows the step: until then,
// this host's standing says nothing. A clock in doubt by what has been
// measured so far is not current either: the statuses that make the others
// current may have arrived since the caller last asked for the standing.
func (p *publisher) current(present map[string][]byte, now time.Time) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.standingLocked().InDoubt() {
		return false
	}
	for h := range present {
		if h == p.c.Host() {
			continue
		}
		seen, ok := p.seen[h]
		if !ok || now.Before(seen) || now.Sub(seen) > staleAfter {
			return false
		}
	}
	return true
}

// lastSeen is when host's last status arrived, by this host's clock.
func (p *publisher) lastSeen(host string) (time.Time, bool) {
	if p == nil {
		return time.Time{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.seen[host]
	return t, ok
}

// offer hands over a new reading without waiting.
func (p *publisher) offer(s gpu.Sample) {
	if p == nil {
		return
	}
	select {
	case <-p.samples:
	default:
	}
	select {
	case p.samples <- s:
	default:
	}
}

func (p *publisher) run(ctx context.Context) {
	updates := p.pr.WatchPresence(ctx)
	tick := p.c.Clock().NewTicker(presenceEvery)
	defer tick.Stop()
	var last gpu.Sample
	published := false
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-p.samples:
			last = s
			if !published { // show up at once, then every presenceEvery
				published = true
				p.publish(last)
			}
		case <-tick.C():
			p.publish(last)
			p.forgetHistory()
		case u, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			p.observe(u)
		}
	}
}

// observe measures another host's clock from a status it just published:
// its clock when it published less ours when the watch delivered it is the
// skew less the delivery's delay, so the largest of a few is the best
// estimate.
func (p *publisher) observe(u storage.Published) {
	if u.Host == p.c.Host() || u.Status == nil {
		return
	}
	var st core.HostStatus
	if json.Unmarshal(u.Status, &st) != nil || st.Time.IsZero() {
		return
	}
	now := p.c.Now()
	off := st.Time.Sub(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[u.Host] = now
	rs := append(p.offsets[u.Host], off)
	if len(rs) > skewWindow {
		rs = rs[len(rs)-skewWindow:]
	}
	// A reading far below the window's best is a clock stepped (this
	// host's ahead, or that one's back): measure from it at once rather
	// than let the old best stand for skewWindow statuses. A status the
	// watch delivered late reads so too, until the next: doubt errs on the
	// side of judging less.
	if len(rs) > 1 && slices.Max(rs[:len(rs)-1])-off > core.SkewBound {
		rs = rs[len(rs)-1:]
	}
	p.offsets[u.Host] = rs
}

func (p *publisher) publish(s gpu.Sample) {
	st := core.HostStatus{Host: p.c.Host(), Time: p.c.Now(), Backend: s.Backend, Simulated: s.Simulated}
	for _, d := range s.Devices {
		d.Processes = nil
		st.Devices = append(st.Devices, d)
	}
	p.mu.Lock()
	for h, rs := range p.offsets {
		if st.Skew == nil {
			st.Skew = map[string]float64{}
		}
		st.Skew[h] = slices.Max(rs).Seconds()
	}
	p.mu.Unlock()
	data, err := json.Marshal(st)
	if err == nil {
		err = p.pr.Publish(p.c.Context(), p.c.Host(), data, p.ttl)
	}
	if err != nil && !p.failing && p.c.Context().Err() == nil { // cut short by Ctrl-C: nothing failed
		select {
		case p.errs <- fmt.Errorf("publish this host's status: %w", err):
		default:
		}
	}
	p.failing = err != nil
}

// forgetHistory lets etcd forget the ledger's versions older than
// historyKept; a failure is reported once per spell of failures.
func (p *publisher) forgetHistory() {
	hk, ok := p.c.Ledger().(storage.HistoryKeeper)
	if !ok {
		return
	}
	err := hk.ForgetHistory(p.c.Context(), p.c.Now(), historyKept)
	if err != nil && !p.forgetting && p.c.Context().Err() == nil {
		select {
		case p.errs <- fmt.Errorf("compact etcd's history of the ledger: %w", err):
		default:
		}
	}
	p.forgetting = err != nil
}
