package core

import (
	"fmt"
	"strings"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// Policy returns the policy in force.
func (c *Client) Policy() (domain.Policy, error) {
	var p domain.Policy
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		p, err = ledger.Policy(tx)
		return err
	})
	p.NotifyURL = notice.NotifyShown(c.notify)
	return p, err
}

// SetPolicy applies settings like "expiry=terminate grace=30s" (or, with
// for=NAME or for=@GROUP, one user's or group's) to the stored policy. Root
// only: the policy decides whose processes get killed. The waiting line is
// checked again in the same transaction: requests the new policy lets
// start are booked, and those it never would are told why and leave.
func (c *Client) SetPolicy(settings []string) (domain.Policy, error) {
	if !c.me.Root() {
		return domain.Policy{}, fmt.Errorf("%w: changing the policy", domain.ErrNotRoot)
	}
	// The webhook is root's file, not the ledger's (see NotifyFile).
	settings, address, setNotify, err := notice.NotifySetting(settings)
	if err != nil {
		return domain.Policy{}, err
	}
	var p domain.Policy
	var more bool
	err = c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var err error
		if p, err = ledger.Policy(tx); err != nil {
			return err
		}
		if len(settings) > 0 || !setNotify {
			if p, err = policy.Apply(p, settings); err != nil {
				return err
			}
		}
		p.NotifyURL = "" // one kept by an older version would only be ignored
		for _, o := range p.Overrides {
			if err := checkTarget(o.For); err != nil {
				return err
			}
		}
		if err := tx.PutPolicy(p); err != nil {
			return err
		}
		detail := policy.Format(p)
		for _, o := range p.Overrides {
			detail += "; " + policy.FormatOverride(o)
		}
		if setNotify {
			// Written once the rest is known good, and before the
			// ledger commits: a file that cannot be written aborts it.
			if err := notice.WriteNotifyFile(c.notify, address); err != nil {
				return fmt.Errorf("notify-url: %w", err)
			}
			detail += "; notify-url written to " + c.notify
		}
		if err := tx.AddEvent(domain.Event{Time: c.now(), Kind: domain.EventPolicy, UID: c.me.UID, User: c.me.User, Detail: detail}); err != nil {
			return err
		}
		more, err = c.PlaceLine(tx)
		return err
	})
	if err != nil {
		return p, err
	}
	c.PlaceRest(more)
	p.NotifyURL = notice.NotifyShown(c.notify)
	return p, nil
}

// checkTarget makes sure an override names a user or group that exists.
func checkTarget(target string) error {
	if group, ok := strings.CutPrefix(target, "@"); ok {
		if _, err := proc.LookupGroup(group); err != nil {
			return fmt.Errorf("%w: no such group %s", domain.ErrUnknownUser, human.Quote(group))
		}
		return nil
	}
	_, err := proc.LookupUser(target)
	return err
}
