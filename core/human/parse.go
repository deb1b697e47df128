package human

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
)

// MaxEcho is how much of a bad argument a message repeats: enough to
// recognise it, never a whole pasted file.
const MaxEcho = 40

// Clip is s cut after maxEcho characters, marked with "…" when cut.
func Clip(s string) string {
	if utf8.RuneCountInString(s) <= MaxEcho {
		return s
	}
	return string([]rune(s)[:MaxEcho]) + "…"
}

// Quote is s as a message repeats it: quoted like %q, clipped, with the
// length said when it was cut.
func Quote(s string) string {
	if c := Clip(s); c != s {
		return fmt.Sprintf("%s (%d bytes)", strconv.Quote(c), len(s))
	}
	return strconv.Quote(s)
}

// ParseDuration reads plain seconds ("3600", as the original CLI took) or a
// Go duration ("90m", "1h30m", "8h"). Zero, negative and absurd values are
// refused here; the policy's maximum is checked where a booking is made.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, domain.InputErr("empty duration (try 3600, 90m, 2h or 2d)")
	}
	var d time.Duration
	if secs, err := ParseDecimal(s); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0, domain.InputErr("duration %s is not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)", Quote(s))
		}
		if secs > MaxParsedDuration.Seconds() || secs < -MaxParsedDuration.Seconds() {
			return 0, domain.InputErr("duration %s is absurdly long (at most %s)", Quote(s), formatDuration(MaxParsedDuration))
		}
		d = time.Duration(secs * float64(time.Second))
	} else {
		d, err = parseGoDuration(s)
		if err != nil {
			// time.ParseDuration calls an overflow "invalid" too.
			if digits := len(s) - len(strings.TrimLeft(s, "0123456789")); digits > 6 {
				return 0, domain.InputErr("duration %s is absurdly long (at most %s)", Quote(s), formatDuration(MaxParsedDuration))
			}
			return 0, domain.InputErr("duration %s is not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)", Quote(s))
		}
	}
	switch {
	case d <= 0:
		return 0, domain.InputErr("duration %s must be positive", Quote(s))
	case d < time.Second:
		return 0, domain.InputErr("duration %s is shorter than a second", Quote(s))
	case d > MaxParsedDuration:
		return 0, domain.InputErr("duration %s is absurdly long (at most %s)", Quote(s), formatDuration(MaxParsedDuration))
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

// MaxParsedDuration bounds any duration a person can type; the policy's
// (shorter) maximum booking length applies on top.
const MaxParsedDuration = 366 * 24 * time.Hour

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
	return FormatPercent(int64(math.Round(m.Fraction * Ppm)))
}

var sizeUnits = []struct {
	suffix string
	scale  float64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10},
}

