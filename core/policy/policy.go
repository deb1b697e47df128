// Package policy is the ledger's policy as people set it: the table of
// settings (chronos policy set's keys) with the parsing and formatting of
// each, the defaults, and the limits and group caps the settings give
// each user. Admission applies a policy; this package defines it.
package policy

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
)

// Actions a policy may name.
const (
	ActOff       = "off"
	ActWarn      = "warn"
	ActNotify    = "notify"
	ActTerminate = "terminate"
)

// When idle bookings are reclaimed (Policy.Reclaim).
const (
	ReclaimOff         = "off"
	ReclaimWhenWaiting = "when-waiting"
	ReclaimAlways      = "always"
)

// Default applies until root stores one with `chronos policy set`.
// Quotas are off by default: turning one on is the admin's choice, never a
// surprise refusal after an upgrade.
func Default() domain.Policy {
	return domain.Policy{
		Expiry:     ActTerminate,
		OverBudget: ActWarn,
		Unbooked:   ActWarn,
		Grace:      30 * time.Second,
		WarnLead:   5 * time.Minute,
		MaxLength:  7 * 24 * time.Hour,
		Admit:      AdmitBooked,
		// The ladder is off until root turns it on, with these ready.
		Reclaim:   ReclaimOff,
		Idle:      2 * time.Hour,
		IdleWarn:  []time.Duration{time.Hour, time.Hour + 45*time.Minute},
		IdleSM:    5,
		IdleStart: 15 * time.Minute,
		HoldMax:   4 * time.Hour,
		Ahead:     14 * 24 * time.Hour,
		HalfLife:  7 * 24 * time.Hour,
		AgeWeight: 1,
		MaxAge:    24 * time.Hour,
	}
}

// WithDefaults fills in the knobs a policy stored by an older chronos
// lacks: no admit, or no half-life, which this chronos never stores as
// zero.
func WithDefaults(p domain.Policy) domain.Policy {
	if p.Admit == "" {
		p.Admit = AdmitBooked // stored before admission could be physical
	}
	if p.HalfLife == 0 {
		d := Default()
		p.Ahead, p.HalfLife, p.AgeWeight, p.MaxAge = d.Ahead, d.HalfLife, d.AgeWeight, d.MaxAge
	}
	return withLadder(p)
}

// withLadder gives a policy stored before the idle ladder existed the
// ladder's defaults.
func withLadder(p domain.Policy) domain.Policy {
	if p.Idle == 0 {
		d := Default()
		p.Reclaim, p.Idle, p.IdleWarn, p.IdleSM, p.IdleStart, p.HoldMax = d.Reclaim, d.Idle, d.IdleWarn, d.IdleSM, d.IdleStart, d.HoldMax
	}
	return p
}

// Limits are the quotas and the fair share that apply to one user: the
// policy's, with the overrides of their groups and their own on top.
type Limits struct {
	UserGPUs    *float64      // GPU-equivalents held at once; nil: no limit, 0: none may be held
	UserHours   *float64      // GPU-hours in any HoursWindow; nil: no limit, 0: none may be booked
	HoursWindow time.Duration //
	Ahead       time.Duration // furthest start ahead
	MaxLength   time.Duration // longest booking
	Share       float64       // the user's weight in fair share (1: equal)
	Exempt      bool          // no quota applies
	// Groups are the caps of the capped groups the user is in, which
	// hold the group's members together (group-gpus, group-hours).
	Groups []GroupCap
}

func limitsOf(p domain.Policy) Limits {
	return Limits{UserGPUs: p.UserGPUs, UserHours: p.UserHours, HoursWindow: p.HoursWindow, Ahead: p.Ahead, MaxLength: p.MaxLength, Share: 1}
}

// LimitsFor returns the limits that apply to the user: the policy's, then
// their groups' overrides in the order the policy lists them, then their
// own; a later setting of the same knob wins.
func LimitsFor(p domain.Policy, who domain.Identity) Limits {
	l := limitsOf(p)
	var groups []string
	looked := false
	for _, o := range p.Overrides {
		g, ok := strings.CutPrefix(o.For, "@")
		if !ok {
			continue
		}
		if !looked {
			groups, looked = proc.GroupsOf(who.UID), true
		}
		if slices.Contains(groups, g) {
			_ = ApplyLimits(&l, o.Settings) // checked when it was set
			if c, ok := GroupCapOf(g, o.Settings); ok {
				l.Groups = append(l.Groups, c)
			}
		}
	}
	for _, o := range p.Overrides {
		if o.For == who.User || o.For == strconv.Itoa(who.UID) {
			_ = ApplyLimits(&l, o.Settings)
		}
	}
	return l
}

