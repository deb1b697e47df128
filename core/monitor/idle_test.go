package monitor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// ladderPolicy is the idle ladder with durations short enough for tests:
// warned after 2 and 4 idle minutes, reclaimed after 6.
func ladderPolicy(reclaim string) domain.Policy {
	p := policy.Default()
	p.Reclaim, p.Idle, p.IdleWarn, p.IdleStart = reclaim, 6*time.Minute, []time.Duration{2 * time.Minute, 4 * time.Minute}, 3*time.Minute
	return p
}

// idleRig is a ledger, a simulated GPU set and a fake clock they share.
type idleRig struct {
	t     *testing.T
	clock *clock.Fake
	sim   *gpu.Sim
	path  string
	c     *core.Client // the booking owner's
}

func newIdleRig(t *testing.T, owner domain.Identity) *idleRig {
	t.Helper()
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Now: clock.Now})
	path := filepath.Join(t.TempDir(), "chronos.db")
	return &idleRig{t: t, clock: clock, sim: sim, path: path, c: servicetest.SimClient(bolt.New(path), sim, owner, clock)}
}

// book makes a booking on the simulated GPU with no made-up load and, with
// a process, shows a real process of it there holding 2 GiB.
func (r *idleRig) book(withProcess bool) (uint64, int) {
	r.t.Helper()
	p, err := r.c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.25), Duration: 2 * time.Hour})
	require.NoError(r.t, err)
	if !withProcess {
		return p.ID, 0
	}
	cmd := startChild(r.t, p.ID, "sleep 600")
	r.sim.Attach(coretest.IdleGPU, cmd.Process.Pid, 2<<30)
	return p.ID, cmd.Process.Pid
}

// notifyAt gives the rig a client of the same user whose notify file
// (Options.NotifyFile) is path, as root's chronos has /etc/chronos/notify.
func (r *idleRig) notifyAt(path string) {
	r.t.Helper()
	me := r.c.Me()
	r.c = core.NewClient(core.Options{Ledger: r.c.Ledger(), As: &me, Clock: r.clock, NotifyFile: path, Devices: func() (core.Listing, error) {
		devs, err := r.sim.Devices()
		return core.Listing{Backend: r.sim.Name(), Devices: devs}, err
	}})
}

func (r *idleRig) monitor(pol domain.Policy, opts Options) *Monitor {
	opts.Backend, opts.Policy = r.sim, &pol
	if opts.Signaller == nil {
		opts.Signaller = noSignals{}
	}
	return New(r.c, opts)
}

// run advances the clock by d in steps, each monitor ticking in turn
// after each step.
func (r *idleRig) run(d, step time.Duration, ms ...*Monitor) {
	r.t.Helper()
	for end := r.clock.Now().Add(d); r.clock.Now().Before(end); {
		r.clock.Advance(step)
		for _, m := range ms {
			_, err := m.Tick()
			require.NoError(r.t, err)
		}
	}
}

func (r *idleRig) usage(id uint64) domain.BookingUsage {
	r.t.Helper()
	u, err := r.c.BookingUsage(id)
	require.NoError(r.t, err)
	return u
}

func TestIdleBookingIsWarnedThenReclaimed(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	var log actLog
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{OnAct: log.add})

	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id), "warned once idle for 2 minutes")
	require.Equal(t, 2*time.Minute, r.usage(id).IdleFor)

	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))

	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
	got, err := r.c.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	require.Equal(t, r.clock.Now(), got.Ended)
	// Reclaimed is its own state, and its deadline is kept (it showed
	// "expired", its end overwritten with the reclaim time).
	now := r.clock.Now()
	require.Equal(t, domain.StatusReclaimed, got.Status(now, 0))
	require.Equal(t, got.Created.Add(2*time.Hour), got.Expires, "the deadline it was booked with")
	j := view.Booking(*got, now, 0)
	require.Equal(t, domain.StatusReclaimed, j.State)
	require.Equal(t, now.UTC(), j.Ended)
	all, err := r.c.List(true)
	require.NoError(t, err)
	require.Equal(t, domain.StatusReclaimed, all[0].Status(now, 0))
	st, err := human.ParseStatus("reclaimed")
	require.NoError(t, err)
	require.Equal(t, domain.StatusReclaimed, st)
	u := r.usage(id)
	require.Equal(t, 6*time.Minute, u.Idle)
	require.Equal(t, r.clock.Now(), u.Reclaimed)
	require.Equal(t, uint64(2<<30), u.MemoryPeak)
	require.Contains(t, log.kinds(), "reclaimed")
}

