package admission

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

// reason says in a few words why a request cannot start: what the queue
// shows.
func (b *Books) reason(blk *blocker, a Ask) string {
	switch blk.kind {
	case blockedDevice:
		return fmt.Sprintf("GPU %s has %s free, %s asked", b.gpuName(blk.gpu), human.FormatPercent(max(0, human.Ppm-int64(blk.figure))), human.FormatPercent(a.Share))
	case blockedReserved:
		return fmt.Sprintf("GPU %s's free share is kept for requests ahead", b.gpuName(blk.gpu))
	case blockedCount:
		verb := "have"
		if blk.figure == 1 {
			verb = "has"
		}
		return fmt.Sprintf("only %d of the GPUs of %s %s %s free over its length, %d asked", int(blk.figure), b.hostName(blk.gpu.Host), verb,
			human.FormatPercent(a.Share), blk.asked)
	case blockedGPUs:
		return fmt.Sprintf("user-gpus=%s: holds %s, asks %s", policy.FormatLimit(a.Limits.UserGPUs), FormatGPUCount(int64(blk.figure)), formatGPUs(a.total()))
	case blockedHours:
		return fmt.Sprintf("user-hours=%s: %s GPU-hours booked in the window, asks %s", policy.FormatHours(a.Limits.UserHours, a.Limits.HoursWindow),
			FormatGPUHours(blk.figure), FormatGPUHours(a.gpuHours()))
	case blockedGroupGPUs, blockedGroupHours:
		return groupReason(blk, a)
	}
	return blk.kind
}

func (a Ask) gpuHours() float64 { return float64(a.total()) / human.Ppm * a.Length.Hours() }

// formatGPUs prints a share in parts per million of a GPU as
// GPU-equivalents: 600000 is 0.6.
func formatGPUs(sharePPM int64) string {
	return strconv.FormatFloat(float64(sharePPM)/human.Ppm, 'f', -1, 64)
}

// FormatGPUCount is a share as GPU-equivalents with its noun: "1 GPU",
// "0.5 GPUs".
func FormatGPUCount(sharePPM int64) string {
	if sharePPM == human.Ppm {
		return "1 GPU"
	}
	return formatGPUs(sharePPM) + " GPUs"
}

// FormatGPUHours prints GPU-hours to a hundredth, or, for a figure that
// would show as 0.0, to its first two significant digits: a small quota's
// refusal reads "0.01 GPU-hours booked, 0.0028 asked", not "0.0, 0.0".
func FormatGPUHours(h float64) string {
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
	return e.Why.Error() + ". It would fit at " + human.FormatTime(e.At, e.Now) + " (--wait joins the line)"
}

func (e *FitsLaterError) Unwrap() error { return e.Why }

// Refusal is the error for a request that cannot start when asked
// (start): which limit, the figure, and when it would fit (f.start; zero
// when unknown), as a *FitsLaterError. With others, it says which other
// GPUs have room: not for an extension, which stays on its GPU.
func (b *Books) Refusal(cal Calendar, blk *blocker, f Fit, start time.Time, others bool) error {
	err := b.refusalNow(cal, blk, f, start, others)
	if f.start.IsZero() {
		return err
	}
	return &FitsLaterError{Why: err, At: f.start, Now: b.Now}
}

func (b *Books) refusalNow(cal Calendar, blk *blocker, f Fit, start time.Time, others bool) error {
	lim := f.Ask.Limits
	who, over := b.quotaOf()
	switch blk.kind {
	case blockedDevice:
		return fmt.Errorf("%w: %s", domain.ErrOverbooked, b.overbooked(cal, blk.gpu, f, start, others))
	case blockedCount:
		return fmt.Errorf("%w: %s", domain.ErrOverbooked, b.reason(blk, f.Ask))
	case blockedReserved:
		return fmt.Errorf("%w: GPU %s's free share is kept for requests waiting ahead of you", domain.ErrOverbooked, b.gpuName(blk.gpu))
	case blockedGPUs:
		return fmt.Errorf("%w: user-gpus=%s: %s would hold %s at once (%s already, %s asked)", over,
			policy.FormatLimit(lim.UserGPUs), who, FormatGPUCount(int64(blk.figure)+f.Ask.total()), formatGPUs(int64(blk.figure)), formatGPUs(f.Ask.total()))
	case blockedHours:
		return fmt.Errorf("%w: user-hours=%s: %s GPU-hours booked in the window, %s asked", over,
			policy.FormatHours(lim.UserHours, lim.HoursWindow), FormatGPUHours(blk.figure), FormatGPUHours(f.Ask.gpuHours()))
	case blockedGroupGPUs, blockedGroupHours:
		return groupRefusal(over, blk, f.Ask)
	}
	return fmt.Errorf("%w: %s", domain.ErrOverbooked, blk.kind)
}

// neverRefusal is the error for a request no calendar could ever grant.
func (b *Books) neverRefusal(blk *blocker, a Ask) error {
	lim := a.Limits
	who, over := b.quotaOf()
	switch {
	case blk.kind == blockedGPUs && *lim.UserGPUs == 0:
		return fmt.Errorf("%w: user-gpus=0: %s may hold no GPU at all (user-gpus=none is no limit)", over, who)
	case blk.kind == blockedGPUs:
		return fmt.Errorf("%w: user-gpus=%s: %s asked at once can never be granted", over, policy.FormatLimit(lim.UserGPUs), FormatGPUCount(a.total()))
	case blk.kind == blockedHours && *lim.UserHours == 0:
		return fmt.Errorf("%w: user-hours=%s: %s may book no GPU-hours at all (user-hours=none is no limit)", over,
			policy.FormatHours(lim.UserHours, lim.HoursWindow), who)
	case blk.kind == blockedHours:
		return fmt.Errorf("%w: user-hours=%s: %s GPU-hours asked can never be granted", over,
			policy.FormatHours(lim.UserHours, lim.HoursWindow), FormatGPUHours(a.gpuHours()))
	case blk.kind == blockedGroupGPUs || blk.kind == blockedGroupHours:
		return groupNever(over, blk, a)
	}
	return fmt.Errorf("%w: %s", over, blk.kind)
}

// quotaOf is the subject of a quota refusal and the refusal: the
// caller's own ("you"), or, when root books for someone, theirs by name.
func (b *Books) quotaOf() (who string, over error) {
	if b.OnBehalf == "" {
		return "you", domain.ErrQuota
	}
	return b.OnBehalf, &otherQuota{b.OnBehalf}
}

// otherQuota is ErrQuota for a request root makes for another user.
type otherQuota struct{ user string }

func (e *otherQuota) Error() string { return "over " + e.user + "'s quota" }

func (e *otherQuota) Unwrap() error { return domain.ErrQuota }

// CheckLength checks a request's length and start against the user's
// limits: max and ahead.
func CheckLength(lim policy.Limits, length time.Duration, start, now time.Time) error {
	if lim.Exempt {
		return nil
	}
	if length > lim.MaxLength {
		return fmt.Errorf("%w: %s asked, the most is %s", domain.ErrTooLong, human.FormatDuration(length), human.FormatDuration(lim.MaxLength))
	}
	if ahead := start.Sub(now); ahead > lim.Ahead {
		return fmt.Errorf("%w: it would start in %s, the furthest is %s (ahead=%s)", domain.ErrTooFarAhead,
			human.FormatDuration(ahead), human.FormatDuration(lim.Ahead), human.FormatDuration(lim.Ahead))
	}
	return nil
}
