package domain

import (
	"time"
)

// Identity is an OS user: who asks, or who owns a booking. It comes from the
// process's real uid, never from $USER.
type Identity struct {
	UID  int
	User string
}

// Root reports whether the identity is the superuser.
func (id Identity) Root() bool { return id.UID == 0 }

// MayChange reports whether id may release, extend or cancel what uid owns:
// its owner or root.
func (id Identity) MayChange(uid int) bool { return uid == id.UID || id.Root() }

// BookingStatus is what a person sees of a booking.
type BookingStatus string

// The statuses, as list, --json and the app print them.
const (
	StatusUpcoming   BookingStatus = "upcoming" // booked ahead, not started
	StatusLive       BookingStatus = "live"
	StatusEndingSoon BookingStatus = "ending soon"
	StatusExpired    BookingStatus = "expired"
	StatusReleased   BookingStatus = "released"
	// StatusReclaimed: released by the idle ladder before its deadline.
	StatusReclaimed BookingStatus = "reclaimed"
	// StatusOrphaned: live, but the `chronos run` that made it is gone
	// while its command runs on; a monitor releases it when nothing does.
	StatusOrphaned BookingStatus = "orphaned"
	// StatusGPUGone: live, on a GPU the machine no longer has.
	StatusGPUGone BookingStatus = "GPU gone"
)

// BookingStatuses are every status, in the order of a booking's life.
var BookingStatuses = []BookingStatus{StatusUpcoming, StatusLive, StatusEndingSoon, StatusOrphaned, StatusGPUGone, StatusExpired, StatusReclaimed, StatusReleased}

// Ended reports whether the booking no longer holds its share.
func (s BookingStatus) Ended() bool {
	return s == StatusExpired || s == StatusReleased || s == StatusReclaimed
}

// Status is what a person sees: upcoming, live, ending soon, orphaned,
// expired or released.
func Status(p Partition, now time.Time, warnLead time.Duration) BookingStatus {
	switch {
	case p.State == Released:
		return StatusReleased
	case p.ReclaimedEarly():
		return StatusReclaimed
	case p.State == Expired || !now.Before(p.Expires):
		return StatusExpired
	case p.Upcoming(now):
		return StatusUpcoming
	case !p.Orphaned.IsZero():
		return StatusOrphaned
	case p.Expires.Sub(now) <= WarnLead(p, warnLead):
		return StatusEndingSoon
	default:
		return StatusLive
	}
}

// WarnLead is how long before its end a partition counts as ending soon
// and its owner is warned: the policy's lead, or half of a booking shorter
// than twice that (a tenth, once, warned a 12-minute booking 1m12s before
// its end under warn=5m: too late to act on).
func WarnLead(p Partition, lead time.Duration) time.Duration {
	return min(lead, p.Expires.Sub(p.Start)/2)
}
