package ledger

import (
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// Books reads what admission decides on, in tx, as of now, for host here:
// every host's inventory, the policy, the live bookings, the line and,
// when the line or a group's cap needs it, the users' usage.
func Books(tx *storage.Tx, here string, now time.Time) (*admission.Books, error) {
	b := &admission.Books{HeldSince: tx.HeldSince, Now: now, Here: here, Limits: map[int]policy.Limits{}, HeldBy: map[int]admission.Calendar{}, Alive: waiterAlive}
	var err error
	if b.Invs, err = inventories(tx, here); err != nil {
		return nil, err
	}
	for _, inv := range b.Invs {
		b.Gpus += len(inv.Devices)
	}
	if b.Pol, err = Policy(tx); err != nil {
		return nil, err
	}
	if b.Parts, err = tx.LivePartitions(); err != nil {
		return nil, err
	}
	if b.Line, err = tx.WaitingRequests(); err != nil {
		return nil, err
	}
	if len(b.Line) > 0 || policy.CapsGroupHours(b.Pol) {
		b.Usage, err = tx.UserUsages() // the line's order; a group's members (Held)
	}
	return b, err
}

// inventories is every host's GPUs, by host: a ledger many hosts share
// keeps each host's inventory; a file keeps its own host's, under "".
func inventories(tx *storage.Tx, here string) (map[string]domain.Inventory, error) {
	invs, err := tx.HostInventories()
	if err != nil {
		return nil, err
	}
	inv, ok, err := tx.HostInventory(here)
	if ok {
		invs[here] = inv
	}
	return invs, err
}

// waiterAlive says whether a request's waiting process may still run.
// Only a process of this machine is looked up (see fateOfProcess): one of
// another host is left waiting, for that host's monitor and waiters to
// look after. Only root looks up another user's (see keepsRecordsOf):
// hidden from this process, it would look gone.
func waiterAlive(r domain.Request) bool {
	if r.Waiter.PID <= 0 || !proc.KeepsRecordsOf(proc.RealRoot(), r.UID) {
		return true
	}
	f := proc.FateOfProcess(r.Waiter)
	return f != proc.ProcessGone && f != proc.ProcessRebooted
}
