package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Claim keys are stored in the ledger: monitors and chronos runs of every
// version must build the same key for the same act on the same process.
func TestClaimKeys(t *testing.T) {
	t.Parallel()
	require.Equal(t, "term/4242/987654", claimKey(claimTerm, 4242, 987654))
	require.Equal(t, "kill/4242/987654", claimKey(claimKill, 4242, 987654))
	require.Equal(t, "warn/overbudget/1/2", claimKey(claimWarnOverBudget, 1, 2))
	require.Equal(t, "warn/unbooked/1/2", claimKey(claimWarnUnbooked, 1, 2))
	require.True(t, claimTerm.is(claimKey(claimTerm, 1, 2)))
	require.False(t, claimTerm.is(claimKey(claimKill, 1, 2)))
	require.False(t, claimKill.is("killjoy/1/2"))
}
