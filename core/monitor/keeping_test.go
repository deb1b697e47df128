package monitor

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// shortPresence is the presence TTL of the tests where a host's status must
// really lapse: etcd's lease runs on the server's own time, which no fake
// clock moves, so those tests wait it out; 2 s is etcd's shortest lease at
// its default election timeout.
const shortPresence = 2 * time.Second

// labHost is one host of a test lab: its client, store and monitor.
type labHost struct {
	c      *core.Client
	m      *Monitor
	s      storage.Store
	log    *actLog
	passes *passCount
	stop   context.CancelFunc
}

// passCount counts a monitor's passes, so that a test knows one ran after
// it moved the clock.
type passCount struct {
	unobserved
	n atomic.Int64
}

func (p *passCount) Ticked(time.Duration) { p.n.Add(1) }

// startHost starts a monitor of host on its own store, with clk as its
// clock.
func startHost(t *testing.T, open storetest.Opener, host string, clk clock.Clock) *labHost {
	t.Helper()
	me := proc.CurrentIdentity()
	sim := gpu.NewSim(gpu.SimOptions{})
	h := &labHost{s: open(), log: &actLog{}, passes: &passCount{}}
	h.c = core.NewClient(core.Options{Ledger: h.s, As: &me, Host: host, Clock: clk, Devices: simDevices(sim)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.stop = func() { cancel(); <-done }
	t.Cleanup(h.stop)
	m := New(h.c, Options{Backend: sim, OnAct: h.log.add, Observer: h.passes, PresenceTTL: shortPresence})
	h.m = m
	go func() { _ = m.Run(ctx); close(done) }()
	return h
}

// live waits until from sees host's monitor publishing, or no longer.
func live(t *testing.T, from *core.Client, host string, want bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		present, err := from.Presence().Present(context.Background())
		require.NoError(t, err)
		_, ok := present[host]
		return ok == want
	}, 15*time.Second, 50*time.Millisecond, "%s live: %v", host, want)
}

// passAfter moves clk to at and waits until each host's monitor has made a
// whole pass since. A monitor passes when its timer fires or the ledger
// changes: after the first pass, one that wrote nothing sleeps until the
// clock moves on, so the clock is nudged on by a few milliseconds at a
// time while a host has not passed twice (on a loaded machine the write
// that woke it on a quiet one may not come).
func passAfter(t *testing.T, clk *clock.Fake, at time.Time, hosts ...*labHost) {
	t.Helper()
	was := make([]int64, len(hosts))
	for i, h := range hosts {
		was[i] = h.passes.n.Load()
	}
	clk.Set(at)
	for i, h := range hosts {
		require.Eventually(t, func() bool {
			if h.passes.n.Load() >= was[i]+2 {
				return true
			}
			clk.Advance(5 * time.Millisecond)
			return false
		}, 15*time.Second, 20*time.Millisecond, "%s made no pass", h.c.Host())
	}
}

func (l *actLog) find(kind domain.EventKind, partition uint64) (Act, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.acts {
		if a.Kind == kind && a.Partition == partition {
			return a, true
		}
	}
	return Act{}, false
}

// A host whose clock runs 90 s ahead leaves another host's booking alone
// while that host's monitor publishes: the booking ends at its own host's
// deadline, by that host's monitor, and the event is an ordinary one.
func TestFastClockLeavesOtherHostsBookings(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	clk := coretest.NewFakeClock()
	a := startHost(t, open, "gpuA", clk)
	me := proc.CurrentIdentity()
	fast := core.NewClient(core.Options{Ledger: open(), As: &me, Host: "gpuB", Clock: clock.Offset(clk, 90*time.Second), Devices: servicetest.Devices})
	live(t, fast, "gpuA", true)
	p, err := a.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Minute})
	require.NoError(t, err)

	// gpuB's clock is past the deadline, gpuA's 89 s short of it.
	passAfter(t, clk, p.Expires.Add(-89*time.Second), a)
	_, err = New(fast, Options{}).Tick()
	require.NoError(t, err)
	got, err := fast.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "gpuB's clock does not end gpuA's booking")

	passAfter(t, clk, p.Expires, a)
	require.Eventually(t, func() bool { _, ok := a.log.find(domain.EventExpired, p.ID); return ok }, 15*time.Second, 10*time.Millisecond)
	ended, _ := a.log.find(domain.EventExpired, p.ID)
	require.NotContains(t, ended.Detail, "expired by", "its own host ended it")
	require.NotContains(t, ended.Detail, "in doubt")
}

