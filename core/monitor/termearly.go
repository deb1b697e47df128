package monitor

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// termPatience is how long a pass waits for its transaction before it
// sends the SIGTERMs of bookings whose deadline has passed anyway: a
// booking ends at its deadline, not when a busy ledger (a file another
// process holds, etcd under write load) lets the expiry be recorded. The
// pass still claims the signal in its transaction, so another monitor
// does not send it again; the event says it went first.
//
// Only root's monitor goes first, the host's enforcer, so that the
// owner's open app, which claims the same signal, does not send it a
// second time; and not for a `chronos run` booking, whose wrapper signals
// its command itself (see Run's signalOnce).
const termPatience = 20 * time.Millisecond

// earlyTerm is SIGTERMs of expired bookings sent by a timer while a pass
// is under way: those the pass is about to claim, if its transaction has
// not committed within termPatience (termEarly), and those whose deadline
// comes while the pass still waits on the ledger (watchDeadlines).
type earlyTerm struct {
	stop, done chan struct{}
	sent       []signalPlan // once done: the plans sent early
	acts       []Act
}

// termBatch is SIGTERMs to send at a time, unless the pass ends first;
// check, when set, says whether each is still due then.
type termBatch struct {
	at    time.Time
	plans []signalPlan
	note  string // said after each act's detail
	check func(p signalPlan, at time.Time) bool
}

// termEarly arms the SIGTERMs of the expired bookings among plans (parts
// are the bookings they are about).
func (m *Monitor) termEarly(plans []signalPlan, parts []domain.Partition) *earlyTerm {
	var due []signalPlan
	for _, p := range plans {
		i := slices.IndexFunc(parts, func(b domain.Partition) bool { return b.ID == p.proc.Partition })
		if m.goesFirst(p, i >= 0 && parts[i].Wrapper == nil) {
			due = append(due, p)
		}
	}
	if len(due) == 0 {
		return m.termAt(nil)
	}
	// No look at the ledger first, as the watch's have (stillDue): this
	// goes because the ledger is slow, and the look would wait out its
	// time too. A chronos run that took the booking since the pass's read
	// is known from its command's environment (see goesFirst).
	return m.termAt([]termBatch{{at: m.c.Now().Add(termPatience), plans: due, note: " (sent at the deadline, before the ledger recorded the pass)"}})
}

// goesFirst says whether this monitor sends plan's signal before it has
// claimed it: root's monitor, the SIGTERM of an expired booking that no
// `chronos run` wrapper signals itself. plain says the ledger, as last
// read, records none; a process whose environment names a live chronos
// run (procfs.RunEnv) is left to it too, since the read may predate the
// wrapper's record and the check before the signal (stillDue) may not get
// an answer in time. Anyone can set the variable: a process that does
// loses only this early signal, and gets the pass's, claimed.
func (m *Monitor) goesFirst(p signalPlan, plain bool) bool {
	return m.root && plain && p.cause == domain.EventExpired && p.sig == syscall.SIGTERM && !wrapperLives(p.proc.RunPID)
}

// wrapperLives says whether process pid, a chronos run a process's
// environment names, runs.
func wrapperLives(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// termAt sends each batch at its time, in order, until settle. A batch
// with a check is checked deadlineCheck before its time, so that the
// look at the ledger does not delay the signals.
func (m *Monitor) termAt(batches []termBatch) *earlyTerm {
	e := &earlyTerm{stop: make(chan struct{}), done: make(chan struct{})}
	if len(batches) == 0 {
		close(e.done)
		return e
	}
	clk := m.c.Clock()
	// until waits for t; settled, it waits no more, but a time already
	// come is kept: a pass that starts at a deadline does not take its
	// signal from the watch that was sending it.
	until := func(t time.Time) bool {
		timer := clk.NewTimer(max(clock.Until(clk, t), 0))
		select {
		case <-e.stop:
			timer.Stop()
			return !clk.Now().Before(t)
		case <-timer.C():
			return true
		}
	}
	go func() {
		defer close(e.done)
		for _, b := range batches {
			plans := b.plans
			if b.check != nil {
				if !until(b.at.Add(-deadlineCheck)) {
					return
				}
				plans = slices.DeleteFunc(slices.Clone(plans), func(p signalPlan) bool { return !b.check(p, b.at) })
			}
			if !until(b.at) {
				return
			}
			for _, p := range plans {
				a, err := m.send(p)
				if err != nil {
					continue // left to the pass: it says why (gone, denied)
				}
				a.Detail += b.note
				e.sent, e.acts = append(e.sent, p), append(e.acts, a)
			}
		}
	}()
	return e
}

// settle disarms the timer, or waits for the signals it is sending, and
// returns the plans it sent and their acts.
func (e *earlyTerm) settle() (sent map[string]bool, acts []Act) {
	close(e.stop)
	<-e.done
	sent = map[string]bool{}
	for _, p := range e.sent {
		sent[p.key] = true
	}
	return sent, e.acts
}

// send sends plan's signal and says what was done, as an act; err is the
// signal's failure.
func (m *Monitor) send(p signalPlan) (Act, error) {
	err := m.o.Signaller.Signal(p.proc.PID, p.proc.StartTime, p.sig)
	a := Act{Time: m.c.Now(), Kind: domain.EventSignalled, Partition: p.proc.Partition, User: p.proc.User, UID: p.proc.UID, PID: p.proc.PID,
		Detail: fmt.Sprintf("%s to %s: %s", proc.SignalName(p.sig), p.proc.Command, p.reason)}
	if err == nil {
		m.o.Observer.Signalled(p.sig, p.cause)
	}
	return a, err
}

// keepOffline keeps the signals e sent (settled) as sent while the ledger
// could not record them, as those sent while it was away are (see
// enforceOffline): claimed when sent, so that no pass sends them again and
// SIGKILL follows the grace after them; said now, and recorded by the next
// pass that writes (see recordOffline).
func (m *Monitor) keepOffline(e *earlyTerm) {
	if len(e.acts) == 0 {
		return
	}
	if m.offline == nil {
		m.offline = map[string]domain.Claim{}
	}
	for i, p := range e.sent {
		m.offline[p.key] = domain.Claim{By: m.o.Name, At: e.acts[i].Time}
	}
	for _, a := range e.acts {
		m.report(a)
	}
	m.unrecorded = append(m.unrecorded, e.acts...)
}

// recordOffline writes, in a pass's transaction, what the monitor did
// while it could not write: the acts (signals sent at the deadline, or
// while the ledger was away) in the audit trail, and the signals' claims,
// so that no monitor sends them again once this one forgets them. It
// writes at most offlineBatch of each a pass, within the pass's budget
// (the rest go in the next), and says how many acts it wrote.
func (m *Monitor) recordOffline(tx *storage.Tx, fresh map[string]domain.Claim) (int, error) {
	n := min(len(m.unrecorded), offlineBatch)
	for _, a := range m.unrecorded[:n] {
		if err := m.record(tx, a); err != nil {
			return 0, err
		}
	}
	claimed := 0
	for k, c := range m.offline {
		if _, taken := fresh[k]; taken || claimed == offlineBatch {
			continue
		}
		if err := tx.PutClaim(k, c); err != nil {
			return 0, err
		}
		claimed++
	}
	return n, nil
}

// offlineBatch bounds what a pass writes of what was done offline.
const offlineBatch = 16