// A booking whose process works is never warned nor reclaimed, and its
// usage says how much GPU time it used.
func TestBusyBookingIsNeverReclaimed(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, pid := r.book(true)
	r.sim.SetSM(pid, 50)
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})

	r.run(10*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created"}, servicetest.EventKinds(t, r.c, id))
	got, err := r.c.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State)
	u := r.usage(id)
	require.Zero(t, u.Idle)
	require.Zero(t, u.IdleFor)
	// The process alone on the GPU: the device's utilization (50% plus
	// the simulation's 0–4% of noise) counts, so a little over 5 minutes.
	require.InDelta(t, (5 * time.Minute).Seconds(), u.GPUTime.Seconds(), 15)
	require.Equal(t, r.clock.Now().Truncate(time.Minute), u.LastActive)
}

// A process that wakes once a minute for a moment of work is idle: the
// threshold is on mean SM over the minute, not on any sample above zero.
func TestTinyKernelOnceAMinuteStaysIdle(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, pid := r.book(true)
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	for range 3 {
		r.sim.SetSM(pid, 100)
		r.run(time.Second, time.Second, m)
		r.sim.SetSM(pid, 0)
		r.run(59*time.Second, time.Second, m)
	}
	require.Equal(t, 3*time.Minute, r.usage(id).IdleFor)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id), "warned at 2 idle minutes")

	// Work for a third of a minute is work.
	r.sim.SetSM(pid, 100)
	r.run(20*time.Second, time.Second, m)
	r.sim.SetSM(pid, 0)
	r.run(40*time.Second, time.Second, m)
	u := r.usage(id)
	require.Zero(t, u.IdleFor)
	require.Zero(t, u.Warnings, "working resets the ladder")
	require.Equal(t, 3*time.Minute, u.Idle)
}

// With nobody waiting, reclaim=when-waiting only warns.
func TestWithoutAWaiterOnlyWarned(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	m := r.monitor(ladderPolicy(policy.ReclaimWhenWaiting), Options{})
	r.run(15*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))
	got, err := r.c.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State)
	require.Equal(t, 15*time.Minute, r.usage(id).IdleFor)
}

// With reclaim=off (the default) idle time is counted and nothing else.
func TestLadderOffOnlyCounts(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{})
	r.run(10*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created"}, servicetest.EventKinds(t, r.c, id))
	require.Equal(t, 10*time.Minute, r.usage(id).Idle)
}

// A booking with no process at all is idle only after idle-start: booking
// first and starting the job a few minutes later is fine.
func TestNoProcessIsIdleAfterTheStartAllowance(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(false)
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(3*time.Minute, 10*time.Second, m)
	u := r.usage(id)
	require.Zero(t, u.Idle, "within idle-start (3m)")
	require.Equal(t, r.clock.Now(), u.Through)

	r.run(5*time.Minute, 10*time.Second, m)
	require.Equal(t, 5*time.Minute, r.usage(id).Idle)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))
}

// A booking made ahead gets its idle-start allowance from its start, not
// from when it was made, and no idle time before it started.
func TestBookingAheadIsNotIdleBeforeItsStartAllowance(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	p, err := r.c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.25), Duration: 2 * time.Hour, Start: r.clock.Now().Add(30 * time.Minute)})
	require.NoError(t, err)
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(30*time.Minute+3*time.Minute, 10*time.Second, m)
	require.Zero(t, r.usage(p.ID).Idle, "within idle-start (3m) of its start")
	require.Equal(t, []string{"created"}, servicetest.EventKinds(t, r.c, p.ID))
}

