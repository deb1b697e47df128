package core

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/storage"
)

// Policy is what monitors do when a booking ends or a process misbehaves.
type Policy = storage.Policy

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

// DefaultPolicy applies until root stores one with `chronos policy set`.
func DefaultPolicy() Policy {
	return Policy{
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
	}
}

func policyIn(tx *storage.Tx) (Policy, error) {
	p, ok, err := tx.Policy()
	if err != nil || !ok {
		return DefaultPolicy(), err
	}
	if p.Admit == "" {
		p.Admit = AdmitBooked // stored before admission could be physical
	}
	return withLadder(p), nil
}

// withLadder gives a policy stored before the idle ladder existed the
// ladder's defaults.
func withLadder(p Policy) Policy {
	if p.Idle == 0 {
		d := DefaultPolicy()
		p.Reclaim, p.Idle, p.IdleWarn, p.IdleSM, p.IdleStart, p.HoldMax = d.Reclaim, d.Idle, d.IdleWarn, d.IdleSM, d.IdleStart, d.HoldMax
	}
	return p
}

// Policy returns the policy in force.
func (c *Client) Policy() (Policy, error) {
	var p Policy
	err := c.ledger.View(func(tx *storage.Tx) error {
		var err error
		p, err = policyIn(tx)
		return err
	})
	return p, err
}

// SetPolicy applies settings like "expiry=terminate grace=30s" to the stored
// policy. Root only: the policy decides whose processes get killed.
func (c *Client) SetPolicy(settings []string) (Policy, error) {
	if !c.me.Root() {
		return Policy{}, fmt.Errorf("%w: changing the policy", ErrNotRoot)
	}
	var p Policy
	err := c.ledger.Update(func(tx *storage.Tx) error {
		var err error
		if p, err = policyIn(tx); err != nil {
			return err
		}
		if p, err = ApplyPolicy(p, settings); err != nil {
			return err
		}
		if err := tx.PutPolicy(p); err != nil {
			return err
		}
		return tx.AddEvent(storage.Event{Time: c.now(), Kind: storage.EventPolicy, UID: c.me.UID, User: c.me.User, Detail: FormatPolicy(p)})
	})
	return p, err
}