func ApplyLimits(l *Limits, settings map[string]string) error {
	for _, k := range domain.SortedKeys(settings) {
		kn, _ := knobNamed(k)
		if kn != nil && kn.setCap != nil {
			continue // a group's cap, not one of each member's limits
		}
		if kn == nil || kn.setLimit == nil {
			return domain.InputErr("policy key %s cannot be set for a user or group", human.Quote(k))
		}
		if err := kn.setLimit(l, settings[k]); err != nil {
			return err
		}
	}
	return nil
}

// knob is one setting of the policy: its name as typed, what it means,
// and how it is read and printed. setLimit is set for the knobs that may
// differ per user or group (for=NAME, for=@GROUP); setCap for the caps of
// a group's members together (for=@GROUP only).
type knob struct {
	key      string
	aliases  []string
	meaning  string
	show     func(p domain.Policy) string
	raw      bool                                   // the value keeps its case (a URL)
	set      func(p *domain.Policy, v string) error // nil: only for=
	setLimit func(l *Limits, v string) error        // nil: only for everyone
	setCap   func(c *GroupCap, v string) error
}

// knobs is every setting, in the order `chronos policy` shows them.
var knobs = []knob{
	{key: "expiry", meaning: "at a booking's end: terminate its processes, or notify only",
		show: func(p domain.Policy) string { return p.Expiry },
		set: func(p *domain.Policy, v string) (err error) {
			p.Expiry, err = oneOf("expiry", v, ActTerminate, ActNotify)
			return
		}},
	{key: "overbudget", aliases: []string{"over-budget", "over_budget"}, meaning: "processes using more memory than booked: off, warn or terminate",
		show: func(p domain.Policy) string { return p.OverBudget },
		set: func(p *domain.Policy, v string) (err error) {
			p.OverBudget, err = oneOf("overbudget", v, ActOff, ActWarn, ActTerminate)
			return
		}},
	{key: "unbooked", meaning: "GPU processes with no booking, on a GPU that has bookings: off, warn or terminate",
		show: func(p domain.Policy) string { return p.Unbooked },
		set: func(p *domain.Policy, v string) (err error) {
			p.Unbooked, err = oneOf("unbooked", v, ActOff, ActWarn, ActTerminate)
			return
		}},
	{key: "grace", meaning: "time between SIGTERM and SIGKILL",
		show: func(p domain.Policy) string { return human.FormatDuration(p.Grace) },
		set:  func(p *domain.Policy, v string) (err error) { p.Grace, err = policyDuration("grace", v, 0); return }},
	{key: "warn", aliases: []string{"warn-lead", "warn_lead"}, meaning: "warning lead before a booking ends",
		show: func(p domain.Policy) string { return human.FormatDuration(p.WarnLead) },
		set:  func(p *domain.Policy, v string) (err error) { p.WarnLead, err = policyDuration("warn", v, 0); return }},
	{key: "max", aliases: []string{"max-length", "max_length"}, meaning: "longest booking (and most time left after an extension)",
		show: func(p domain.Policy) string { return human.FormatDuration(p.MaxLength) },
		setLimit: func(l *Limits, v string) (err error) {
			l.MaxLength, err = policyDuration("max", v, time.Minute)
			return
		}},
	{key: "admit", meaning: "what admission counts: booked shares only, or also the memory physically in use",
		show: func(p domain.Policy) string { return p.Admit },
		set: func(p *domain.Policy, v string) (err error) {
			p.Admit, err = oneOf("admit", v, AdmitBooked, AdmitPhysical)
			return
		}},
	{key: "reclaim", meaning: "release bookings idle for idle=: off, when-waiting (only when someone waits for the GPU) or always",
		show: func(p domain.Policy) string { return p.Reclaim },
		set: func(p *domain.Policy, v string) (err error) {
			p.Reclaim, err = oneOf("reclaim", v, ReclaimOff, ReclaimWhenWaiting, ReclaimAlways)
			return
		}},
	{key: "idle", meaning: "idle time after which a booking is reclaimed",
		show: func(p domain.Policy) string { return human.FormatDuration(p.Idle) },
		set: func(p *domain.Policy, v string) (err error) {
			p.Idle, err = policyDuration("idle", v, time.Minute)
			return
		}},
	{key: "idle-warn", aliases: []string{"idle_warn"}, meaning: "when an idle booking's owner is warned first (a list; none: never)",
		show: func(p domain.Policy) string { return formatDurations(p.IdleWarn) },
		set: func(p *domain.Policy, v string) (err error) {
			p.IdleWarn, err = policyDurations("idle-warn", v)
			return
		}},
	{key: "idle-sm", aliases: []string{"idle_sm"}, meaning: "mean SM activity under which a minute counts as idle",
		show: func(p domain.Policy) string { return fmt.Sprintf("%d%%", p.IdleSM) },
		set:  func(p *domain.Policy, v string) (err error) { p.IdleSM, err = idleSM(v); return }},
	{key: "idle-start", aliases: []string{"idle_start"}, meaning: "a booking with no GPU process yet is not idle before this",
		show: func(p domain.Policy) string { return human.FormatDuration(p.IdleStart) },
		set: func(p *domain.Policy, v string) (err error) {
			p.IdleStart, err = policyDuration("idle-start", v, 0)
			return
		}},
	{key: "hold-max", aliases: []string{"hold_max"}, meaning: "longest 'chronos hold'",
		show: func(p domain.Policy) string { return human.FormatDuration(p.HoldMax) },
		set: func(p *domain.Policy, v string) (err error) {
			p.HoldMax, err = policyDuration("hold-max", v, time.Minute)
			return
		}},
	{key: "notify-url", aliases: []string{"notify_url"}, raw: true, meaning: "Slack-compatible webhook root's monitor posts every notice to, kept in root's notify file (off: none)",
		show: func(p domain.Policy) string { return cmp.Or(p.NotifyURL, ActOff) },
		set:  func(p *domain.Policy, v string) (err error) { p.NotifyURL, err = NotifyURL(v); return }},
	{key: "mps-user-dirs", aliases: []string{"mps_user_dirs"}, raw: true, meaning: "MPS pipe directories where a user's own daemon is trusted for their bookings (none: only root's daemon)",
		show: func(p domain.Policy) string { return cmp.Or(strings.Join(p.MPSUserDirs, ","), "none") },
		set:  func(p *domain.Policy, v string) (err error) { p.MPSUserDirs, err = mpsUserDirs(v); return }},
	{key: "user-gpus", aliases: []string{"user_gpus"}, meaning: "GPU-equivalents one user may hold at once (a 50% booking is 0.5), at every instant of a booking; 0: none at all, none: no limit",
		show:     func(p domain.Policy) string { return FormatLimit(p.UserGPUs) },
		setLimit: func(l *Limits, v string) (err error) { l.UserGPUs, err = parseGPUs("user-gpus", v); return }},
	{key: "user-hours", aliases: []string{"user_hours"}, meaning: "share-weighted GPU-hours one user may book in any rolling window (200/7d); 0: none at all, none: no limit",
		show: func(p domain.Policy) string { return FormatHours(p.UserHours, p.HoursWindow) },
		setLimit: func(l *Limits, v string) (err error) {
			l.UserHours, l.HoursWindow, err = parseHours("user-hours", v)
			return
		}},
	{key: "group-gpus", aliases: []string{"group_gpus"}, meaning: "GPU-equivalents a group's members may hold at once together, at every instant of a booking (for=@GROUP only)",
		setCap: func(c *GroupCap, v string) (err error) { c.GPUs, err = parseGPUs("group-gpus", v); return }},
	{key: "group-hours", aliases: []string{"group_hours"}, meaning: "share-weighted GPU-hours a group's members may book together in any rolling window (500/7d; for=@GROUP only)",
		setCap: func(c *GroupCap, v string) (err error) {
			c.Hours, c.Window, err = parseHours("group-hours", v)
			return
		}},
	{key: "ahead", meaning: "how far ahead a booking may start (--at)",
		show:     func(p domain.Policy) string { return human.FormatDuration(p.Ahead) },
		setLimit: func(l *Limits, v string) (err error) { l.Ahead, err = policyDuration("ahead", v, 0); return }},
	{key: "halflife", aliases: []string{"half-life", "half_life"}, meaning: "half-life of the usage that orders the line",
		show: func(p domain.Policy) string { return human.FormatDuration(p.HalfLife) },
		set: func(p *domain.Policy, v string) (err error) {
			p.HalfLife, err = policyDuration("halflife", v, time.Minute)
			return
		}},
	{key: "age-weight", aliases: []string{"age_weight"}, meaning: "weight of time waited in the line's order (0: none)",
		show: func(p domain.Policy) string { return formatNumber(p.AgeWeight) },
		set: func(p *domain.Policy, v string) (err error) {
			p.AgeWeight, err = parseNumber("age-weight", v, 0, 100)
			return
		}},
	{key: "max-age", aliases: []string{"max_age"}, meaning: "waiting this long gives the full age weight",
		show: func(p domain.Policy) string { return human.FormatDuration(p.MaxAge) },
		set: func(p *domain.Policy, v string) (err error) {
			p.MaxAge, err = policyDuration("max-age", v, time.Second)
			return
		}},
	{key: "share", meaning: "a user's or group's weight in fair share (for=NAME or for=@GROUP; 1 by default)",
		setLimit: func(l *Limits, v string) (err error) { l.Share, err = parseNumber("share", v, 0.001, 1000); return }},
	{key: "exempt", meaning: "quotas do not apply (for=NAME or for=@GROUP; root is not exempt unless set)",
		setLimit: func(l *Limits, v string) (err error) { l.Exempt, err = parseYesNo("exempt", v); return }},
}

