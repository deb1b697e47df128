package core

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInput marks input a person typed that is not valid; match it with
// errors.Is. The error's own message says what is wrong.
var ErrInput = errors.New("invalid input")

type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == ErrInput }

func inputErr(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// ParseDuration reads plain seconds ("3600", as the original CLI took) or a
// Go duration ("90m", "1h30m", "8h"). Zero, negative and absurd values are
// refused here; the policy's maximum is checked where a booking is made.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, inputErr("empty duration (try 3600, 90m or 2h)")
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || secs > maxParsedDuration.Seconds() || secs < -maxParsedDuration.Seconds() {
			return 0, inputErr("duration %q is absurdly long (at most %s)", s, formatDuration(maxParsedDuration))
		}
		d = time.Duration(secs * float64(time.Second))
	} else {
		d, err = parseGoDuration(s)
		if err != nil {
			// time.ParseDuration calls an overflow "invalid" too.
			if digits := len(s) - len(strings.TrimLeft(s, "0123456789")); digits > 6 {
				return 0, inputErr("duration %q is absurdly long (at most %s)", s, formatDuration(maxParsedDuration))
			}
			return 0, inputErr("duration %q is not seconds (3600) or a duration (90m, 1h30m, 8h)", s)
		}
	}
	switch {
	case d <= 0:
		return 0, inputErr("duration %q must be positive", s)
	case d < time.Second:
		return 0, inputErr("duration %q is shorter than a second", s)
	case d > maxParsedDuration:
		return 0, inputErr("duration %q is absurdly long (at most %s)", s, formatDuration(maxParsedDuration))
	}
	return d, nil
}

// parseGoDuration is time.ParseDuration plus a leading day count ("7d",
// "1d12h"), since FormatDuration prints days.
func parseGoDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("bad day count in %q", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		d += r
	}
	return d, nil
}

// maxParsedDuration bounds any duration a person can type; the policy's
// (shorter) maximum booking length applies on top.
const maxParsedDuration = 366 * 24 * time.Hour

// Memory is a booked amount of device memory: a fraction of the device, or
// a size in bytes. Exactly one is set.
type Memory struct {
	Fraction float64
	Bytes    uint64
}

// Fraction books that share of the device's memory (0 < f ≤ 1).
func Fraction(f float64) Memory { return Memory{Fraction: f} }

// Bytes books that many bytes of the device's memory.
func Bytes(n uint64) Memory { return Memory{Bytes: n} }

func (m Memory) String() string {
	if m.Bytes > 0 {
		return FormatBytes(m.Bytes)
	}
	return FormatPercent(int64(math.Round(m.Fraction * ppm)))
}

var sizeUnits = []struct {
	suffix string
	scale  float64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10},
}

// ParseMemory reads a fraction ("0.5"), a percent ("50%") or a size
// ("40GiB", "40G", "500MB").
func ParseMemory(s string) (Memory, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Memory{}, inputErr("empty memory share (try 0.5, 50%% or 40GiB)")
	}
	lower := strings.ToLower(s)
	if pct, ok := strings.CutSuffix(lower, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || math.IsNaN(v) {
			return Memory{}, inputErr("memory share %q is not a percent like 50%%", s)
		}
		return checkFraction(s, v/100)
	}
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(lower, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Memory{}, inputErr("memory size %q is not a number with a unit like 40GiB", s)
		}
		bytes := v * u.scale
		if bytes < 1<<20 {
			return Memory{}, inputErr("memory size %q is too small (at least 1MiB)", s)
		}
		if bytes > 1<<50 {
			return Memory{}, inputErr("memory size %q is absurdly large", s)
		}
		return Memory{Bytes: uint64(bytes)}, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return Memory{}, inputErr("memory share %q is not a fraction (0.5), a percent (50%%) or a size (40GiB)", s)
	}
	return checkFraction(s, v)
}

func checkFraction(s string, f float64) (Memory, error) {
	if !(f > 0 && f <= 1) {
		return Memory{}, inputErr("memory share %q must be more than 0 and at most 100%%", s)
	}
	if math.Round(f*ppm) < 1 {
		return Memory{}, inputErr("memory share %q is too small", s)
	}
	return Memory{Fraction: f}, nil
}

// ParseCompute reads an optional compute (SM) share: "25%", "0.25" or "25";
// bare numbers above 1 are percent. The result is a whole percent 1..100.
func ParseCompute(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	raw := strings.TrimSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(v) {
		return 0, inputErr("compute share %q is not a percent like 25%%", s)
	}
	if !strings.HasSuffix(s, "%") && v > 0 && v <= 1 {
		v *= 100
	}
	pct := int(math.Round(v))
	if pct < 1 || pct > 100 {
		return 0, inputErr("compute share %q must be between 1%% and 100%%", s)
	}
	return pct, nil
}

// ParseID reads a partition id as `list` prints it ("7" or "#7").
func ParseID(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "#")
	id, err := strconv.ParseUint(t, 10, 64)
	if err != nil || id == 0 {
		return 0, inputErr("%q is not a partition id (ids are numbers, as `chronos list` shows them)", s)
	}
	return id, nil
}

// ParseDevice reads a device index.
func ParseDevice(s string) (int, error) {
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || i < 0 {
		return 0, inputErr("%q is not a GPU index (0, 1, …)", s)
	}
	return i, nil
}

// ParseGPU reads a GPU as a person names it: an index on this host (0),
// or host:index (gpu3:0) in a ledger many hosts share.
func ParseGPU(s string) (host string, device int, err error) {
	h, d, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		device, err = ParseDevice(s)
		return "", device, err
	}
	if !validHost(h) {
		return "", 0, inputErr("%q: name a GPU as INDEX or HOST:INDEX (gpu3:0)", s)
	}
	device, err = ParseDevice(d)
	return h, device, err
}

// validHost accepts host names as DNS writes them.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// FormatGPU names a GPU as people type it: its index, or host:index for
// another host's.
func FormatGPU(host string, device int) string {
	if host == "" {
		return strconv.Itoa(device)
	}
	return host + ":" + strconv.Itoa(device)
}

const ppm = 1_000_000

// FormatPercent prints a share in parts per million as a percent.
func FormatPercent(sharePPM int64) string {
	pct := float64(sharePPM) / ppm * 100
	if math.Abs(pct-math.Round(pct)) < 0.05 {
		return fmt.Sprintf("%.0f%%", pct)
	}
	return fmt.Sprintf("%.1f%%", pct)
}

// FormatBytes prints a byte count in GiB (MiB below one GiB).
func FormatBytes(n uint64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// FormatDuration prints a duration as people read one: 1h30m, 45m, 30s.
func FormatDuration(d time.Duration) string { return formatDuration(d) }

func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h, m, s := d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}
