package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/human"
)

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

// StandingOf weighs this host's clock against others, each the other's
// clock minus this one's.
func StandingOf(host string, others []time.Duration) ClockStanding {
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
	return StandingOf(host, others)
}