func knobNamed(k string) (*knob, bool) {
	for i := range knobs {
		if knobs[i].key == k || slices.Contains(knobs[i].aliases, k) {
			return &knobs[i], true
		}
	}
	return nil, false
}

func knobKeys(pred func(knob) bool) string {
	var keys []string
	for _, k := range knobs {
		if pred(k) {
			keys = append(keys, k.key)
		}
	}
	return strings.Join(keys, ", ")
}

// Apply returns p with each "key=value" setting applied. With
// for=NAME (a user) or for=@GROUP, the settings apply to that user or
// group only. A value of "default" puts a knob back to its default (for a
// user or group: to the policy's own).
//
//nolint:funlen,gocyclo // one case per kind of setting, so that every setting is parsed in one place
func Apply(p domain.Policy, settings []string) (domain.Policy, error) {
	if len(settings) == 0 {
		return p, domain.InputErr("no settings given (e.g. expiry=terminate overbudget=warn grace=30s)")
	}
	type setting struct{ k, v string }
	var list []setting
	target := ""
	for _, s := range settings {
		k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return p, domain.InputErr("policy setting %s is not key=value", human.Quote(s))
		}
		if k == "for" {
			if target != "" && target != v {
				return p, domain.InputErr("for= given twice: set one user or group at a time")
			}
			if err := checkTargetName(v); err != nil {
				return p, err
			}
			target = v
			continue
		}
		kn, ok := knobNamed(k)
		if !ok {
			return p, domain.InputErr("unknown policy key %s (%s)", human.Quote(k), knobKeys(func(knob) bool { return true }))
		}
		if !kn.raw {
			v = strings.ToLower(v)
		}
		list = append(list, setting{kn.key, v})
	}
	p = WithDefaults(p)
	p.Overrides = slices.Clone(p.Overrides)
	p.IdleWarn = slices.Clone(p.IdleWarn)
	if target != "" {
		i := slices.IndexFunc(p.Overrides, func(o domain.Override) bool { return o.For == target })
		if i < 0 {
			p.Overrides = append(p.Overrides, domain.Override{For: target})
			i = len(p.Overrides) - 1
		}
		o := &p.Overrides[i]
		o.Settings = clone(o.Settings)
		for _, s := range list {
			kn, _ := knobNamed(s.k)
			if kn.setCap != nil {
				if err := checkCap(kn, target, s.v); err != nil {
					return p, err
				}
				if s.v == "default" {
					delete(o.Settings, s.k)
				} else {
					o.Settings[s.k] = s.v
				}
				continue
			}
			if kn.setLimit == nil {
				return p, domain.InputErr("%s applies to everyone; it cannot be set for %s (per user or group: %s)", s.k, target,
					knobKeys(func(k knob) bool { return k.setLimit != nil }))
			}
			if s.v == "default" {
				delete(o.Settings, s.k)
				continue
			}
			var scratch Limits
			if err := kn.setLimit(&scratch, s.v); err != nil {
				return p, err
			}
			o.Settings[s.k] = s.v
		}
		if len(o.Settings) == 0 {
			p.Overrides = slices.Delete(p.Overrides, i, i+1)
		}
		return p, nil
	}
	def := Default()
	for _, s := range list {
		kn, _ := knobNamed(s.k)
		if kn.setCap != nil {
			return p, errCapNeedsGroup(s.k, "")
		}
		if kn.show == nil {
			return p, domain.InputErr("%s is set for a user or group: add for=NAME or for=@GROUP", s.k)
		}
		v := s.v
		if v == "default" {
			v = kn.show(def)
		}
		if kn.set != nil {
			if err := kn.set(&p, v); err != nil {
				return p, err
			}
			continue
		}
		l := limitsOf(p)
		if err := kn.setLimit(&l, v); err != nil {
			return p, err
		}
		p.UserGPUs, p.UserHours, p.HoursWindow, p.Ahead, p.MaxLength = l.UserGPUs, l.UserHours, l.HoursWindow, l.Ahead, l.MaxLength
	}
	for i, w := range p.IdleWarn {
		if w >= p.Idle {
			return p, domain.InputErr("idle-warn=%s: every warning must come before idle=%s", human.FormatDuration(w), human.FormatDuration(p.Idle))
		}
		if i > 0 && w <= p.IdleWarn[i-1] {
			return p, domain.InputErr("idle-warn: the warnings must come in order (%s after %s)", human.FormatDuration(w), human.FormatDuration(p.IdleWarn[i-1]))
		}
	}
	return p, nil
}

