package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Claim keys are stored in the ledger: monitors and chronos runs of every
// version must build the same key for the same act on the same process.
func TestClaimKeys(t *testing.T) {
	t.Parallel()
	require.Equal(t, "term/4242/987654", ClaimKey(ClaimTerm, 4242, 987654))
	require.Equal(t, "kill/4242/987654", ClaimKey(ClaimKill, 4242, 987654))
	require.Equal(t, "warn/overbudget/1/2", ClaimKey(ClaimWarnOverBudget, 1, 2))
	require.Equal(t, "warn/unbooked/1/2", ClaimKey(ClaimWarnUnbooked, 1, 2))
	require.True(t, ClaimTerm.Is(ClaimKey(ClaimTerm, 1, 2)))
	require.False(t, ClaimTerm.Is(ClaimKey(ClaimKill, 1, 2)))
	require.False(t, ClaimKill.Is("killjoy/1/2"))
}
