package tui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
)

// The command the app leaves waiting in the background asks for what the
// request asked: the same GPUs, as `create` reads them back.
func TestWaitArgsAskForTheSameGPUs(t *testing.T) {
	t.Parallel()
	for _, r := range []domain.Request{
		{ID: 7, Device: 1, SharePPM: 500_000, Duration: time.Hour},
		{ID: 7, Device: 0, Devices: []int{0, 1, 2, 3}, SharePPM: 500_000, Duration: time.Hour},
		{ID: 7, Host: "gpu3", Device: 0, Devices: []int{0, 2}, SharePPM: 500_000, Duration: time.Hour},
		{ID: 7, Device: domain.AnyDevice, Count: 4, SharePPM: 1_000_000, Duration: 8 * time.Hour},
	} {
		args := waitArgs(r)
		got, err := core.ParseRequest(args[1], args[2], args[3], "")
		require.NoError(t, err, args)
		if len(args) > 8 {
			require.Equal(t, []string{"--gpus"}, args[7:8])
			got.Count = r.Count
		}
		require.Equal(t, r.Host, got.Host, args)
		require.Equal(t, r.Device, got.Device, args)
		require.Equal(t, r.Devices, got.Devices, args)
		require.Equal(t, r.Count, got.Count, args)
		require.Equal(t, r.Duration, got.Duration, args)
	}
}