// policyDurations reads a list like "1h,1h45m"; "none" is no warnings.
func policyDurations(key, v string) ([]time.Duration, error) {
	if v == "none" || v == ActOff {
		return nil, nil
	}
	var out []time.Duration
	for _, s := range strings.Split(v, ",") {
		d, err := policyDuration(key, strings.TrimSpace(s), time.Second)
		if err != nil {
			return nil, err
		}
		// Whole seconds, as Format prints them, so that the order
		// checked here is the order read back.
		out = append(out, d.Round(time.Second))
	}
	return out, nil
}

func formatDurations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	steps := make([]string, len(ds))
	for i, d := range ds {
		steps[i] = human.FormatDuration(d)
	}
	return strings.Join(steps, ",")
}

// NotifyURL checks a webhook address; "off" or "none" clears it.
func NotifyURL(v string) (string, error) {
	if l := strings.ToLower(v); l == ActOff || l == "none" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(v, " \t\n") {
		return "", domain.InputErr("notify-url=%s: expected an http(s) address like https://hooks.slack.com/services/…, or off", v)
	}
	return v, nil
}

// mpsUserDirs checks a list of MPS pipe directories; "none" clears it.
func mpsUserDirs(v string) ([]string, error) {
	if strings.EqualFold(v, "none") {
		return nil, nil
	}
	var dirs []string
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); !filepath.IsAbs(d) || strings.ContainsFunc(d, unicode.IsControl) {
			return nil, domain.InputErr("mps-user-dirs=%s: expected absolute directories separated by commas, or none", human.Quote(v))
		}
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs, nil
}

