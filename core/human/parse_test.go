package human

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// The GPUs of one booking are one host's: a list naming another host's
// GPU among this host's is refused, and a host's list reads whole.
func TestParseGPUsOfOneHost(t *testing.T) {
	t.Parallel()
	host, devs, err := ParseGPUs("gpu3:0-3")
	require.NoError(t, err)
	require.Equal(t, "gpu3", host)
	require.Equal(t, []int{0, 1, 2, 3}, devs)
	_, _, err = ParseGPUs("0,gpu3:1")
	require.ErrorIs(t, err, domain.ErrInput)
	require.ErrorContains(t, err, "name GPUs as INDEX, a list (0,1 or 0-3) or HOST:INDEX")
	_, _, err = ParseGPUs("0,0")
	require.ErrorContains(t, err, "GPU 0 is named twice")
	_, devs, err = ParseGPUs("any")
	require.NoError(t, err)
	require.Equal(t, []int{domain.AnyDevice}, devs)
	require.Equal(t, "0-3", FormatGPUs("", []int{0, 1, 2, 3}))
	require.Equal(t, "gpu3:0,2", FormatGPUs("gpu3", []int{0, 2}))
}
