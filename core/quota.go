package core

import (
	"errors"
	"fmt"
	"math"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
)

// Refusals of fair sharing, each wrapped with the limit, the figure and
// when it frees.
var (
	ErrQuota       = errors.New("over your quota")
	ErrTooFarAhead = errors.New("starts further ahead than the policy allows")
	ErrLeftLine    = errors.New("left the waiting line without a booking")
	ErrNoRequest   = errors.New("no such waiting request")
)

// groupsOf is the names of the groups uid belongs to; none when it has no
// account here. They are kept for a minute: a waiter lays the line out
// every second or so, each layout asks for every waiting user's groups
// when the policy has group settings, and the lookups may go to LDAP.
func groupsOf(uid int) []string {
	now := clock.Kernel.Now() // a cache of the system's answers, not a time of the books
	knownGroups.Lock()
	defer knownGroups.Unlock()
	if g, ok := knownGroups.of[uid]; ok && now.Sub(g.at) < groupsKept {
		return g.names
	}
	if knownGroups.of == nil {
		knownGroups.of = map[int]groupsAt{}
	}
	names := lookupGroupsOf(uid)
	knownGroups.of[uid] = groupsAt{names, now}
	return names
}

const groupsKept = time.Minute

type groupsAt struct {
	names []string
	at    time.Time
}

var knownGroups struct {
	sync.Mutex
	of map[int]groupsAt
}

func lookupGroupsOf(uid int) []string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			names = append(names, g.Name)
		}
	}
	return names
}

func lookupGroup(name string) (*user.Group, error) { return user.LookupGroup(name) }

// reason says in a few words why a request cannot start: what the queue
// shows.
func (b *books) reason(blk *blocker, a ask) string {
	switch blk.kind {
	case blockedDevice:
		return fmt.Sprintf("GPU %s has %s free, %s asked", b.gpuName(blk.gpu), FormatPercent(max(0, ppm-int64(blk.figure))), FormatPercent(a.share))
	case blockedReserved:
		return fmt.Sprintf("GPU %s's free share is kept for requests ahead", b.gpuName(blk.gpu))
	case blockedGPUs:
		return fmt.Sprintf("user-gpus=%s: holds %s, asks %s", formatLimit(a.limits.UserGPUs), formatGPUCount(int64(blk.figure)), formatGPUs(a.share))
	case blockedHours:
		return fmt.Sprintf("user-hours=%s: %s GPU-hours booked in the window, asks %s", formatHours(a.limits.UserHours, a.limits.HoursWindow),
			formatGPUHours(blk.figure), formatGPUHours(a.gpuHours()))
	}
	return blk.kind
}

func (a ask) gpuHours() float64 { return float64(a.share) / ppm * a.length.Hours() }

// formatGPUs prints a share in parts per million of a GPU as
// GPU-equivalents: 600000 is 0.6.
func formatGPUs(sharePPM int64) string {
	return strconv.FormatFloat(float64(sharePPM)/ppm, 'f', -1, 64)
}

// formatGPUCount is a share as GPU-equivalents with its noun: "1 GPU",
// "0.5 GPUs".
func formatGPUCount(sharePPM int64) string {
	if sharePPM == ppm {
		return "1 GPU"
	}
	return formatGPUs(sharePPM) + " GPUs"
}

// formatGPUHours prints GPU-hours to a hundredth, or, for a figure that
// would show as 0.0, to its first two significant digits: a small quota's
// refusal reads "0.01 GPU-hours booked, 0.0028 asked", not "0.0, 0.0".
func formatGPUHours(h float64) string {
	digits := 1
	for h != 0 && math.Abs(h) < 0.05*math.Pow(10, 1-float64(digits)) && digits < 8 {
		digits++
	}
	if digits > 1 {
		digits++ // a second significant digit
		return strconv.FormatFloat(roundTo(h, digits), 'f', -1, 64)
	}
	// To the hundredth, as shares are booked (25% for an hour is 0.25),
	// keeping one decimal at least: 4.0, 0.25, 16.88.
	return strings.TrimSuffix(strconv.FormatFloat(h, 'f', 2, 64), "0")
}

func roundTo(f float64, digits int) float64 {
	scale := math.Pow(10, float64(digits))
	return math.Round(f*scale) / scale
}

// FitsLaterError is a refusal of a request that cannot start when asked
// but would at At, given the calendar: the app offers to wait in line.
// Its message says so as the command line does; Why is the refusal alone.
type FitsLaterError struct {
	Why     error
	At, Now time.Time
}

