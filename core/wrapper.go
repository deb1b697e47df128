package core

import (
	"fmt"
	"syscall"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// RecordWrapper records this process as the wrapper of booking id.
func (c *Client) RecordWrapper(id uint64, group int) error {
	w, err := proc.ThisWrapper(group)
	if err != nil {
		return err
	}
	return c.SetWrapper(id, w)
}

// SetWrapper stores w in the live booking id, which must be the caller's
// (or the caller root).
func (c *Client) SetWrapper(id uint64, w domain.Wrapper) error {
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		p, err := tx.Partition(id)
		if err != nil || p.State != domain.Live {
			return err
		}
		if !c.me.MayChange(p.UID) {
			return fmt.Errorf("%w: %d belongs to %s; only they or root may run in it", domain.ErrNotOwner, id, p.User)
		}
		p.Wrapper = &w
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.RecordEvent(tx, domain.EventRun, p, fmt.Sprintf("process %d runs its command, process group %d", w.PID, w.Group))
	})
}

// ClaimSignal is claimSignal for the run's two signals.
func (c *Client) ClaimSignal(id uint64, sig syscall.Signal, group int, start uint64, detail string) (bool, error) {
	act, ok := map[syscall.Signal]domain.ClaimAct{syscall.SIGTERM: domain.ClaimTerm, syscall.SIGKILL: domain.ClaimKill}[sig]
	if !ok {
		return false, domain.InputErr("a run claims SIGTERM or SIGKILL, not %s", proc.SignalName(sig))
	}
	return claimSignal(c, id, act, group, start, detail)
}
