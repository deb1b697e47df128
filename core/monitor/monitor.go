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
	"strings"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/notice"
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
			if d := changeGap - clock.Since(clock.Kernel, began); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-clock.Kernel.After(d):
				case <-timer.C(): // a pass the timer starts does not wait for the gap
				}
			}
			timer.Stop()
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
		if p.proc.Verdict != admission.Ended || wrapperLives(p.proc.RunPID) {
			continue // a live chronos run signals its command itself, ledger or not
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
