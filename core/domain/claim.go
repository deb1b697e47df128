package domain

import (
	"fmt"
	"strings"
)

// ClaimAct is what a claim reserves: one act on one exact process. Monitors
// and chronos run take the same claims before they act, so that whoever
// commits first acts and the others don't; the keys are stored in the
// ledger, so every version must build them alike.
type ClaimAct string

const (
	ClaimTerm           ClaimAct = "term" // SIGTERM
	ClaimKill           ClaimAct = "kill" // SIGKILL after the grace period
	ClaimWarnOverBudget ClaimAct = "warn/overbudget"
	ClaimWarnUnbooked   ClaimAct = "warn/unbooked"
)

// ClaimKey names act on the process pid that started at start (clock ticks
// since boot), so that a reused pid is a different process.
func ClaimKey(act ClaimAct, pid int, start uint64) string {
	return fmt.Sprintf("%s/%d/%d", act, pid, start)
}

// Is reports whether key is a claim of this act.
func (act ClaimAct) Is(key string) bool { return strings.HasPrefix(key, string(act)+"/") }
