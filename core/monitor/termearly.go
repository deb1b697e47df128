package monitor

import (
	"fmt"
	"slices"
	"syscall"
	"time"

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

// earlyTerm is the SIGTERMs of expired bookings a pass is about to claim,
// sent by a timer if its transaction has not committed within
// termPatience.
type earlyTerm struct {
	stop, done chan struct{}
	sent       []signalPlan // once done: the plans sent early
	acts       []Act
}

// termEarly arms the SIGTERMs of the expired bookings among plans (parts
// are the bookings they are about).
func (m *Monitor) termEarly(plans []signalPlan, parts []domain.Partition) *earlyTerm {
	e := &earlyTerm{stop: make(chan struct{}), done: make(chan struct{})}
	var due []signalPlan
	for _, p := range plans {
		i := slices.IndexFunc(parts, func(b domain.Partition) bool { return b.ID == p.proc.Partition })
		if m.root && p.cause == domain.EventExpired && p.sig == syscall.SIGTERM && i >= 0 && parts[i].Wrapper == nil {
			due = append(due, p)
		}
	}
	if len(due) == 0 {
		close(e.done)
		return e
	}
	t := m.c.Clock().NewTimer(termPatience)
	go func() {
		defer close(e.done)
		select {
		case <-e.stop:
			t.Stop()
			return
		case <-t.C():
		}
		for _, p := range due {
			a, err := m.send(p)
			if err != nil {
				continue // left to the pass: it says why (gone, denied)
			}
			a.Detail += " (sent at the deadline, before the ledger recorded the pass)"
			e.sent, e.acts = append(e.sent, p), append(e.acts, a)
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

// sentOffline keeps the signals a pass sent early, when its transaction
// then failed, as claimed, as those sent while the ledger was away are
// (see enforceOffline): no pass sends them again, and SIGKILL follows
// the grace after them.
func (m *Monitor) sentOffline(plans []signalPlan, sent map[string]bool, now time.Time) {
	if len(sent) == 0 {
		return
	}
	if m.offline == nil {
		m.offline = map[string]domain.Claim{}
	}
	for _, p := range plans {
		if sent[p.key] {
			m.offline[p.key] = domain.Claim{By: m.o.Name, At: now}
		}
	}
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
