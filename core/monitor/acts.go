package monitor

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

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
