// Package monitor makes bookings end on time: a Monitor, beside a
// core.Client, warns before a booking's deadline and ends its processes at
// it, accounts the GPU minutes each booking used, reclaims idle bookings
// for the line, records processes that use a GPU with no booking, keeps
// the bookings of hosts whose monitors stopped, and sends notices to the
// owner's terminals and root's webhook. It imports core; core never
// imports it.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

// Act is one thing a monitor did or saw: a booking expired or was warned, a
// process was signalled, or a signal was refused for want of permission.
type Act struct {
	Time      time.Time        `json:"time"`
	Kind      domain.EventKind `json:"kind"`
	Partition uint64           `json:"partition,omitempty"`
	// User is whose booking or process the act is about; UID goes with it
	// for a process.
	User   string `json:"user,omitempty"`
	UID    int    `json:"uid,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Detail string `json:"detail"`
}

func (a Act) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	if a.Partition != 0 {
		fmt.Fprintf(&b, " #%d", a.Partition)
	}
	if a.User != "" {
		fmt.Fprintf(&b, " (%s)", a.User)
	}
	if a.PID != 0 {
		fmt.Fprintf(&b, " pid %d", a.PID)
	}
	if a.Detail != "" {
		b.WriteString(": " + a.Detail)
	}
	return b.String()
}

// Options configure a Monitor. All fields are optional.
type Options struct {
	// Backend samples GPU processes; nil limits the monitor to expiring
	// bookings (no process is signalled).
	Backend gpu.Backend
	// Signaller sends signals; nil means PidfdSignaller.
	Signaller proc.Signaller
	// Policy overrides the ledger's policy (flags on `chronos --monitor`).
	Policy *domain.Policy
	// SampleEvery is how often GPU processes are checked against the
	// bookings; 1s when zero.
	SampleEvery time.Duration
	// MPS finds the MPS daemon serving a pipe directory ("" the default
	// one); procfs.CheckMPS when nil. A process such a daemon holds to its
	// booking's memory (see limitedByMPS) is MPS's to stop, not ours. It
	// is asked at every sample that finds a process over budget, since a
	// daemon may start or stop at any time.
	MPS func(pipeDir string) procfs.MPS
	// OnAct is called for every act, from the monitor's goroutine.
	OnAct func(Act)
	// Name identifies this monitor in claims; "host:pid" when empty.
	Name string
	// Root says the monitor may signal any user's process and keeps every
	// user's records (see keepsRecordsOf); when nil, it is RealRoot().
	Root *bool
	// OnNotice is called with every notice to this monitor's user (an idle
	// warning, "ends in 5m", a reclaim), whichever monitor recorded it: the
	// app shows them.
	OnNotice func(notice.Notice)
	// Notify says how notices reach owners' terminals and the webhook.
	Notify NotifyOptions
	// Observer is told of each pass, reading and signal (metrics); nil:
	// nobody.
	Observer Observer
	// PresenceTTL is how long this host's status outlives the monitor on
	// a ledger many hosts share (presenceTTL when zero): tests shorten it.
	PresenceTTL time.Duration
}

// errorRepeat is how often a monitor reports an error that persists.
const errorRepeat = time.Minute

// Monitor makes expiry happen: it flips bookings past their deadline to
// expired, records warnings before the end, and applies the enforcement
// policy to GPU processes. Any number of monitors may run on one ledger (every
// open TUI runs one); each act is claimed in a transaction first, so none is
// done twice, and an act a monitor may not do is left for one running as root.
type Monitor struct {
	c             *core.Client
	o             Options
	root          bool
	nextSample    time.Time
	nextInventory time.Time
	nextLine      time.Time        // when the waiting line next needs a look
	snap          *snapshot        // the ledger as last read; nil: read it again
	pub           *publisher       // this host's status for the other hosts; nil on a ledger file
	pr            storage.Presence // the other hosts' statuses; nil on a ledger file
	inDoubt       bool             // this host's clock disagrees with the lab's (see SkewBound)
	acct          accountant
	notes         notifier
	lastSample    *gpu.Sample // the GPUs' last sample, for watchDeadlines
	watch         *earlyTerm  // the deadlines coming during this pass
	spacing       writeSpacing

	// While the ledger cannot be reached (etcd down), the monitor acts on
	// the last snapshot it read (good): it stops processes of bookings
	// past their deadline, remembering its signals in offline since it
	// cannot claim them, and tries the ledger again at retryAt. What it
	// did meanwhile (unrecorded) goes in the audit trail, and its signals'
	// claims in the ledger, in the first pass that can write.
	good       *snapshot
	offline    map[string]domain.Claim
	unrecorded []Act
	retryAt    time.Time
	lastErr    error
}

// offlineRetry is how often a monitor tries a ledger it cannot reach: each
// try may wait out the store's timeout, and enforcement waits meanwhile.
const offlineRetry = 15 * time.Second

// changeGap is the least time from one pass's start to the next that a
// change notice starts. On a busy ledger every commit is a notice, and a
// monitor that read the whole ledger for each (20 times a second under
// soak-etcd's sixteen writers) halved every writer's pace on etcd; a
// commit's notices within the gap start one pass at its end. Neither the
// deadline watch's signals nor the passes the timer starts wait for it.
const changeGap = 250 * time.Millisecond

// snapshot is what a tick reads from the ledger. Run keeps it between
// ticks while the ledger is unchanged, so an idle monitor doesn't decode
// every booking every second.
type snapshot struct {
	parts   []domain.Partition
	claims  map[string]domain.Claim
	events  []domain.Event // new since the last snapshot
	waiting bool           // someone waits in line
	pol     domain.Policy
	// ledgerNotifyURL is a webhook the ledger's policy names: root's
	// monitor says it ignores it (see notifier.webhook).
	ledgerNotifyURL string
	// readings are the stored GPU readings, and inventoryBackend the
	// backend that wrote the inventory.
	readings         []domain.DeviceReading
	inventoryBackend string
	stamp            string // the ledger version it was read at
	read             time.Time
}

// snapshotMaxAge bounds how long a snapshot is trusted without a change
// notice, in case a change went unseen (a file time too coarse to tell).
const snapshotMaxAge = 10 * time.Second

// New returns a monitor acting through c.
func New(c *core.Client, o Options) *Monitor {
	if o.Signaller == nil {
		o.Signaller = proc.PidfdSignaller{}
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	if o.Observer == nil {
		o.Observer = unobserved{}
	}
	if o.MPS == nil {
		o.MPS = procfs.CheckMPS
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	m := &Monitor{c: c, o: o, root: proc.RealRoot(), notes: newNotifier(o.Notify, c.Clock(), c.NotifyFile()), pr: c.Presence(),
		pub: newPublisher(c, o.PresenceTTL)}
	if o.Root != nil {
		m.root = *o.Root
	}
	return m
}

// Run acts until ctx ends. It wakes at the next deadline, when the ledger
// changes, and every SampleEvery when it checks processes. Errors (a busy
// ledger, say) are reported as acts and retried; Run returns only when ctx
// ends.
func (m *Monitor) Run(ctx context.Context) error {
	changes := m.c.Ledger().Changes(ctx, 250*time.Millisecond)
	m.spacing = newWriteSpacing(m.c.Ledger()) // Run's passes only: Tick writes when asked
	var pubErrs <-chan error
	if m.pub != nil {
		pubErrs = m.pub.errs
		go m.pub.run(ctx)
	}
	timer := m.c.Clock().NewTimer(0)
	defer timer.Stop()
	defer m.settleWatch()
	changed := true
	var lastErr string
	var lastErrAt time.Time
	for {
		began := clock.Kernel.Now() // how long a pass takes is measured in real time
		next, err := m.tick(changed)
		m.o.Observer.Ticked(clock.Since(clock.Kernel, began))
		changed = false
		if err != nil && ctx.Err() != nil {
			return nil // stopped in the middle of a pass: no error to report
		}
		if err != nil {
			// The same error every second (a ledger it may only read, say)
			// is said again once a minute, not each time.
			now := m.c.Now()
			if msg := err.Error(); msg != lastErr || now.Sub(lastErrAt) >= errorRepeat || now.Before(lastErrAt) {
				m.report(Act{Time: now, Kind: domain.EventError, Detail: msg})
				lastErr, lastErrAt = msg, now
			}
			if !next.After(now) {
				next = now.Add(clock.MaxSleep)
			}
		}
		m.lastErr = err
		wait := min(max(clock.Until(m.c.Clock(), next), 0), clock.MaxSleep)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			changed = true
			timer.Stop()
			if d := changeGap - clock.Since(clock.Kernel, began); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-clock.Kernel.After(d):
				}
			}
		case err := <-pubErrs:
			m.report(Act{Time: m.c.Now(), Kind: domain.EventError, Detail: err.Error()})
			timer.Stop()
		case <-timer.C():
		}
	}
}

func (m *Monitor) report(a Act) {
	a.Detail = domain.BoundDetail(a.Detail)
	if m.o.OnAct != nil {
		m.o.OnAct(a)
	}
}

// signalPlan is one signal this monitor means to send.
type signalPlan struct {
	key    string // claim key
	sig    syscall.Signal
	proc   admission.Attribution
	reason string
	cause  domain.EventKind // expired, overbudget or unbooked
}

// Tick makes one pass: it expires and warns what is due and applies the
// policy to GPU processes. It returns when it next needs to run.
// Between the passes of Run a watch sends the SIGTERMs of deadlines as
// they come; Tick leaves none armed.
func (m *Monitor) Tick() (time.Time, error) {
	next, err := m.tick(true)
	m.settleWatch()
	return next, err
}

// read returns the ledger's state, from the snapshot when nothing can have
// changed since it was taken.
func (m *Monitor) read(changed bool, now time.Time) (*snapshot, error) {
	stamp := m.c.Ledger().Version()
	if s := m.snap; s != nil && !changed && s.stamp == stamp && now.Sub(s.read) < snapshotMaxAge && !now.Before(s.read) {
		return s, nil
	}
	if m.good != nil && now.Before(m.retryAt) && m.lastErr != nil {
		// Unreachable a moment ago: don't wait on it again yet, change
		// notice or not; each try may take the store's whole timeout.
		return nil, m.lastErr
	}
	s := &snapshot{pol: policy.Default(), stamp: stamp, read: now}
	err := m.c.Ledger().View(m.c.Context(), func(tx *storage.Tx) error {
		var err error
		if s.pol, err = ledger.Policy(tx); err != nil {
			return err
		}
		// Bookings that ended long ago have no processes left to act on.
		if s.parts, err = tx.PartitionsSince(now.Add(-s.pol.MaxLength - admission.AttributionWindow)); err != nil {
			return err
		}
		if s.claims, err = tx.Claims(); err != nil {
			return err
		}
		line, err := tx.WaitingRequests()
		if err != nil {
			return err
		}
		s.waiting = len(line) > 0
		inv, _, err := tx.Inventory()
		if err != nil {
			return err
		}
		s.inventoryBackend = inv.Backend
		// Readings that don't decode are replaced, not a reason to stop.
		s.readings, _ = tx.DeviceReadings()
		s.events, err = m.notes.events(tx, now)
		return err
	})
	if errors.Is(err, storage.ErrUnavailable) {
		m.retryAt = now.Add(offlineRetry)
	}
	if err != nil {
		return nil, err
	}
	s.ledgerNotifyURL = s.pol.NotifyURL
	if m.o.Policy != nil {
		s.pol = *m.o.Policy
	}
	m.snap, m.good, m.retryAt = s, s, time.Time{}
	return s, nil
}

// tick makes one pass. The SIGTERMs of deadlines that come while it runs,
// and after it until the next, are the watch's (see watchDeadlines): the
// watch over the wait before it is settled first, so that the pass counts
// what it sent, and a new one is armed from what the pass read.
func (m *Monitor) tick(changed bool) (time.Time, error) {
	m.settleWatch()
	now := m.c.Now()
	m.watch = m.watchDeadlines(now)
	next, err := m.onePass(changed, now)
	m.settleWatch()
	m.watch = m.watchDeadlines(m.c.Now())
	return next, err
}

//nolint:funlen,gocyclo // one pass of the monitor over shared state (snapshot, claims, acts); it splits with the monitor's move out of core (docs/code.md)
func (m *Monitor) onePass(changed bool, now time.Time) (time.Time, error) {
	m.notes.drain(m.report)
	snap, err := m.read(changed, now)
	if err != nil && m.good != nil && withoutLedger(err) {
		return m.enforceOffline(m.c.Now(), err) // the read may have taken a while
	}
	if err != nil {
		return now, err
	}
	parts, claims, pol := snap.parts, snap.claims, snap.pol
	// Each host's monitor keeps the books of its own host's bookings (see
	// keeping); processes are matched only against this host's, whose
	// GPUs it samples.
	local := slices.DeleteFunc(slices.Clone(parts), func(p domain.Partition) bool { return !m.c.OnThisHost(p) })
	if m.o.Backend != nil && !now.Before(m.nextInventory) {
		m.nextInventory = now.Add(inventoryEvery)
		if err := m.refreshInventory(); err != nil {
			return now, err
		}
	}

	kept := m.keep(parts, now, pol.WarnLead)
	due, warn := dueAt(kept.parts, now, pol.WarnLead)
	var atts []admission.Attribution
	var readings []domain.DeviceReading // readings to store
	var release, orphaned []uint64      // bookings whose chronos run died
	if m.o.Backend != nil && (len(due) > 0 || !now.Before(m.nextSample)) {
		s, err := m.o.Backend.Sample()
		if err != nil {
			return now, fmt.Errorf("sample GPUs: %w", err)
		}
		m.nextSample = now.Add(m.o.SampleEvery)
		m.lastSample = &s
		m.pub.offer(s)
		atts = admission.Attribute(s, local, now)
		m.o.Observer.Sampled(s, atts)
		m.acct.observe(s, atts, local, now)
		if err := m.acct.skipTaken(m.c.Context(), m.c.Ledger()); err != nil {
			return now, err
		}
		// Only readings of the GPUs the inventory lists: a simulated
		// backend never speaks for a ledger of real GPUs. A ledger many
		// hosts share keeps none: hosts' live readings go in their
		// published statuses instead.
		if rs := admission.ReadingOf(s, atts, now); m.c.Host() == "" && snap.inventoryBackend == s.Backend && admission.ReadingDue(snap.readings, rs) {
			readings = rs
		}
		release, orphaned = orphans(local, atts, now, m.root)
	}
	if len(m.offline) > 0 {
		// Signals sent while the ledger was away count as claimed: no
		// second SIGTERM, and SIGKILL after the grace from the first.
		claims = maps.Clone(claims)
		for k, c := range m.offline {
			if _, ok := claims[k]; !ok {
				claims[k] = c
			}
			if now.Sub(c.At) > admission.AttributionWindow {
				delete(m.offline, k)
			}
		}
	}
	plans, notices := m.plan(atts, local, claims, pol, now)
	todo := pass{due: due, warn: warn, notices: notices, plans: plans, release: release, orphaned: orphaned, readings: readings,
		offline: min(len(m.unrecorded), offlineBatch) + min(len(m.offline), offlineBatch)}
	acctBudget := todo.bound()
	due, warn, notices, plans, release, orphaned = todo.due, todo.warn, todo.notices, todo.plans, todo.release, todo.orphaned
	m.notes.prepare(snap, m.c.Me(), m.root)

	if !todo.empty() || len(m.notes.want) > 0 || m.acct.done != nil || len(m.unrecorded) > 0 {
		if at, wait := m.spacing.wait(now); wait {
			return at, nil // the deadline watch has sent what was due
		}
		m.snap = nil // this pass writes: read afresh next time
		var acts []Act
		var mine []signalPlan
		accounted, placeMore := false, false
		recordedOffline := 0 // of m.unrecorded
		// A pass goes ahead of other writers waiting their turn:
		// recording an expiry must not wait behind the lab's bookings; and
		// if it waits all the same, the processes of expired bookings get
		// their SIGTERM at the deadline regardless (see termEarly).
		early := m.termEarly(plans, local)
		began := m.c.Now()
		err := storage.UpdateUrgent(m.c.Context(), m.c.Ledger(), func(tx *storage.Tx) error {
			acts, mine, placeMore = nil, nil, false
			// Read once for every booking the pass ends, if it ends any.
			policy := ledger.PolicyOnce(tx)
			var err error
			if acts, err = m.expireAndWarn(tx, due, warn, atts, now, policy, kept); err != nil {
				return err
			}
			settled, err := m.settleOrphans(tx, release, orphaned, now, policy)
			if err != nil {
				return err
			}
			acts = append(acts, settled...)
			fresh, err := tx.Claims()
			if err != nil {
				return err
			}
			if recordedOffline, err = m.recordOffline(tx, fresh); err != nil {
				return err
			}
			more, complete, err := m.account(tx, pol, now, acctBudget)
			if err != nil {
				return err
			}
			accounted = complete
			acts = append(acts, more...)
			if err := m.notes.claim(tx, fresh, m, now); err != nil {
				return err
			}
			for _, n := range notices {
				if _, taken := fresh[n.key]; taken {
					continue
				}
				if err := m.claim(tx, n.key, false, now); err != nil {
					return err
				}
				if err := m.record(tx, n.act); err != nil {
					return err
				}
				acts = append(acts, n.act)
			}
			for _, p := range plans {
				if c, exists := fresh[p.key]; !claimable(c, exists, m.root) {
					continue
				}
				if err := m.claim(tx, p.key, false, now); err != nil {
					return err
				}
				mine = append(mine, p)
			}
			if len(readings) > 0 {
				if err := ledger.PutReadingIfDue(tx, readings); err != nil {
					return err
				}
			}
			if err := tx.DropClaims(now.Add(-24 * time.Hour)); err != nil {
				return err
			}
			// The room that expiries, releases and reclaims freed goes to
			// the line at once, in the writes the pass left.
			placeMore, err = m.c.PlaceLine(tx)
			return err
		})
		m.spacing.wrote(began, m.c.Now(), err == nil && len(due)+len(warn) > 0 && !slices.ContainsFunc(acts, func(a Act) bool {
			return a.Kind == domain.EventExpired || a.Kind == domain.EventWarned
		}))
		sent, earlyActs := early.settle()
		if err != nil {
			m.keepOffline(early) // sent, not recorded: never again, said, and recorded later
		} else {
			m.unrecorded = m.unrecorded[recordedOffline:] // the pass recorded these
		}
		if withoutLedger(err) && m.good != nil {
			// The ledger went away, or other writers kept it: enforce
			// what is due without it. A busy ledger is tried again at
			// the next pass, which records what this one could not.
			if errors.Is(err, storage.ErrUnavailable) {
				m.retryAt = now.Add(offlineRetry)
			}
			return m.enforceOffline(m.c.Now(), err)
		}
		if err != nil {
			return now, err
		}
		if accounted {
			m.acct.accounted()
		}
		m.c.PlaceRest(placeMore)
		m.notes.done(m.o.OnNotice)
		// Report the moment the flips became true for everyone: the commit.
		committed := m.c.Now()
		for _, a := range acts {
			a.Time = committed
			m.report(a)
		}
		mine = slices.DeleteFunc(mine, func(p signalPlan) bool { return sent[p.key] })
		if len(mine) > 0 || len(earlyActs) > 0 {
			if err := m.signal(mine, earlyActs); err != nil {
				return now, err
			}
		}
	}
	m.notes.done(m.o.OnNotice)
	if m.acct.done != nil {
		return now, nil // the rest of the window, at once
	}
	next := m.nextWake(kept.parts, claims, pol, now)
	if snap.waiting || !m.nextLine.IsZero() && !now.Before(m.nextLine) {
		// Time alone can make a placement due: an ETA reached, a quota's
		// window slid on, a timeout, a waiting process gone.
		if m.nextLine, err = m.c.TendLine(); err != nil {
			return now, err
		}
		if !m.nextLine.IsZero() && m.nextLine.Before(next) {
			next = m.nextLine
		}
	}
	return next, nil
}

// passWrites bounds the writes of one pass's transaction (see
// storage.WriteBudget). What does not fit stays due, and the next pass, at
// once, does it.
const passWrites = storage.WriteBudget

// pass is what one monitor pass means to write.
type pass struct {
	due, warn         []uint64
	notices           []pendingNotice
	plans             []signalPlan
	release, orphaned []uint64 // bookings whose chronos run died
	readings          []domain.DeviceReading
	offline           int // writes of what was done while the ledger could not record it (see recordOffline)
}

// bound keeps what the pass writes within passWrites: an expiry or a
// release writes its booking, its live index entry and an event, and
// charges its owner (see charge); a warning or an orphan mark its booking
// and an event; a notice its claim and an event; a signal its claim;
// readings a record each and as many deletions; what was done while the
// ledger could not record it (the deadline watch's signals, most passes
// after a deadline) an event and a claim each, at most offlineBatch of
// each. Old claims dropped and the
// event sequence take some; it returns what is left for accounting (see
// Monitor.account). Placing the waiting line comes last, in what the pass
// left (see Client.placeLine).
func (p *pass) bound() int {
	budget := passWrites - storage.DropMax - 1 - 2*len(p.readings) - p.offline
	take := func(n, cost int) int {
		k := max(0, min(n, budget/cost))
		budget -= k * cost
		return k
	}
	p.due = p.due[:take(len(p.due), 3+ledger.ChargeWrites)]
	p.release = p.release[:take(len(p.release), 3+ledger.ChargeWrites)]
	p.warn = p.warn[:take(len(p.warn), 2)]
	p.orphaned = p.orphaned[:take(len(p.orphaned), 2)]
	p.notices = p.notices[:take(len(p.notices), 2)]
	p.plans = p.plans[:take(len(p.plans), 1)]
	return budget
}

func (p pass) empty() bool {
	return len(p.due)+len(p.warn)+len(p.plans)+len(p.notices)+len(p.release)+len(p.orphaned)+len(p.readings) == 0
}

// withoutLedger reports whether a pass failed for want of the ledger: it
// cannot be reached, or other writers kept it past the timeout. Either way
// the deadlines the monitor knows are still kept (see enforceOffline).
func withoutLedger(err error) bool {
	return errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrBusy)
}

// enforceOffline is a pass while the ledger cannot be reached or is busy:
// bookings end at their deadlines whether or not the ledger can record it,
// so this host's processes of bookings past their deadline are stopped as
// the last policy read says (SIGTERM, then SIGKILL after the grace). Nothing
// else is done: no warning, no over-budget or unbooked act, nothing
// recorded; the ledger catches up when it answers again. It returns cause,
// the reason.
func (m *Monitor) enforceOffline(now time.Time, cause error) (time.Time, error) {
	m.settleWatch() // what it sent counts as sent
	snap := m.good
	next := m.nextWake(snap.parts, snap.claims, snap.pol, now)
	if m.o.Backend == nil {
		return next, cause
	}
	s, err := m.o.Backend.Sample()
	if err != nil {
		return next, fmt.Errorf("sample GPUs: %w", err)
	}
	m.nextSample = now.Add(m.o.SampleEvery)
	m.lastSample = &s
	local := slices.DeleteFunc(slices.Clone(snap.parts), func(p domain.Partition) bool { return !m.c.OnThisHost(p) })
	claims := maps.Clone(snap.claims)
	maps.Copy(claims, m.offline)
	plans, _ := m.plan(admission.Attribute(s, local, now), local, claims, snap.pol, now)
	why := "the ledger cannot be reached"
	if errors.Is(cause, storage.ErrBusy) {
		why = "the ledger is busy"
	}
	if m.offline == nil {
		m.offline = map[string]domain.Claim{}
	}
	for _, p := range plans {
		if p.proc.Verdict != admission.Ended {
			continue
		}
		m.offline[p.key] = domain.Claim{By: m.o.Name, At: now}
		a := Act{Time: m.c.Now(), Kind: domain.EventSignalled, Partition: p.proc.Partition, User: p.proc.User, PID: p.proc.PID,
			Detail: fmt.Sprintf("%s to %s: %s (%s: acted on what it last said, not recorded there yet)", proc.SignalName(p.sig), p.proc.Command, p.reason, why)}
		switch err := m.o.Signaller.Signal(p.proc.PID, p.proc.StartTime, p.sig); {
		case err == nil:
		case errors.Is(err, proc.ErrProcessGone):
			continue
		case errors.Is(err, proc.ErrNoPermission):
			a.Kind, a.Detail = domain.EventDenied, fmt.Sprintf("%s to %s (%s) needs root: %s", proc.SignalName(p.sig), p.proc.Command, p.proc.User, p.reason)
		default:
			a.Kind, a.Detail = domain.EventError, fmt.Sprintf("%s to pid %d: %v", proc.SignalName(p.sig), p.proc.PID, err)
		}
		m.report(a)
		m.unrecorded = append(m.unrecorded, a)
	}
	maps.Copy(claims, m.offline)
	// Bookings past their deadline stay live in the snapshot: wake for
	// what lies ahead, else at the next sample.
	if next = m.nextWake(snap.parts, claims, snap.pol, now); !next.After(now) {
		next = now.Add(m.o.SampleEvery)
	}
	return next, cause
}

// refreshInventory puts the backend's GPUs in the ledger when they differ
// from the inventory there (see cacheInventory). A ledger this monitor may
// only read keeps its inventory.
func (m *Monitor) refreshInventory() error {
	devs, err := m.o.Backend.Devices()
	if err != nil {
		return fmt.Errorf("list GPUs: %w", err)
	}
	if err := m.c.SaveInventory(ledger.BackendInventory(m.o.Backend, devs, m.c.Now())); err != nil && !ledger.CannotWrite(err) {
		return fmt.Errorf("update the GPU inventory: %w", err)
	}
	return nil
}

// dueAt lists the bookings whose deadline has passed but are still stored
// as live, and those that have reached their warning lead.
func dueAt(parts []domain.Partition, now time.Time, lead time.Duration) (due, warn []uint64) {
	for _, p := range parts {
		if p.State != domain.Live {
			continue
		}
		if !now.Before(p.Expires) {
			due = append(due, p.ID)
		} else if !p.Warned && lead > 0 && !now.Before(p.Expires.Add(-domain.WarnLead(p, lead))) {
			warn = append(warn, p.ID)
		}
	}
	return due, warn
}

// expireAndWarn flips due bookings and records warnings, inside tx. Only
// the monitor whose transaction flips a booking reports it.
func (m *Monitor) expireAndWarn(tx *storage.Tx, due, warn []uint64, atts []admission.Attribution, now time.Time, policy func() (domain.Policy, error), kept keeping) ([]Act, error) {
	var acts []Act
	if len(due) > 0 {
		now = m.c.Now() // sampling may have taken a while since the tick began
	}
	// Read them all at once: on etcd each read is a round trip, and a
	// longer transaction loses more often to other writers.
	read, err := tx.PartitionsByID(slices.Concat(due, warn))
	if err != nil {
		return nil, err
	}
	byID := make(map[uint64]domain.Partition, len(read))
	for _, p := range read {
		byID[p.ID] = p
	}
	for _, id := range due {
		p := byID[id]
		if p.State != domain.Live || now.Before(p.Expires) {
			continue // another monitor got there first, or it was extended
		}
		if err := ledger.EndBooking(tx, &p, domain.Expired, p.Expires, policy); err != nil {
			return nil, err
		}
		n := 0
		for _, a := range atts {
			if a.Partition == id {
				n++
			}
		}
		late := now.Sub(p.Expires)
		gpu := human.FormatGPUs("", p.GPUs())
		if !m.c.OnThisHost(p) { // kept for a host whose monitors stopped
			gpu = human.FormatGPUs(p.Host, p.GPUs())
		}
		a := Act{Time: now, Kind: domain.EventExpired, Partition: id, User: p.User,
			Detail: fmt.Sprintf("GPU %s, %s; %d GPU process(es); %s after the deadline%s", gpu, human.FormatPercent(p.SharePPM), n, late.Round(time.Microsecond), kept.endedNote(p))}
		if err := m.record(tx, a); err != nil {
			return nil, err
		}
		acts = append(acts, a)
	}
	for _, id := range warn {
		p := byID[id]
		if p.Warned || !p.LiveAt(now) {
			continue
		}
		p.Warned = true
		if err := tx.PutPartition(&p); err != nil {
			return nil, err
		}
		a := Act{Time: now, Kind: domain.EventWarned, Partition: id, User: p.User,
			Detail: fmt.Sprintf("%s (GPU %s)", human.EndsIn(p.Expires.Sub(now)), human.FormatGPUs("", p.GPUs()))}
		if err := m.record(tx, a); err != nil {
			return nil, err
		}
		acts = append(acts, a)
	}
	return acts, nil
}

type pendingNotice struct {
	key string
	act Act
}

// plan decides, from one sample, which processes to signal and which
// misuse to note, leaving out what another monitor has claimed.
//
//nolint:gocyclo // one decision per verdict of attribution, in the order the policy states them
func (m *Monitor) plan(atts []admission.Attribution, parts []domain.Partition, claims map[string]domain.Claim, pol domain.Policy, now time.Time) ([]signalPlan, []pendingNotice) {
	byID := map[uint64]domain.Partition{}
	booked := map[int]bool{}
	for _, p := range parts {
		byID[p.ID] = p
		if p.LiveAt(now) {
			for _, d := range p.GPUs() {
				booked[d] = true
			}
		}
	}
	// One look per pipe directory and sample.
	daemons := map[string]procfs.MPS{}
	mps := func(dir string) procfs.MPS {
		d, ok := daemons[dir]
		if !ok {
			d = m.o.MPS(dir)
			daemons[dir] = d
		}
		return d
	}
	var plans []signalPlan
	var notes []pendingNotice
	note := func(n pendingNotice) {
		if _, done := claims[n.key]; !done {
			notes = append(notes, n)
		}
	}
	for _, a := range atts {
		var action, reason string
		var cause domain.EventKind
		switch {
		case a.Verdict == admission.Ended && byID[a.Partition].State != domain.Released && pol.Expiry == policy.ActTerminate:
			action, reason, cause = policy.ActTerminate, fmt.Sprintf("booking #%d expired", a.Partition), domain.EventExpired
		case a.Verdict == admission.OverBudget && !limitedByMPS(mps, a, byID[a.Partition], pol) && pol.OverBudget != policy.ActOff:
			p := byID[a.Partition]
			action, reason, cause = pol.OverBudget, fmt.Sprintf("booking #%d is over budget (%s booked)", a.Partition, human.FormatBytes(p.Bytes)), domain.EventOverBudget
			if action == policy.ActWarn {
				note(pendingNotice{key: domain.ClaimKey(domain.ClaimWarnOverBudget, a.PID, a.StartTime), act: Act{Time: now, Kind: domain.EventOverBudget,
					Partition: a.Partition, User: a.User, UID: a.UID, PID: a.PID, Detail: fmt.Sprintf("%s uses %s; %s", a.Command, human.FormatBytes(a.MemoryUsed), reason)}})
			}
		case a.Verdict == admission.Unbooked && booked[a.Device] && pol.Unbooked != policy.ActOff:
			claim := ""
			if c, ok := byID[a.Claimed]; ok {
				claim = fmt.Sprintf(" (its environment names booking #%d, which is %s's)", c.ID, c.User)
			}
			action, reason, cause = pol.Unbooked, fmt.Sprintf("no booking on GPU %d, which has bookings%s", a.Device, claim), domain.EventUnbooked
			if action == policy.ActWarn {
				note(pendingNotice{key: domain.ClaimKey(domain.ClaimWarnUnbooked, a.PID, a.StartTime), act: Act{Time: now, Kind: domain.EventUnbooked,
					User: a.User, UID: a.UID, PID: a.PID, Detail: fmt.Sprintf("%s uses %s on GPU %d with no booking%s", a.Command, human.FormatBytes(a.MemoryUsed), a.Device, claim)}})
			}
		}
		if action != policy.ActTerminate || a.PID <= 0 || a.StartTime == 0 {
			continue
		}
		term, kill := domain.ClaimKey(domain.ClaimTerm, a.PID, a.StartTime), domain.ClaimKey(domain.ClaimKill, a.PID, a.StartTime)
		tc, termed := claims[term]
		kc, killed := claims[kill]
		switch {
		case claimable(tc, termed, m.root):
			plans = append(plans, signalPlan{key: term, sig: syscall.SIGTERM, proc: a, reason: reason, cause: cause})
		case termed && !tc.NeedsRoot && !now.Before(tc.At.Add(pol.Grace)) && claimable(kc, killed, m.root):
			plans = append(plans, signalPlan{key: kill, sig: syscall.SIGKILL, proc: a, reason: reason + ", still running " + human.FormatDuration(pol.Grace) + " after SIGTERM", cause: cause})
		}
	}
	return plans, notes
}

// limitedByMPS says whether MPS holds the process to its booking's memory,
// so that using more is MPS's to stop: `chronos run` started it in the
// booking with a memory limit no larger than the booking on each booked
// GPU, seeing exactly those, and the daemon its environment names runs now and is one the
// booking can trust (see procfs.MPS.Enforces: root's, or the owner's own in a
// pipe directory the policy names). A process that merely runs while a
// daemon does, or whose environment names another daemon or a larger
// limit, is checked.
func limitedByMPS(daemon func(pipeDir string) procfs.MPS, a admission.Attribution, p domain.Partition, pol domain.Policy) bool {
	limit, ok := a.CUDA.MPSMemLimitOf(len(p.GPUs()))
	if !ok || limit > p.Bytes || a.PartitionID != strconv.FormatUint(p.ID, 10) || !a.CUDA.SeesAll(p.UUIDs(), p.GPUs()) {
		return false
	}
	mps := daemon(a.CUDA.MPSPipeDir)
	return mps.Enforces(p.UID, pol.MPSUserDirs) && a.CUDA.ServedBy(mps)
}

// claimable says whether a monitor may take on an act: nobody has, or the
// one who did lacked permission and this monitor runs as root.
func claimable(c domain.Claim, exists, root bool) bool {
	return !exists || (c.NeedsRoot && root)
}

func (m *Monitor) claim(tx *storage.Tx, key string, needsRoot bool, now time.Time) error {
	return tx.PutClaim(key, domain.Claim{By: m.o.Name, At: now, NeedsRoot: needsRoot})
}

// record adds an act to the audit trail: the monitor's user acted; a
// process the act was about is recorded with its owner.
func (m *Monitor) record(tx *storage.Tx, a Act) error {
	e := domain.Event{Time: a.Time, Kind: a.Kind, Partition: a.Partition, UID: m.c.Me().UID, User: m.c.Me().User, Detail: domain.BoundDetail(a.Detail)}
	if a.PID != 0 {
		e.Process = &domain.EventProcess{PID: a.PID, UID: a.UID, User: a.User}
	}
	return tx.AddEvent(e)
}

// signal sends the claimed signals, then records what happened. A signal
// refused for permission goes back to the ledger as a claim that needs root,
// so a privileged monitor does it; nothing is dropped.
func (m *Monitor) signal(plans []signalPlan, sent []Act) error {
	acts := sent // sent already (termEarly): to record
	var denied []string
	for _, p := range plans {
		a, err := m.send(p)
		switch {
		case err == nil:
		case errors.Is(err, proc.ErrProcessGone) && proc.KeepsRecordsOf(m.root, p.proc.UID):
			continue
		case errors.Is(err, proc.ErrNoPermission), errors.Is(err, proc.ErrProcessGone):
			// Another user's process gone from this monitor's /proc may
			// only be hidden from it (hidepid=2, a namespace): root's
			// monitor looks again.
			a.Kind = domain.EventDenied
			a.Detail = fmt.Sprintf("%s to %s (%s) needs root: %s; left to a monitor running as root", proc.SignalName(p.sig), p.proc.Command, p.proc.User, p.reason)
			denied = append(denied, p.key)
		default:
			a.Kind, a.Detail = domain.EventError, fmt.Sprintf("%s to pid %d: %v", proc.SignalName(p.sig), p.proc.PID, err)
		}
		acts = append(acts, a)
	}
	if len(acts) == 0 {
		return nil
	}
	now := m.c.Now()
	err := m.c.Ledger().Update(m.c.Context(), func(tx *storage.Tx) error {
		for _, key := range denied {
			if err := m.claim(tx, key, true, now); err != nil {
				return err
			}
		}
		for _, a := range acts {
			if err := m.record(tx, a); err != nil {
				return err
			}
		}
		return nil
	})
	for _, a := range acts {
		m.report(a)
	}
	return err
}

// nextWake is the earliest of: the next deadline, the next warning, the
// next sample (when processes are watched) and the next SIGKILL due.
func (m *Monitor) nextWake(parts []domain.Partition, claims map[string]domain.Claim, pol domain.Policy, now time.Time) time.Time {
	next := now.Add(clock.MaxSleep)
	consider := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	for _, p := range parts {
		if p.State != domain.Live {
			continue
		}
		consider(p.Expires)
		if !p.Warned && pol.WarnLead > 0 {
			consider(p.Expires.Add(-domain.WarnLead(p, pol.WarnLead)))
		}
	}
	if m.o.Backend != nil {
		consider(m.nextSample)
	}
	for key, c := range claims {
		if domain.ClaimTerm.Is(key) && !c.NeedsRoot {
			if t := c.At.Add(pol.Grace); t.After(now) {
				consider(t)
			}
		}
	}
	return next
}

// inventoryEvery is how often a monitor checks the GPUs against the
// inventory in the ledger: cards come and go, and someone else's process may
// have written an inventory of other GPUs.
const inventoryEvery = time.Minute
