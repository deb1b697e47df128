package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// ErrGuarded says a member's process tried to keep a guarded ledger.
var ErrGuarded = errors.New("the ledger is guarded: only root's monitor keeps it")

// Guard reads whether the ledger is guarded, and for which group.
func (c *Client) Guard() (g storage.Guard, guarded bool, err error) {
	err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		g, guarded, err = tx.Guard()
		return err
	})
	return g, guarded, err
}

// SetGuard marks the ledger guarded for g's group, or open again when g is
// nil, with an event in the audit trail. Root only.
func (c *Client) SetGuard(g *storage.Guard) error {
	if !c.me.Root() {
		return fmt.Errorf("%w: guarding the ledger", domain.ErrNotRoot)
	}
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		was, guarded, err := tx.Guard()
		if err != nil {
			return err
		}
		detail := ""
		switch {
		case g != nil && (!guarded || was != *g):
			err, detail = tx.PutGuard(*g), "guarded: members of "+g.Group+" write through root's keeper"
		case g == nil && guarded:
			err, detail = tx.DropGuard(), "open: members of the group write the ledger directly"
		}
		if err != nil || detail == "" {
			return err
		}
		return tx.AddEvent(domain.Event{Time: c.now(), Kind: domain.EventPolicy, UID: c.me.UID, User: c.me.User, Detail: detail})
	})
}

// As is a client of the same ledger, clock and GPUs acting as who, its
// transactions under ctx: the keeper's for a member whose identity the
// kernel gave (SO_PEERCRED). Every rule that holds for who's own client
// holds for it (only root may act on others' records, book for others…).
func (c *Client) As(ctx context.Context, who domain.Identity) *Client {
	d := *c
	d.me, d.ctx = who, ctx
	return &d
}

// Wrap is the booking p, read elsewhere (the keeper's answer), with the
// calls that act on it through c.
func (c *Client) Wrap(p domain.Partition) Partition { return c.wrap(p) }
