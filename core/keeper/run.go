package keeper

import (
	"fmt"
	"syscall"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// A member's `chronos run` makes its writes through the keeper, each on a
// connection of its own: the booking (a create, waiting in line with
// --wait), then, once its command runs, the wrapper's record (OpWrapper),
// the claims of the signals at the deadline (OpSignal), and the release.
// No connection stays open while the command runs: should the run die,
// the wrapper the keeper recorded is gone, and root's monitor releases the
// booking once nothing of its command runs, as for any run.
//
// The keeper trusts neither the process nor the group the run names: the
// wrapper is the caller's process, from the kernel (SO_PEERCRED), and the
// group must be led by a child of it, so a member cannot tie a booking to
// another's processes. What the ledger says of the signal is the keeper's
// own words, from /proc.

// commandOf checks that process group group is led by a child of the
// caller's, a command it started, and returns its leader's lineage.
func commandOf(peer Peer, group int) (procfs.Lineage, error) {
	l, err := procfs.ProcLineage(group)
	if err != nil || l.Parent != peer.PID || l.Group != group {
		return procfs.Lineage{}, fmt.Errorf("%w: process group %d is not led by a command of the caller's (pid %d)", ErrRefused, group, peer.PID)
	}
	return l, nil
}

// recordRun records the caller's process as the wrapper of booking
// req.ID, whose command leads process group req.Group.
func recordRun(c *core.Client, peer Peer, req Request) error {
	if _, err := commandOf(peer, req.Group); err != nil {
		return err
	}
	p, err := proc.ThisProcess(peer.PID)
	if err != nil {
		return fmt.Errorf("name the caller's process %d: %w", peer.PID, err)
	}
	return c.SetWrapper(req.ID, domain.Wrapper{Process: p, Group: req.Group})
}

// claimRunSignal claims req.Signal for the caller's command, process group
// req.Group, of booking req.ID, as a run of the ledger's own does.
func claimRunSignal(c *core.Client, peer Peer, req Request) (bool, error) {
	sig := syscall.Signal(req.Signal)
	why := map[syscall.Signal]string{syscall.SIGTERM: fmt.Sprintf("booking #%d ended", req.ID), syscall.SIGKILL: "still running after SIGTERM"}[sig]
	if why == "" {
		return false, domain.InputErr("a run claims SIGTERM or SIGKILL, not signal %d", req.Signal)
	}
	l, err := commandOf(peer, req.Group)
	if err != nil {
		return false, err
	}
	return c.ClaimSignal(req.ID, sig, req.Group, l.Start, fmt.Sprintf("%s to %s (process group): %s", proc.SignalName(sig), l.Comm, why))
}
