package monitor

import (
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
)

// Observer is told what a monitor does as it does it, for metrics:
// how long each pass took, the GPU reading it judged, and each signal it
// sent. Its methods run on the monitor's goroutine and must return at once.
type Observer interface {
	// Ticked: one pass over the ledger and the GPUs took this long.
	Ticked(took time.Duration)
	// Sampled: the latest reading of the GPUs, and each process set
	// against the bookings.
	Sampled(s gpu.Sample, atts []admission.Attribution)
	// Signalled: a signal reached a process; cause is why (expired,
	// overbudget or unbooked), a word from a small set.
	Signalled(sig syscall.Signal, cause domain.EventKind)
}

// unobserved is the observer of a monitor nobody watches.
type unobserved struct{}

func (unobserved) Ticked(time.Duration) {}

func (unobserved) Sampled(gpu.Sample, []admission.Attribution) {}

func (unobserved) Signalled(syscall.Signal, domain.EventKind) {}
