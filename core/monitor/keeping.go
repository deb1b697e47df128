package monitor

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// On a ledger many hosts share, each host's monitor keeps the books of its
// own host's bookings, by its own clock: a host's users and processes live
// by that clock, and one host's fast clock must not end another's bookings
// early. Another host's bookings are kept here only once no monitor of that
// host publishes its status (its etcd lease lapsed: etcd's time, not a
// host's), and the event says so. A host whose clock disagrees with the
// lab's judges no other host's time at all.

// keeping is what a pass of this host's monitor judges: the bookings whose
// deadlines it keeps, and why it keeps those of another host.
type keeping struct {
	parts []domain.Partition
	// why says, for each other host whose bookings are kept, why.
	why map[string]string
	// doubt is this host's clock standing when it is in doubt: the events
	// of the bookings it ends say so.
	doubt *core.ClockStanding
}

// keep picks from parts the bookings this monitor judges at now. On a
// ledger file (no other host) it is all of them.
func (m *Monitor) keep(parts []domain.Partition, now time.Time, lead time.Duration) keeping {
	if m.pr == nil {
		return keeping{parts: parts}
	}
	k := keeping{parts: make([]domain.Partition, 0, len(parts))}
	st := m.pub.standing()
	if st.InDoubt() != m.inDoubt {
		m.inDoubt = st.InDoubt()
		m.report(Act{Time: now, Kind: domain.EventClock, Detail: st.String()})
	}
	if st.InDoubt() {
		k.doubt = &st
	}
	// Another host's bookings matter only once something of theirs is due:
	// only then is the presence read (a round trip to etcd).
	var others []domain.Partition
	for _, p := range parts {
		switch {
		case m.c.OnThisHost(p):
			k.parts = append(k.parts, p)
		case k.doubt == nil && p.State == domain.Live && m.pub.measured(now):
			others = append(others, p)
		}
	}
	if due, warn := dueAt(others, now, lead); len(due)+len(warn) == 0 {
		return k
	}
	present, err := m.pr.Present(m.c.Context())
	if err != nil || !m.pub.current(present, now) {
		// This host's own bookings go on; the others wait for an answer,
		// or for this host's clock to be measured again (statuses that
		// arrived during the round trip may have put it in doubt).
		return k
	}
	for _, p := range others {
		if _, live := present[p.Host]; live {
			continue
		}
		if _, ok := k.why[p.Host]; !ok {
			if k.why == nil {
				k.why = map[string]string{}
			}
			k.why[p.Host] = m.whyKeep(p.Host, now)
		}
		k.parts = append(k.parts, p)
	}
	return k
}

// whyKeep says why this host's monitor ends another host's bookings.
func (m *Monitor) whyKeep(host string, now time.Time) string {
	if seen, ok := m.pub.lastSeen(host); ok {
		return fmt.Sprintf("%s by %s: %s's monitor has not been seen for %s", domain.EventExpired, m.c.Host(), host, human.FormatDuration(now.Sub(seen).Round(time.Second)))
	}
	return fmt.Sprintf("%s by %s: no monitor of %s is publishing", domain.EventExpired, m.c.Host(), host)
}

// endedNote is what an expiry's event adds about who judged the time: a
// monitor keeping another host's bookings says why, and one whose clock is
// in doubt says the time is.
func (k keeping) endedNote(p domain.Partition) string {
	if why, ok := k.why[p.Host]; ok {
		return "; " + why
	}
	if k.doubt != nil {
		dir := "ahead of"
		if k.doubt.Ahead < 0 {
			dir = "behind"
		}
		return fmt.Sprintf(" by %s's clock, which is %.1f s %s the other hosts': when it ended is in doubt", k.doubt.Host, k.doubt.Ahead.Abs().Seconds(), dir)
	}
	return ""
}