// Split splits settings typed as one string ("expiry=notify,grace=5s"
// or "idle-warn=1h,1h45m idle=2h") at spaces, and at commas that begin
// another key=value.
func Split(s string) []string {
	var out []string
	for _, field := range strings.Fields(s) {
		parts := strings.Split(field, ",")
		for i, part := range parts {
			if i > 0 && !strings.Contains(part, "=") && len(out) > 0 {
				out[len(out)-1] += "," + part
				continue
			}
			out = append(out, part)
		}
	}
	return out
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkTargetName checks the form of for=NAME or for=@GROUP; SetPolicy
// checks that it exists.
func checkTargetName(v string) error {
	name := strings.TrimPrefix(v, "@")
	if name == "" || len(name) > 64 || strings.ContainsAny(name, " \t\n=,;:/@") {
		return domain.InputErr("for=%s: name a user (for=alice) or a group (for=@students)", human.Quote(v))
	}
	for _, r := range name {
		if r < 0x21 || r > 0x7e {
			return domain.InputErr("for=%s: name a user (for=alice) or a group (for=@students)", human.Quote(v))
		}
	}
	return nil
}

func oneOf(key, v string, allowed ...string) (string, error) {
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", domain.InputErr("%s=%s: expected one of %s", key, human.Quote(v), strings.Join(allowed, ", "))
}

func policyDuration(key, v string, least time.Duration) (time.Duration, error) {
	if v == "0" || v == "0s" {
		if least == 0 {
			return 0, nil
		}
	}
	d, err := human.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	if d < least {
		return 0, domain.InputErr("%s=%s is shorter than %s", key, human.Quote(v), human.FormatDuration(least))
	}
	return d, nil
}

func parseNumber(key, v string, least, most float64) (float64, error) {
	f, err := human.ParseDecimal(v)
	if err != nil || math.IsNaN(f) || f < least || f > most {
		return 0, domain.InputErr("%s=%s: expected a number from %s to %s", key, human.Quote(v), formatNumber(least), formatNumber(most))
	}
	return f, nil
}

func parseYesNo(key, v string) (bool, error) {
	switch v {
	case "yes", "true", "on":
		return true, nil
	case "no", "false", "off":
		return false, nil
	}
	return false, domain.InputErr("%s=%s: expected yes or no", key, human.Quote(v))
}

// noLimit is how a quota is lifted: user-gpus=none. Zero is a limit: the
// user may book nothing.
const noLimit = "none"

// parseGPUs reads user-gpus (or group-gpus, key): GPU-equivalents (1.5;
// 0: none at all), or none (no limit).
func parseGPUs(key, v string) (*float64, error) {
	if v == noLimit {
		return nil, nil
	}
	f, err := parseNumber(key, v, 0, 100000)
	if err != nil {
		return nil, domain.InputErr("%s=%s: expected GPU-equivalents (1.5; 0: no GPU at all), or none for no limit", key, human.Quote(v))
	}
	return &f, nil
}

// parseHours reads user-hours (or group-hours, key): GPU-hours in a
// window (200/7d; 200 alone means a week; 0: none at all), or none (no
// limit).
func parseHours(key, v string) (*float64, time.Duration, error) {
	if v == noLimit {
		return nil, 0, nil
	}
	hours, window, found := strings.Cut(v, "/")
	h, err := parseNumber(key, hours, 0, 1e7)
	if err != nil {
		return nil, 0, domain.InputErr("%s=%s: expected GPU-hours and a window, like 200/7d (0: none at all), or none for no limit", key, human.Quote(v))
	}
	w := 7 * 24 * time.Hour
	if found {
		if w, err = policyDuration(key+" window", window, time.Minute); err != nil {
			return nil, 0, err
		}
	}
	return &h, w, nil
}

func FormatLimit(f *float64) string {
	if f == nil {
		return noLimit
	}
	return formatNumber(*f)
}

func FormatHours(h *float64, w time.Duration) string {
	if h == nil {
		return noLimit
	}
	return formatNumber(*h) + "/" + human.FormatDuration(w)
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Format prints the policy's own settings in the form SetPolicy
// reads; FormatOverride prints each user's or group's.
func Format(p domain.Policy) string {
	var b strings.Builder
	for _, k := range knobs {
		if k.show == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k.key + "=" + k.show(p))
	}
	return b.String()
}

// FormatOverride prints one user's or group's settings as SetPolicy reads them.
func FormatOverride(o domain.Override) string {
	var b strings.Builder
	for _, k := range domain.SortedKeys(o.Settings) {
		b.WriteString(k + "=" + o.Settings[k] + " ")
	}
	return b.String() + "for=" + o.For
}

// Setting is one setting as `chronos policy` shows it.
type Setting struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Default string `json:"default"`
	Meaning string `json:"meaning"`
}

