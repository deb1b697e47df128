package core

import (
	"fmt"
	"strings"
)

// claimAct is what a claim reserves: one act on one exact process. Monitors
// and chronos run take the same claims before they act, so that whoever
// commits first acts and the others don't; the keys are stored in the
// ledger, so every version must build them alike.
type claimAct string

const (
	claimTerm           claimAct = "term" // SIGTERM
	claimKill           claimAct = "kill" // SIGKILL after the grace period
	claimWarnOverBudget claimAct = "warn/overbudget"
	claimWarnUnbooked   claimAct = "warn/unbooked"
)

// claimKey names act on the process pid that started at start (clock ticks
// since boot), so that a reused pid is a different process.
func claimKey(act claimAct, pid int, start uint64) string {
	return fmt.Sprintf("%s/%d/%d", act, pid, start)
}

// is reports whether key is a claim of this act.
func (act claimAct) is(key string) bool { return strings.HasPrefix(key, string(act)+"/") }