func (e *FitsLaterError) Error() string {
	return e.Why.Error() + ". It would fit at " + FormatTime(e.At, e.Now) + " (--wait joins the line)"
}

func (e *FitsLaterError) Unwrap() error { return e.Why }

// refusal is the error for a request that cannot start when asked
// (start): which limit, the figure, and when it would fit (f.start; zero
// when unknown), as a *FitsLaterError. With others, it says which other
// GPUs have room: not for an extension, which stays on its GPU.
func (b *books) refusal(cal calendar, blk *blocker, f fit, start time.Time, others bool) error {
	err := b.refusalNow(cal, blk, f, start, others)
	if f.start.IsZero() {
		return err
	}
	return &FitsLaterError{Why: err, At: f.start, Now: b.now}
}

func (b *books) refusalNow(cal calendar, blk *blocker, f fit, start time.Time, others bool) error {
	lim := f.ask.limits
	who, over := b.quotaOf()
	switch blk.kind {
	case blockedDevice:
		return fmt.Errorf("%w: %s", ErrOverbooked, b.overbooked(cal, f, start, others))
	case blockedReserved:
		return fmt.Errorf("%w: GPU %s's free share is kept for requests waiting ahead of you", ErrOverbooked, b.gpuName(blk.gpu))
	case blockedGPUs:
		return fmt.Errorf("%w: user-gpus=%s: %s would hold %s at once (%s already, %s asked)", over,
			formatLimit(lim.UserGPUs), who, formatGPUCount(int64(blk.figure)+f.ask.share), formatGPUs(int64(blk.figure)), formatGPUs(f.ask.share))
	case blockedHours:
		return fmt.Errorf("%w: user-hours=%s: %s GPU-hours booked in the window, %s asked", over,
			formatHours(lim.UserHours, lim.HoursWindow), formatGPUHours(blk.figure), formatGPUHours(f.ask.gpuHours()))
	}
	return fmt.Errorf("%w: %s", ErrOverbooked, blk.kind)
}

// neverRefusal is the error for a request no calendar could ever grant.
func (b *books) neverRefusal(blk *blocker, a ask) error {
	lim := a.limits
	who, over := b.quotaOf()
	switch {
	case blk.kind == blockedGPUs && *lim.UserGPUs == 0:
		return fmt.Errorf("%w: user-gpus=0: %s may hold no GPU at all (user-gpus=none is no limit)", over, who)
	case blk.kind == blockedGPUs:
		return fmt.Errorf("%w: user-gpus=%s: %s asked at once can never be granted", over, formatLimit(lim.UserGPUs), formatGPUCount(a.share))
	case blk.kind == blockedHours && *lim.UserHours == 0:
		return fmt.Errorf("%w: user-hours=%s: %s may book no GPU-hours at all (user-hours=none is no limit)", over,
			formatHours(lim.UserHours, lim.HoursWindow), who)
	case blk.kind == blockedHours:
		return fmt.Errorf("%w: user-hours=%s: %s GPU-hours asked can never be granted", over,
			formatHours(lim.UserHours, lim.HoursWindow), formatGPUHours(a.gpuHours()))
	}
	return fmt.Errorf("%w: %s", over, blk.kind)
}

// quotaOf is the subject of a quota refusal and the refusal: the
// caller's own ("you"), or, when root books for someone, theirs by name.
func (b *books) quotaOf() (who string, over error) {
	if b.onBehalf == "" {
		return "you", ErrQuota
	}
	return b.onBehalf, &otherQuota{b.onBehalf}
}

// otherQuota is ErrQuota for a request root makes for another user.
type otherQuota struct{ user string }

func (e *otherQuota) Error() string { return "over " + e.user + "'s quota" }
func (e *otherQuota) Unwrap() error { return ErrQuota }

// checkLength checks a request's length and start against the user's
// limits: max and ahead.
func checkLength(lim Limits, length time.Duration, start, now time.Time) error {
	if lim.Exempt {
		return nil
	}
	if length > lim.MaxLength {
		return fmt.Errorf("%w: %s asked, the most is %s", ErrTooLong, FormatDuration(length), FormatDuration(lim.MaxLength))
	}
	if ahead := start.Sub(now); ahead > lim.Ahead {
		return fmt.Errorf("%w: it would start in %s, the furthest is %s (ahead=%s)", ErrTooFarAhead,
			FormatDuration(ahead), FormatDuration(lim.Ahead), FormatDuration(lim.Ahead))
	}
	return nil
}
