package core

import (
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// BookingUsage returns what monitors recorded of a booking: idle and GPU time,
// memory peak, its place on the idle ladder and its holds.
func (c *Client) BookingUsage(id uint64) (domain.BookingUsage, error) {
	var u domain.BookingUsage
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		if _, err := getPartition(tx, id); err != nil {
			return err
		}
		var err error
		u, _, err = tx.BookingUsage(id)
		return err
	})
	return u, err
}
