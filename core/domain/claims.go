package domain

import (
	"time"
)

// Claim records that one monitor took on one act (signalling a process,
// say), so that however many monitors run, each act is done once. A claim
// whose holder lacked permission is marked NeedsRoot: it waits for a monitor
// running as root to take it over.
type Claim struct {
	By        string    `json:"by"`
	At        time.Time `json:"at"`
	NeedsRoot bool      `json:"needs_root,omitempty"`
}