// decimal is a number as people write one: digits with an optional point
// and exponent. strconv.ParseFloat also takes hex floats (0x1p-2), "inf",
// "nan" and underscores, which nobody means as a share or a duration.
var decimal = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$`)

// ParseDecimal reads s when it is written as a decimal number.
func ParseDecimal(s string) (float64, error) {
	if !decimal.MatchString(s) {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// ParseMemory reads a fraction ("0.5"), a percent ("50%") or a size
// ("40GiB", "40G", "500MB").
func ParseMemory(s string) (Memory, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Memory{}, domain.InputErr("empty memory share (try 0.5, 50%% or 40GiB)")
	}
	lower := strings.ToLower(s)
	if pct, ok := strings.CutSuffix(lower, "%"); ok {
		v, err := ParseDecimal(strings.TrimSpace(pct))
		if err != nil || math.IsNaN(v) {
			return Memory{}, domain.InputErr("memory share %s is not a percent like 50%%", Quote(s))
		}
		return CheckFraction(s, v/100)
	}
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(lower, u.suffix)
		if !ok {
			continue
		}
		v, err := ParseDecimal(strings.TrimSpace(num))
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Memory{}, domain.InputErr("memory size %s is not a number with a unit like 40GiB", Quote(s))
		}
		bytes := v * u.scale
		if bytes < 1<<20 {
			return Memory{}, domain.InputErr("memory size %s is too small (at least 1MiB)", Quote(s))
		}
		if bytes > 1<<50 {
			return Memory{}, domain.InputErr("memory size %s is absurdly large", Quote(s))
		}
		return Memory{Bytes: uint64(bytes)}, nil
	}
	v, err := ParseDecimal(s)
	if err != nil || math.IsNaN(v) {
		return Memory{}, domain.InputErr("memory share %s is not a fraction (0.5), a percent (50%%) or a size (40GiB)", Quote(s))
	}
	return CheckFraction(s, v)
}

func CheckFraction(s string, f float64) (Memory, error) {
	if f >= 2 && f <= 100 && f == math.Trunc(f) && !strings.HasSuffix(s, "%") {
		// "50" is most likely meant as a percent: say how to write one.
		return Memory{}, domain.InputErr("memory share %s must be a fraction of at most 1 (1 is the whole GPU): for %s percent, write %s%%", Quote(s), s, s)
	}
	if !(f > 0 && f <= 1) {
		return Memory{}, domain.InputErr("memory share %s must be more than 0 and at most 100%%", Quote(s))
	}
	if math.Round(f*Ppm) < 1 {
		return Memory{}, domain.InputErr("memory share %s is too small", Quote(s))
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
	v, err := ParseDecimal(strings.TrimSpace(raw))
	if err != nil || math.IsNaN(v) {
		return 0, domain.InputErr("compute share %s is not a percent like 25%%", Quote(s))
	}
	if !strings.HasSuffix(s, "%") && v > 0 && v <= 1 {
		v *= 100
	}
	pct := int(math.Round(v))
	if pct < 1 || pct > 100 {
		return 0, domain.InputErr("compute share %s must be between 1%% and 100%%", Quote(s))
	}
	return pct, nil
}

// ParseID reads a booking id as `list` prints it ("7" or "#7").
func ParseID(s string) (uint64, error) { return parseID(s, "booking", "list") }

// ParseRequestID reads a waiting request's id, as `chronos queue` shows it.
func ParseRequestID(s string) (uint64, error) { return parseID(s, "request", "queue") }

func parseID(s, what, shows string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "#")
	id, err := strconv.ParseUint(t, 10, 64)
	if err != nil || id == 0 {
		return 0, domain.InputErr("%s is not a %s id (ids are numbers, as `chronos %s` shows them)", Quote(s), what, shows)
	}
	return id, nil
}

// ParseDevice reads a device index, or "any" (AnyDevice): whichever GPU
// has room.
func ParseDevice(s string) (int, error) {
	if strings.EqualFold(strings.TrimSpace(s), "any") {
		return domain.AnyDevice, nil
	}
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || i < 0 {
		return 0, domain.InputErr("%s is not a GPU index (0, 1, …) or any", Quote(s))
	}
	return i, nil
}

// ParseStart reads when a booking made ahead starts (--at), as seen at
// now: a time of day ("14:00", "14:00:30", "9am", "2:30pm"), "tomorrow
// 09:00" (or "today"), a date and time ("2026-12-01 09:00"), RFC 3339, or
// a delay ("+2h", "+90m"). Local times are in the machine's zone. A time of
// day alone that has passed today means tomorrow, as at(1) takes it
// (StartNote says so); any other start that has passed (by more than the
// minute being typed), or lies absurdly far ahead, is refused. The
// policy's "ahead" is checked where the booking is made.
func ParseStart(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	var t time.Time
	switch {
	case s == "":
		return t, domain.InputErr("empty start (try 14:00, \"tomorrow 09:00\", +2h or RFC 3339)")
	case lower == "now":
		return now, nil
	case strings.HasPrefix(s, "+"):
		d, err := ParseDuration(s[1:])
		if err != nil {
			return t, domain.InputErr("start %s: %v", Quote(s), err)
		}
		t = now.Add(d)
	default:
		var err error
		if t, err = parseClock(lower, now.In(time.Local)); err != nil {
			return t, domain.InputErr("start %s is not a time (14:00, 9am, \"tomorrow 09:00\", 2026-12-01 09:00, RFC 3339 or +2h)", Quote(s))
		}
		if timeOfDay(lower) && t.Before(now.Add(-StartSlack)) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, t.Hour(), t.Minute(), t.Second(), 0, t.Location())
		}
	}
	switch {
	case t.Before(now.Add(-StartSlack)):
		return t, domain.InputErr("start %s (%s) has passed", Quote(s), t.Local().Format("Jan 2 15:04:05"))
	case t.After(now.Add(MaxParsedDuration)):
		return t, domain.InputErr("start %s is absurdly far ahead (at most %s)", Quote(s), formatDuration(MaxParsedDuration))
	}
	return t, nil
}

// StartNote says how ParseStart read s when that may surprise: a time of
// day that had passed today, taken for tomorrow's. It is empty otherwise.
func StartNote(s string, start, now time.Time) string {
	s = strings.TrimSpace(s)
	if !timeOfDay(strings.ToLower(s)) {
		return ""
	}
	day, today := start.In(time.Local), now.In(time.Local)
	if day.Year() == today.Year() && day.YearDay() == today.YearDay() {
		return ""
	}
	return fmt.Sprintf("%s has passed today: it starts tomorrow, %s", s, FormatTime(start, now))
}

// clockLayouts are the times of day ParseStart reads, 24-hour and 12-hour
// (lower case: the input is).
var clockLayouts = []string{"15:04", "15:04:05", "3pm", "3 pm", "3:04pm", "3:04 pm", "3:04:05pm", "3am", "3 am", "3:04am", "3:04 am", "3:04:05am"}

// timeOfDay reports whether s (lower case) is a time of day alone.
func timeOfDay(s string) bool {
	_, err := parseTimeOfDay(s)
	return err == nil
}

func parseTimeOfDay(s string) (time.Time, error) {
	for _, layout := range clockLayouts {
		if c, err := time.Parse(layout, s); err == nil {
			return c, nil
		}
	}
	return time.Time{}, errors.New("not a time of day")
}

// parseClock reads the forms of ParseStart that name a clock time.
func parseClock(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); err == nil {
		return t, nil
	}
	day, named := now, false
	if rest, ok := strings.CutPrefix(s, "tomorrow"); ok {
		day, s, named = now.AddDate(0, 0, 1), strings.TrimSpace(rest), true
	} else if rest, ok := strings.CutPrefix(s, "today"); ok {
		s, named = strings.TrimSpace(rest), true
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02t15:04", "2006-01-02t15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil && !named {
			return t, nil
		}
	}
	if c, err := parseTimeOfDay(s); err == nil {
		return time.Date(day.Year(), day.Month(), day.Day(), c.Hour(), c.Minute(), c.Second(), 0, now.Location()), nil
	}
	return time.Time{}, errors.New("no form matched")
}

// ParseStatus reads a booking status as a person types it: its words, or
// joined by a hyphen ("ending-soon", "gpu-gone"), in any case.
func ParseStatus(s string) (domain.BookingStatus, error) {
	typed := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", " "))
	names := make([]string, len(domain.BookingStatuses))
	for i, st := range domain.BookingStatuses {
		if strings.ToLower(string(st)) == typed {
			return st, nil
		}
		names[i] = strings.ToLower(strings.ReplaceAll(string(st), " ", "-"))
	}
	return "", domain.InputErr("state %s: use %s", Quote(s), strings.Join(names, ", "))
}

// ParseGPU reads a GPU as a person names it: an index on this host (0),
// or host:index (gpu3:0) in a ledger many hosts share; any (or gpu3:any)
// for whichever GPU of the host has room first.
func ParseGPU(s string) (host string, device int, err error) {
	h, d, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		device, err = ParseDevice(s)
		return "", device, err
	}
	if !ValidHost(h) {
		return "", 0, domain.InputErr("%s: name a GPU as INDEX or HOST:INDEX (gpu3:0)", Quote(s))
	}
	device, err = ParseDevice(d)
	return h, device, err
}

// ParseGPUs reads the GPUs of a booking as a person names them: what
// ParseGPU reads, or several GPUs of one host as a list (0,1; 0-3;
// gpu3:0-3), sorted. devices holds one index, or AnyDevice, for one GPU.
func ParseGPUs(s string) (host string, devices []int, err error) {
	h, d, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		h, d = "", s
	} else if !ValidHost(h) {
		return "", nil, domain.InputErr("%s: name GPUs as INDEX, a list (0,1 or 0-3) or HOST:INDEX (gpu3:0)", Quote(s))
	}
	if !strings.ContainsAny(d, ",-") || strings.HasPrefix(strings.TrimSpace(d), "-") {
		device, err := ParseDevice(d)
		return h, []int{device}, err
	}
	devices, err = gpu.ParseGPUList(d)
	if err != nil {
		return "", nil, domain.InputErr("%s", err)
	}
	return h, devices, nil
}

// FormatGPUs names the GPUs of a booking as people type them: 0, 0,1 or
// 0-3, after host: for another host's.
func FormatGPUs(host string, devices []int) string {
	if len(devices) == 1 {
		return FormatGPU(host, devices[0])
	}
	if host == "" {
		return gpu.FormatGPUList(devices)
	}
	return host + ":" + gpu.FormatGPUList(devices)
}

// ValidHost accepts host names as DNS writes them.
func ValidHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		default:
			return false
		}
	}
	return true
}

// FormatGPU names a GPU as people type it: its index, or host:index for
// another host's; any for AnyDevice.
func FormatGPU(host string, device int) string {
	index := strconv.Itoa(device)
	if device == domain.AnyDevice {
		index = "any"
	}
	if host == "" {
		return index
	}
	return host + ":" + index
}

const Ppm = 1_000_000

// ShareOf is a share stored in parts per million as a fraction, 0 to 1.
func ShareOf(partsPerMillion int64) float64 { return float64(partsPerMillion) / Ppm }

// FormatPercent prints a share in parts per million as a percent.
func FormatPercent(sharePPM int64) string {
	pct := float64(sharePPM) / Ppm * 100
	if math.Abs(pct-math.Round(pct)) < 0.05 {
		return fmt.Sprintf("%.0f%%", pct)
	}
	return fmt.Sprintf("%.1f%%", pct)
}

// FormatPercentDown prints a share rounded down to a tenth of a percent:
// what is free, so that a share shown as free can be booked.
func FormatPercentDown(sharePPM int64) string { return tenthsPercent(max(0, sharePPM) / 1000) }

// FormatPercentUp prints a share rounded up to a tenth of a percent: what is
// asked, so that it never looks smaller than what is free when it is not.
func FormatPercentUp(sharePPM int64) string { return tenthsPercent((max(0, sharePPM) + 999) / 1000) }

func tenthsPercent(tenths int64) string {
	if tenths%10 == 0 {
		return fmt.Sprintf("%d%%", tenths/10)
	}
	return fmt.Sprintf("%d.%d%%", tenths/10, tenths%10)
}

// FormatBytesDown is FormatBytes rounded down, for memory that is free.
func FormatBytesDown(n uint64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f GiB", float64(n*10>>30)/10)
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

// ParseSignal reads a signal name ("SIGUSR1", "usr1", "10") or "none".
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "NONE" || t == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(t); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if sig := unix.SignalNum("SIG" + strings.TrimPrefix(t, "SIG")); sig != 0 {
		return sig, nil
	}
	return 0, domain.InputErr("unknown signal %s (try SIGUSR1, SIGUSR2, SIGINT or none)", Quote(s))
}

// WarnSignal is the warning `chronos run` sends its command before the
// booking ends, as Slurm's --signal: a signal and how long before the end.
// The zero value sends nothing, which is the default: a signal the command
// does not handle (SIGUSR1's default action is to exit) would end the job
// before its booking does.
type WarnSignal struct {
	Signal syscall.Signal
	// Lead is how long before the end the signal goes; zero means the
	// policy's warning lead (WarnLead: half of a booking too short for it).
	Lead time.Duration
}

// ParseWarnSignal reads "USR1@5m" (the signal, and the lead as seconds or a
// duration), "SIGUSR1" (at the policy's warning lead) or "none".
func ParseWarnSignal(s string) (WarnSignal, error) {
	name, lead, hasLead := strings.Cut(strings.TrimSpace(s), "@")
	sig, err := ParseSignal(name)
	if err != nil {
		return WarnSignal{}, err
	}
	if !hasLead {
		return WarnSignal{Signal: sig}, nil
	}
	if sig == 0 {
		return WarnSignal{}, domain.InputErr("signal %s: name a signal before the @ (USR1@5m)", Quote(s))
	}
	d, err := ParseDuration(lead)
	if err != nil {
		return WarnSignal{}, domain.InputErr("signal %s: the lead after @ is not a duration (USR1@5m, USR1@300): %v", Quote(s), err)
	}
	return WarnSignal{Signal: sig, Lead: d}, nil
}

// String prints w as ParseWarnSignal reads it.
func (w WarnSignal) String() string {
	if w.Signal == 0 {
		return "none"
	}
	name := strings.TrimPrefix(unix.SignalName(w.Signal), "SIG")
	if name == "" {
		name = strconv.Itoa(int(w.Signal))
	}
	if w.Lead > 0 {
		return name + "@" + FormatDuration(w.Lead)
	}
	return name
}

// FormatTime prints an instant in local time as people read one: the time
// of day alone when it falls on now's day, with the weekday and date within
// a few months of now, and with the year beyond that, so that no printed
// date leaves the year to guess. Every printer of a booking's times uses it.
func FormatTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case ty == ny && tm == nm && td == nd:
		return t.Format("15:04:05")
	case t.Sub(now).Abs() < 90*24*time.Hour:
		return t.Format("Mon Jan 2 15:04:05")
	default:
		return t.Format("Mon Jan 2 2006 15:04:05")
	}
}

// EndsIn says how soon something ends, never "in 0s".
func EndsIn(d time.Duration) string {
	switch {
	case d <= 0:
		return "ends now"
	case d < time.Second:
		return "ends in under a second"
	}
	return "ends in " + FormatDuration(d)
}

// FormatEvent prints an audit event for people, after its time: the kind,
// the booking, the process it was about with its owner ("carol's pid 4242"),
// and who recorded it, so that a monitor's user never reads as the culprit.
func FormatEvent(e domain.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s", e.Kind)
	if e.Partition != 0 {
		fmt.Fprintf(&b, " #%d", e.Partition)
	}
	if e.Process == nil {
		fmt.Fprintf(&b, " by %s", e.User)
		if e.Detail != "" {
			b.WriteString(": " + e.Detail)
		}
		return b.String()
	}
	fmt.Fprintf(&b, " %s's pid %d", e.Process.User, e.Process.PID)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	fmt.Fprintf(&b, " (recorded by %s)", e.User)
	return b.String()
}

// StartSlack is how far in the past a start may be and still mean now: the
// minute a person typed.
const StartSlack = time.Minute

// StatusWords are the booking statuses as --state takes them.
func StatusWords() []string {
	out := make([]string, len(domain.BookingStatuses))
	for i, s := range domain.BookingStatuses {
		out[i] = strings.ToLower(strings.ReplaceAll(string(s), " ", "-"))
	}
	return out
}