// Knobs lists every setting of p with its default, and each override.
func Knobs(p domain.Policy) (knobList []Setting, overrides []string) {
	def := Default()
	for _, k := range knobs {
		row := Setting{Key: k.key, Meaning: k.meaning, Value: "-", Default: "-"}
		switch {
		case k.key == "share":
			row.Value, row.Default = "1", "1"
		case k.key == "exempt":
			row.Value, row.Default = "no", "no"
		case k.setCap != nil: // set per group: the overrides below say where
			row.Value, row.Default = noLimit, noLimit
		default:
			row.Value, row.Default = k.show(p), k.show(def)
		}
		knobList = append(knobList, row)
	}
	for _, o := range p.Overrides {
		overrides = append(overrides, FormatOverride(o))
	}
	return knobList, overrides
}

// idleSM reads idle-sm: the mean SM activity under which a minute counts as
// idle, a whole percent from 1 to 100 written as a compute share is.
func idleSM(v string) (int, error) {
	pct, err := human.ParseCompute(v)
	if err != nil || pct == 0 {
		return 0, domain.InputErr("idle-sm %s: the SM activity under which a minute counts as idle is a percent from 1%% to 100%%, like 5%%", human.Quote(v))
	}
	return pct, nil
}

// Admission policies: what `policy set admit=…` takes.
const (
	AdmitBooked   = "booked"   // booked shares only: memory in use is a warning
	AdmitPhysical = "physical" // also refuse a booking beyond what is physically free
)