// A hold stops the ladder until it ends; then it starts over, from the
// first warning, with the spacing it promises.
func TestHoldPreventsReclaim(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))

	_, err := r.c.Hold(id, 10*time.Minute, "  ")
	require.ErrorIs(t, err, domain.ErrInput)
	_, err = r.c.Hold(id, 5*time.Hour, "preprocessing on CPU")
	require.ErrorIs(t, err, domain.ErrTooLong, "hold-max is 4h")
	_, err = core.NewClient(core.Options{Ledger: bolt.New(r.path), As: &coretest.Bob, Clock: r.clock}).Hold(id, time.Hour, "mine now")
	require.ErrorIs(t, err, domain.ErrNotOwner)
	u, err := r.c.Hold(id, 10*time.Minute, "preprocessing on CPU")
	require.NoError(t, err)
	require.Equal(t, r.clock.Now().Add(10*time.Minute), u.HeldUntil)

	r.run(10*time.Minute-10*time.Second, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "held"}, servicetest.EventKinds(t, r.c, id), "nothing happens while held")
	u = r.usage(id)
	require.Equal(t, 11*time.Minute, u.IdleFor, "idle time still counts")
	require.Equal(t, 1, u.Holds)
	require.Equal(t, "preprocessing on CPU", u.HoldReason)

	// The hold is over: warned again at once, again 2 minutes later, and
	// reclaimed 2 minutes after that.
	r.run(10*time.Second, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "held", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "held", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "held", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
}

// A monitor that stops mid-ladder and another that starts later neither
// repeat a warning nor skip one: the ladder lives in the ledger.
func TestMonitorRestartMidLadder(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	first := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(2*time.Minute+30*time.Second, 10*time.Second, first)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))

	// The new monitor sees too little of the minute it starts in to judge
	// it; from the next one on it counts.
	second := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(90*time.Second, 10*time.Second, second)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id), "the first warning is not repeated")
	require.Equal(t, 3*time.Minute, r.usage(id).IdleFor)
	r.run(time.Minute, 10*time.Second, second)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id), "nor the second skipped")
	r.run(2*time.Minute, 10*time.Second, second)
	require.Equal(t, []string{"created", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
}

// Turning the ladder on over a booking long idle warns first and keeps the
// promised spacing: no warning and reclaim in the same breath.
func TestLadderTurnedOnLateKeepsItsSpacing(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	r.run(20*time.Minute, 10*time.Second, r.monitor(ladderPolicy(policy.ReclaimOff), Options{}))
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
}

// Three monitors on one ledger: each minute is accounted once, each step
// of the ladder taken once, and the ledger written once a minute.
func TestThreeMonitorsAccountEachMinuteOnce(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	other, _ := r.book(false)
	// The GPU readings `create` shows keep their own schedule; an inventory
	// from another backend leaves them out, so that only accounting writes.
	require.NoError(t, r.c.Ledger().Update(context.Background(), func(tx *storage.Tx) error {
		inv, _, err := tx.Inventory()
		inv.Backend = "another backend"
		if err == nil {
			err = tx.PutInventory(inv)
		}
		return err
	}))
	store := &coretest.CountingStore{Store: bolt.New(r.path)}
	var ms []*Monitor
	for range 3 {
		c := core.NewClient(core.Options{Ledger: store, As: &coretest.Alice, Clock: r.clock})
		pol := ladderPolicy(policy.ReclaimAlways)
		ms = append(ms, New(c, Options{Backend: r.sim, Policy: &pol, Signaller: noSignals{}}))
	}
	r.run(5*time.Minute, 10*time.Second, ms...)
	require.Equal(t, []string{"created", "idle", "idle"}, servicetest.EventKinds(t, r.c, id))
	require.Equal(t, 5*time.Minute, r.usage(id).Idle)
	require.Equal(t, 2*time.Minute, r.usage(other).Idle, "idle after its 3 minutes' allowance")
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, other))
	require.Equal(t, int64(5), store.Updates.Load(), "one write a minute, for every booking and GPU, by one of the three")

	var minutes []domain.GPUMinute
	require.NoError(t, r.c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		minutes, err = tx.GPUMinutes(time.Time{}, r.clock.Now(), "")
		return err
	}))
	require.Len(t, minutes, 5*4, "one sample per GPU per minute")
}

// reclaim=when-waiting releases an idle booking once someone waits for
// its GPU, and in the same transaction the room goes to the one waiting;
// the idle owner is charged for the time held.
func TestWhenWaitingReclaimsForTheLine(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	bobs := servicetest.SimClient(bolt.New(r.path), r.sim, coretest.Bob, r.clock)
	_, err := bobs.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.75), Duration: 2 * time.Hour})
	require.NoError(t, err, "the GPU is now full")
	m := r.monitor(ladderPolicy(policy.ReclaimWhenWaiting), Options{})
	r.run(6*time.Minute, 10*time.Second, m)
	got, err := r.c.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "idle past idle=, but nobody waits")

	_, q, err := bobs.Enqueue(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.25), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	r.run(time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle", "idle", "reclaimed"}, servicetest.EventKinds(t, r.c, id))
	st, err := bobs.Request(q.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Granted, st.State, "the reclaimed room went to the line")
	users, err := report.Usage(r.c)
	require.NoError(t, err)
	for _, u := range users {
		if u.User == "alice" {
			require.Greater(t, u.Usage, 0.0, "charged for the time held")
		}
	}
}