// Once no monitor of a host publishes (its etcd lease lapsed), another
// host's monitor ends its bookings at their deadlines and says why; while
// the host's status stands, even with its monitor stopped, nobody does.
func TestStoppedHostsBookingsAreTakenOver(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	clk := coretest.NewFakeClock()
	b := startHost(t, open, "gpuB", clk)
	live(t, b.c, "gpuB", true) // publishing, so it sees gpuA's first status
	a := startHost(t, open, "gpuA", clk)
	live(t, b.c, "gpuA", true)
	p, err := a.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)

	a.stop() // its store lives on, and with it its lease
	passAfter(t, clk, p.Expires.Add(time.Second), b)
	got, err := b.c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "gpuA's status stands: its bookings are its own")

	require.NoError(t, a.s.(io.Closer).Close())
	live(t, b.c, "gpuA", false) // the real wait: the lease's TTL on the server
	coretest.AdvanceUntil(t, clk, time.Second, 15*time.Second, func() bool { _, ok := b.log.find(domain.EventExpired, p.ID); return ok })
	ended, _ := b.log.find(domain.EventExpired, p.ID)
	require.Contains(t, ended.Detail, "GPU gpuA:0, 50%")
	require.Contains(t, ended.Detail, "expired by gpuB: gpuA's monitor has not been seen for ")
	evs, err := b.c.Events(0, 0)
	require.NoError(t, err)
	require.Equal(t, ended.Detail, evs[len(evs)-1].Detail, "the audit trail says so")
}

// A host none of whose monitors ever published has its bookings kept by
// another host's monitor, which says so; a monitor just started first gives
// the hosts a presence interval to show up (and its clock to be measured).
func TestHostWithNoMonitorIsKeptAfterAPresenceInterval(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	clk := coretest.NewFakeClock()
	me := proc.CurrentIdentity()
	lone := core.NewClient(core.Options{Ledger: open(), As: &me, Host: "gpuA", Clock: clk, Devices: servicetest.Devices})
	p, err := lone.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	clk.Set(p.Expires.Add(time.Second))
	b := startHost(t, open, "gpuB", clk)
	passAfter(t, clk, clk.Now(), b)
	got, err := b.c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "gpuB has just started")

	passAfter(t, clk, clk.Now().Add(presenceEvery), b)
	require.Eventually(t, func() bool { _, ok := b.log.find(domain.EventExpired, p.ID); return ok }, 15*time.Second, 10*time.Millisecond)
	ended, _ := b.log.find(domain.EventExpired, p.ID)
	require.Contains(t, ended.Detail, "expired by gpuB: no monitor of gpuA is publishing")
}

// A host whose clock disagrees with most of the lab's says so once, ends
// only its own host's bookings (their events say the time is in doubt),
// and takes over none of a stopped host's: a host whose clock agrees does,
// at the deadline. The others see the doubt in their hosts' view.
func TestClockInDoubtJudgesOnlyItsOwnBookings(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	clk := coretest.NewFakeClock()
	a := startHost(t, open, "gpuA", clk)
	c := startHost(t, open, "gpuC", clk)
	// gpuA and gpuC measure each other before gpuB shows up: measuring
	// gpuB alone, either would be one of two hosts that disagree.
	require.Eventually(t, func() bool {
		_, ac := a.m.pub.lastSeen("gpuC")
		_, ca := c.m.pub.lastSeen("gpuA")
		return ac && ca
	}, 15*time.Second, 10*time.Millisecond, "gpuA and gpuC see each other")
	b := startHost(t, open, "gpuB", clock.Offset(clk, 90*time.Second))
	for _, h := range []string{"gpuA", "gpuB", "gpuC"} {
		live(t, a.c, h, true)
	}
	inDoubt := func() bool { _, ok := b.log.find(domain.EventClock, 0); return ok }
	// In quarter steps, slowly enough for statuses to arrive (through
	// etcd's watch, in real time) before the fake clock moves on by
	// anything like the 2 s bound: a late one reads as a clock behind.
	require.Eventually(t, func() bool {
		if inDoubt() {
			return true
		}
		clk.Advance(presenceEvery / 4)
		return false
	}, 15*time.Second, 50*time.Millisecond, "gpuB says its clock is in doubt")
	said, _ := b.log.find(domain.EventClock, 0)
	// Said when it first measured another host: one or both.
	// 90 s, give or take the fake clock's quarter steps that a status
	// spent in etcd's watch (either host's: the reading can come out a
	// step under 90 as well as over).
	const ahead = `gpuB's clock is (89|9[01])\.\d s ahead of the other hosts'`
	require.Regexp(t, `^`+ahead+` \(1 of [23] hosts within 2s of it\): its monitor ends only gpuB's bookings`, said.Detail)
	for _, h := range []*labHost{a, c} {
		_, ok := h.log.find(domain.EventClock, 0)
		require.False(t, ok, "%s's clock agrees with most", h.c.Host())
	}
	// What gpuB's own app and chronos backends show.
	hosts, err := b.c.Hosts()
	require.NoError(t, err)
	warnings := core.SkewWarnings("gpuB", hosts)
	require.NotEmpty(t, warnings)
	require.Regexp(t, ahead, warnings[0])

	theirs, err := a.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Minute})
	require.NoError(t, err)
	own, err := b.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	a.stop()
	require.NoError(t, a.s.(io.Closer).Close())
	live(t, c.c, "gpuA", false) // the real wait: the lease's TTL on the server

	// gpuB's clock is past both deadlines; gpuC's is past neither.
	passAfter(t, clk, own.Expires.Add(-90*time.Second), b, c)
	require.Eventually(t, func() bool { _, ok := b.log.find(domain.EventExpired, own.ID); return ok }, 15*time.Second, 10*time.Millisecond)
	ended, _ := b.log.find(domain.EventExpired, own.ID)
	require.Regexp(t, `by gpuB's clock, which is 9[01]\.\d s ahead of the other hosts': when it ended is in doubt`, ended.Detail)
	got, err := c.c.Get(theirs.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "gpuB takes over nothing")

	coretest.SettleAt(t, clk, theirs.Expires, 15*time.Second, func() bool { _, ok := c.log.find(domain.EventExpired, theirs.ID); return ok })
	took, _ := c.log.find(domain.EventExpired, theirs.ID)
	require.Contains(t, took.Detail, "expired by gpuC: gpuA's monitor has not been seen for ")
	_, byB := b.log.find(domain.EventExpired, theirs.ID)
	require.False(t, byB)
	require.False(t, clk.Now().Before(theirs.Expires), "ended at gpuC's deadline, not gpuB's")
}