// ApplyPolicy returns p with each "key=value" setting applied. Keys: expiry
// (terminate|notify), overbudget and unbooked (off|warn|terminate), grace,
// warn (the lead before the end), max (the longest booking), admit
// (booked|physical), and the idle ladder: reclaim (off|when-waiting|always),
// idle, idle-warn (a list), idle-sm, idle-start, hold-max and notify-url (a
// URL, or off).
func ApplyPolicy(p Policy, settings []string) (Policy, error) {
	if len(settings) == 0 {
		return p, inputErr("no settings given (e.g. expiry=terminate overbudget=warn grace=30s)")
	}
	p = withLadder(p)
	p.IdleWarn = slices.Clone(p.IdleWarn)
	for _, s := range settings {
		k, raw, ok := strings.Cut(strings.TrimSpace(s), "=")
		k, raw = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(raw)
		v := strings.ToLower(raw)
		if !ok || v == "" {
			return p, inputErr("policy setting %s is not key=value", Quote(s))
		}
		var err error
		switch k {
		case "expiry":
			p.Expiry, err = oneOf(k, v, ActTerminate, ActNotify)
		case "overbudget", "over-budget", "over_budget":
			p.OverBudget, err = oneOf(k, v, ActOff, ActWarn, ActTerminate)
		case "unbooked":
			p.Unbooked, err = oneOf(k, v, ActOff, ActWarn, ActTerminate)
		case "grace":
			p.Grace, err = policyDuration(k, v, 0)
		case "warn", "warn-lead", "warn_lead":
			p.WarnLead, err = policyDuration(k, v, 0)
		case "max", "max-length", "max_length":
			p.MaxLength, err = policyDuration(k, v, time.Minute)
		case "admit":
			p.Admit, err = oneOf(k, v, AdmitBooked, AdmitPhysical)
		case "reclaim":
			p.Reclaim, err = oneOf(k, v, ReclaimOff, ReclaimWhenWaiting, ReclaimAlways)
			if p.Reclaim == ReclaimWhenWaiting {
				err = errNoLine
			}
		case "idle":
			p.Idle, err = policyDuration(k, v, time.Minute)
		case "idle-warn", "idle_warn":
			p.IdleWarn, err = policyDurations(k, v)
		case "idle-sm", "idle_sm":
			p.IdleSM, err = idleSM(v)
		case "idle-start", "idle_start":
			p.IdleStart, err = policyDuration(k, v, 0)
		case "hold-max", "hold_max":
			p.HoldMax, err = policyDuration(k, v, time.Minute)
		case "notify-url", "notify_url":
			p.NotifyURL, err = notifyURL(raw)
		default:
			err = inputErr("unknown policy key %s (expiry, overbudget, unbooked, grace, warn, max, admit, reclaim, idle, idle-warn, idle-sm, idle-start, hold-max, notify-url)", Quote(k))
		}
		if err != nil {
			return p, err
		}
	}
	for i, w := range p.IdleWarn {
		if w >= p.Idle {
			return p, inputErr("idle-warn=%s: every warning must come before idle=%s", FormatDuration(w), FormatDuration(p.Idle))
		}
		if i > 0 && w <= p.IdleWarn[i-1] {
			return p, inputErr("idle-warn: the warnings must come in order (%s after %s)", FormatDuration(w), FormatDuration(p.IdleWarn[i-1]))
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
		// Whole seconds, as FormatPolicy prints them, so that the order
		// checked here is the order read back.
		out = append(out, d.Round(time.Second))
	}
	return out, nil
}

// notifyURL checks a webhook address; "off" or "none" clears it.
func notifyURL(v string) (string, error) {
	if l := strings.ToLower(v); l == ActOff || l == "none" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(v, " \t\n") {
		return "", inputErr("notify-url=%s: expected an http(s) address like https://hooks.slack.com/services/…, or off", v)
	}
	return v, nil
}

// SplitPolicy splits settings typed as one string ("expiry=notify,grace=5s"
// or "idle-warn=1h,1h45m idle=2h") at spaces, and at commas that begin
// another key=value.
func SplitPolicy(s string) []string {
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

func oneOf(key, v string, allowed ...string) (string, error) {
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", inputErr("%s=%s: expected one of %s", key, Quote(v), strings.Join(allowed, ", "))
}

func policyDuration(key, v string, least time.Duration) (time.Duration, error) {
	if v == "0" || v == "0s" {
		if least == 0 {
			return 0, nil
		}
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	if d < least {
		return 0, inputErr("%s=%s is shorter than %s", key, Quote(v), FormatDuration(least))
	}
	return d, nil
}

// FormatPolicy prints a policy in the form SetPolicy reads.
func FormatPolicy(p Policy) string {
	p = withLadder(p)
	warn := "none"
	if len(p.IdleWarn) > 0 {
		steps := make([]string, len(p.IdleWarn))
		for i, w := range p.IdleWarn {
			steps[i] = FormatDuration(w)
		}
		warn = strings.Join(steps, ",")
	}
	s := fmt.Sprintf("expiry=%s overbudget=%s unbooked=%s grace=%s warn=%s max=%s admit=%s reclaim=%s idle=%s idle-warn=%s idle-sm=%d%% idle-start=%s hold-max=%s",
		p.Expiry, p.OverBudget, p.Unbooked, FormatDuration(p.Grace), FormatDuration(p.WarnLead), FormatDuration(p.MaxLength),
		cmp.Or(p.Admit, AdmitBooked), p.Reclaim, FormatDuration(p.Idle), warn, p.IdleSM, FormatDuration(p.IdleStart), FormatDuration(p.HoldMax))
	if p.NotifyURL != "" {
		s += " notify-url=" + p.NotifyURL
	}
	return s
}

// idleSM reads idle-sm: the mean SM activity under which a minute counts as
// idle, a whole percent from 1 to 100 written as a compute share is.
func idleSM(v string) (int, error) {
	pct, err := ParseCompute(v)
	if err != nil || pct == 0 {
		return 0, inputErr("idle-sm %s: the SM activity under which a minute counts as idle is a percent from 1%% to 100%%, like 5%%", Quote(v))
	}
	return pct, nil
}
