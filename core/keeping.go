package core

import (
	"fmt"
	"slices"
	"time"

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

// SkewBound is how far a host's clock may be from most of the lab's before
// its monitor stops judging time for other hosts: it then ends only its own
// host's bookings (whose processes it stops at their deadlines anyway),
// saying its clock is in doubt, and takes over no host's.
const SkewBound = 2 * time.Second

// ClockStanding is this host's clock against the lab's hosts that its
// monitor has measured.
type ClockStanding struct {
	Host string
	// Hosts is how many hosts were measured, this one included; Agree how
	// many of them are within SkewBound of this one's clock, itself
	// included.
	Hosts, Agree int
	// Ahead is this host's clock minus the lab's (see standingOf).
	Ahead time.Duration
}

// standingOf weighs this host's clock against others, each the other's
// clock minus this one's.
func standingOf(host string, others []time.Duration) ClockStanding {
	s := ClockStanding{Host: host, Hosts: 1 + len(others), Agree: 1}
	for _, d := range others {
		if d.Abs() <= SkewBound {
			s.Agree++
		}
	}
	// The lab's clock is the median of all, this one's included; of two
	// middle ones, the farther from this clock (two hosts: the other's).
	all := slices.Sorted(slices.Values(append(slices.Clone(others), 0)))
	lo, hi := all[(len(all)-1)/2], all[len(all)/2]
	if lo.Abs() > hi.Abs() {
		hi = lo
	}
	s.Ahead = -hi
	return s
}

// InDoubt reports whether most of the lab's clocks measured disagree with
// this host's by more than SkewBound. Two hosts that disagree are both in
// doubt: neither can tell whose clock is wrong.
func (s ClockStanding) InDoubt() bool { return s.Hosts > 1 && 2*s.Agree <= s.Hosts }

// String says where this host's clock stands and what its monitor does
// about it.
func (s ClockStanding) String() string {
	if !s.InDoubt() {
		return fmt.Sprintf("%s's clock agrees with the lab's again (%d of %d hosts within %s): its monitor keeps the books of hosts whose monitors have stopped",
			s.Host, s.Agree, s.Hosts, human.FormatDuration(SkewBound))
	}
	dir := "ahead of"
	if s.Ahead < 0 {
		dir = "behind"
	}
	return fmt.Sprintf("%s's clock is %.1f s %s the other hosts' (%d of %d hosts within %s of it): its monitor ends only %s's bookings, says their times are in doubt, and takes over no other host's until the clocks agree; check NTP",
		s.Host, s.Ahead.Abs().Seconds(), dir, s.Agree, s.Hosts, human.FormatDuration(SkewBound), s.Host)
}

// standingOfViews is this host's clock against the other hosts' as their
// statuses say (see Hosts).
func standingOfViews(host string, hosts []HostView) ClockStanding {
	var others []time.Duration
	for _, h := range hosts {
		if h.SkewKnown {
			others = append(others, h.Skew)
		}
	}
	return standingOf(host, others)
}

// keeping is what a pass of this host's monitor judges: the bookings whose
// deadlines it keeps, and why it keeps those of another host.
type keeping struct {
	parts []domain.Partition
	// why says, for each other host whose bookings are kept, why.
	why map[string]string
	// doubt is this host's clock standing when it is in doubt: the events
	// of the bookings it ends say so.
	doubt *ClockStanding
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
	present, err := m.pr.Present(m.c.ctx)
	if err != nil || !m.pub.current(present, now) {
		// This host's own bookings go on; the others wait for an answer,
		// or for this host's clock to be measured again.
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
		return fmt.Sprintf("%s by %s: %s's monitor has not been seen for %s", domain.EventExpired, m.c.host, host, human.FormatDuration(now.Sub(seen).Round(time.Second)))
	}
	return fmt.Sprintf("%s by %s: no monitor of %s is publishing", domain.EventExpired, m.c.host, host)
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