// list shows how long a booking has been idle, and --json says so, while
// monitors watch it; a hold shows too.
func TestListShowsIdle(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, pid := r.book(true)
	busy, busyPID := r.book(true)
	r.sim.SetSM(busyPID, 90)
	r.sim.SetSM(pid, 0)
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{})
	r.run(5*time.Minute, 10*time.Second, m)
	// The busy one is not alone on the GPU: its own 90% is what counts.
	parts, err := r.c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 2)
	now := r.clock.Now()
	require.Equal(t, "5m", human.FormatIdle(parts[0].Partition, parts[0].Usage, now))
	require.Equal(t, "-", human.FormatIdle(parts[1].Partition, parts[1].Usage, now))
	j := view.Booking(parts[0], now, time.Minute)
	require.True(t, j.Idle)
	require.Equal(t, 300.0, j.IdleSeconds)
	require.Equal(t, 300.0, j.Usage.IdleSeconds)
	require.Equal(t, now, j.Usage.AccountedUntil)
	j = view.Booking(parts[1], now, time.Minute)
	require.False(t, j.Idle)
	require.InDelta(t, 270, j.Usage.GPUSeconds, 1)
	require.Equal(t, busy, j.ID)

	_, err = r.c.Hold(id, time.Hour, "waiting for data")
	require.NoError(t, err)
	parts, err = r.c.List(false)
	require.NoError(t, err)
	require.Equal(t, "5m (held 1h)", human.FormatIdle(parts[0].Partition, parts[0].Usage, now))
	require.Equal(t, "waiting for data", view.Booking(parts[0], now, 0).Usage.HoldReason)

	// With no monitor watching, the figure grows stale and is not shown.
	r.clock.Advance(10 * time.Minute)
	parts, err = r.c.List(false)
	require.NoError(t, err)
	require.False(t, view.Booking(parts[0], r.clock.Now(), 0).Idle)
	require.True(t, strings.HasPrefix(human.FormatIdle(parts[0].Partition, parts[0].Usage, r.clock.Now()), "- (held"))
}

