package supervisor

import (
	"context"
	"syscall"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
)

// RunWriter makes the writes of a `chronos run`: the ledger itself (a
// Client), or, for a member of a guarded ledger, root's keeper, which
// makes them as that member and names the wrapper from the kernel's word.
type RunWriter interface {
	BookOrWait(ctx context.Context, req core.Request, wait *admission.WaitOptions, joined, onChange func(admission.QueueEntry)) (*core.Partition, error)
	Release(id uint64) (core.Partition, error)
	// RecordWrapper records this process as the wrapper of booking id,
	// whose command leads process group group.
	RecordWrapper(id uint64, group int) error
	// ClaimSignal takes the claim to send sig (SIGTERM or SIGKILL) to the
	// command of booking id, process group group whose leader started at
	// start, and reports whether this caller got it (see claimSignal).
	ClaimSignal(id uint64, sig syscall.Signal, group int, start uint64, detail string) (bool, error)
}
