package core

import (
	"cmp"
	"fmt"
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
	return p, nil
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
// warn (the lead before the end), max (the longest booking) and admit
// (booked|physical).
func ApplyPolicy(p Policy, settings []string) (Policy, error) {
	if len(settings) == 0 {
		return p, inputErr("no settings given (e.g. expiry=terminate overbudget=warn grace=30s)")
	}
	for _, s := range settings {
		k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		if !ok || v == "" {
			return p, inputErr("policy setting %q is not key=value", s)
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
		default:
			err = inputErr("unknown policy key %q (expiry, overbudget, unbooked, grace, warn, max, admit)", k)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func oneOf(key, v string, allowed ...string) (string, error) {
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", inputErr("%s=%s: expected one of %s", key, v, strings.Join(allowed, ", "))
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
		return 0, inputErr("%s=%s is shorter than %s", key, v, FormatDuration(least))
	}
	return d, nil
}

// FormatPolicy prints a policy in the form SetPolicy reads.
func FormatPolicy(p Policy) string {
	admit := cmp.Or(p.Admit, AdmitBooked)
	return fmt.Sprintf("expiry=%s overbudget=%s unbooked=%s grace=%s warn=%s max=%s admit=%s",
		p.Expiry, p.OverBudget, p.Unbooked, FormatDuration(p.Grace), FormatDuration(p.WarnLead), FormatDuration(p.MaxLength), admit)
}