// On a ledger file (one host, no statuses) the monitor keeps every
// booking's books, as it always has.
func TestLedgerFileMonitorKeepsEveryBooking(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	s := storetest.Bolt(t)()
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: s, As: &me, Clock: clk, Devices: servicetest.Devices})
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	var log actLog
	m := New(c, Options{OnAct: log.add})
	clk.Set(p.Expires)
	_, err = m.Tick()
	require.NoError(t, err)
	ended, ok := log.find(domain.EventExpired, p.ID)
	require.True(t, ok)
	require.True(t, strings.HasSuffix(ended.Detail, "after the deadline"), ended.Detail)
	require.NotContains(t, strings.Join(log.kinds(), " "), string(domain.EventClock))
}

// A host's clock is in doubt when most of the hosts measured, itself
// included, are more than SkewBound from it.
func TestClockStanding(t *testing.T) {
	t.Parallel()
	s := time.Second
	for _, tc := range []struct {
		name    string
		others  []time.Duration // each other host's clock minus this one's
		doubt   bool
		ahead   time.Duration
		summary string
	}{
		{"alone", nil, false, 0, "(1 of 1 hosts"},
		{"within the bound", []time.Duration{2 * s, -2 * s}, false, 0, "(3 of 3 hosts"},
		{"the one off", []time.Duration{-90 * s, -91 * s}, true, 90 * s, "90.0 s ahead"},
		{"one other off", []time.Duration{90 * s, 0}, false, 0, "(2 of 3 hosts"},
		{"two that disagree", []time.Duration{3 * s}, true, -3 * s, "3.0 s behind"},
		{"no majority", []time.Duration{0, 50 * s, 60 * s}, true, -50 * s, "(2 of 4 hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := core.StandingOf("gpu1", tc.others)
			require.Equal(t, tc.doubt, st.InDoubt())
			require.Equal(t, tc.ahead, st.Ahead)
			require.Contains(t, st.String(), tc.summary)
		})
	}
}

// The statuses that make every other host current may arrive between a
// pass reading its clock's standing and asking whether the others are
// current (the presence read is a round trip): they must not make a clock
// stepped ahead look current and trusted.
func TestStepMeasuredDuringThePresenceRead(t *testing.T) {
	t.Parallel()
	clk := coretest.NewFakeClock()
	bclk := &steppedClock{Clock: clk}
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: storetest.Bolt(t)(), As: &me, Host: "gpuB", Clock: bclk})
	p := &publisher{c: c, offsets: map[string][]time.Duration{}, seen: map[string]time.Time{}}
	status := func(host string) storage.Published {
		data, err := json.Marshal(core.HostStatus{Host: host, Time: clk.Now()})
		require.NoError(t, err)
		return storage.Published{Host: host, Status: data}
	}
	present := map[string][]byte{"gpuA": nil, "gpuC": nil}
	p.observe(status("gpuA"))
	p.observe(status("gpuC"))
	require.True(t, p.current(present, bclk.Now()))
	require.False(t, p.standing().InDoubt())

	bclk.Step(90 * time.Second)
	now := bclk.Now()         // the pass's time
	before := p.standing()    // what the pass read before the presence
	p.observe(status("gpuA")) // delivered during the round trip
	p.observe(status("gpuC"))
	require.False(t, before.InDoubt())
	require.False(t, p.current(present, now), "a clock found 90 s ahead is not current")
	require.True(t, p.standing().InDoubt())
}