// A GPU's last hour: a sample per minute, each booking's span, and its idle
// stretches, ready for the app to draw.
func TestGPUHistory(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	r.clock.Set(r.clock.Now().Add(-30 * time.Second)) // book mid-minute
	first, pid := r.book(true)
	// Another GPU's booking is not this GPU's history.
	_, err := r.c.Create(core.Request{Device: coretest.IdleGPU - 1, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{})
	r.run(3*time.Minute+30*time.Second, 10*time.Second, m) // 12:00–12:03 idle
	r.sim.SetSM(pid, 80)
	r.run(2*time.Minute, 10*time.Second, m) // 12:03–12:05 busy, and 12:05's first sample
	r.sim.SetSM(pid, 0)
	second, _ := r.book(false)
	r.run(5*time.Minute, 10*time.Second, m) // 12:05–12:10 idle
	_, err = r.c.Release(second)
	require.NoError(t, err)

	h, err := report.History(r.c, coretest.IdleGPU, time.Hour)
	require.NoError(t, err)
	require.Equal(t, "SIM-00000000-0000-0000-0000-000000000003", h.UUID)
	require.Len(t, h.Minutes, 10)
	at := func(hh, mm int) time.Time { return time.Date(2026, 11, 29, hh, mm, 0, 0, time.UTC) }
	require.Equal(t, at(12, 0), h.Minutes[0].Minute.UTC())
	require.Equal(t, uint64(2<<30), h.Minutes[0].MemoryUsed)
	require.Equal(t, []uint64{first}, h.Minutes[3].Active)
	require.Greater(t, h.Minutes[3].Util, 60, "five of its six samples at 80%")
	require.Equal(t, []uint64{first}, h.Minutes[6].Idle, "the second is within its idle-start")
	require.Equal(t, []uint64{first, second}, h.Minutes[9].Idle)

	require.Len(t, h.Bookings, 2, "GPU %d's bookings only", coretest.IdleGPU)
	b := h.Bookings[0]
	require.Equal(t, first, b.ID)
	require.Equal(t, "alice", b.Owner)
	require.Equal(t, at(11, 59).Add(30*time.Second), b.Start.UTC())
	require.Equal(t, r.clock.Now(), b.End)
	require.Equal(t, []report.Span{{From: at(12, 0), To: at(12, 3)}, {From: at(12, 6), To: at(12, 10)}}, utcSpans(b.Idle))
	require.Equal(t, r.clock.Now(), h.Bookings[1].End, "released now")
	require.Equal(t, []report.Span{{From: at(12, 8), To: at(12, 10)}}, utcSpans(h.Bookings[1].Idle))

	_, err = report.History(r.c, 9, time.Hour)
	require.ErrorIs(t, err, domain.ErrNoDevice)
}

func utcSpans(spans []report.Span) []report.Span {
	for i := range spans {
		spans[i].From, spans[i].To = spans[i].From.UTC(), spans[i].To.UTC()
	}
	return spans
}

// GPU time used with no booking is counted per user and day.
func TestUnbookedUseIsAccounted(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	stray := exec.Command("sleep", "600")
	require.NoError(t, stray.Start())
	t.Cleanup(func() { stray.Process.Kill(); stray.Wait() })
	r.sim.Attach(coretest.IdleGPU, stray.Process.Pid, 1<<30)
	r.sim.SetSM(stray.Process.Pid, 50)
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{})
	r.run(3*time.Minute, 10*time.Second, m)

	var got []domain.UnbookedUse
	require.NoError(t, r.c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		got, err = tx.Unbooked(r.clock.Now())
		return err
	}))
	byUID := map[int]time.Duration{}
	for _, u := range got {
		byUID[u.UID] += u.GPUTime
	}
	require.Equal(t, 90*time.Second, byUID[os.Getuid()], "50% of a GPU for 3 minutes")
	// The simulation's own made-up users on GPUs 0–2 are nobody's use:
	// they never reach report or metrics.
	require.Len(t, byUID, 1, "only the real process's owner: %v", byUID)
}

// On a ledger several hosts share, a booking of another host's GPU 3 is
// not this monitor's to judge, however idle this host's GPU 3 is.
func TestOtherHostsBookingsAreNotAccounted(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(false)
	require.NoError(t, r.c.Ledger().Update(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(id)
		if err != nil {
			return err
		}
		p.DeviceUUID = "GPU-of-another-host"
		return tx.PutPartition(&p)
	}))
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})
	r.run(10*time.Minute, 10*time.Second, m)
	require.Equal(t, domain.BookingUsage{Partition: id}, r.usage(id))
	require.Equal(t, []string{"created"}, servicetest.EventKinds(t, r.c, id))
}

// when-waiting reclaims only for a waiter the room would let start: one
// kept out by its own quota gains nothing from it, and the GPU would sit
// empty (found twice in the fairness and newcomer reports). Once the
// quota lets the waiter in, the reclaim comes, with the room.
func TestWhenWaitingLeavesABookingNoWaiterCanUse(t *testing.T) {
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	bobs := servicetest.SimClient(bolt.New(r.path), r.sim, coretest.Bob, r.clock)
	_, err := bobs.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.75), Duration: 2 * time.Hour})
	require.NoError(t, err, "the GPU is now full")
	roots := servicetest.SimClient(bolt.New(r.path), r.sim, coretest.Root, r.clock)
	_, err = roots.SetPolicy([]string{"user-gpus=0.75"})
	require.NoError(t, err)
	_, q, err := bobs.Enqueue(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.25), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)

	m := r.monitor(ladderPolicy(policy.ReclaimWhenWaiting), Options{})
	r.run(8*time.Minute, 10*time.Second, m)
	got, err := r.c.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "idle past idle=, but the only waiter cannot use the room")
	require.NotContains(t, servicetest.EventKinds(t, r.c, id), "reclaimed")

	_, err = roots.SetPolicy([]string{"user-gpus=1"})
	require.NoError(t, err)
	r.run(time.Minute, 10*time.Second, m)
	require.Contains(t, servicetest.EventKinds(t, r.c, id), "reclaimed")
	st, err := bobs.Request(q.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Granted, st.State, "the reclaimed room went to him")
}
