package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Usage is charged at the end for the time held, decays by half each
// half-life, and orders fair share: F = 0.5 at one's share of the machine.
func TestUsageChargedForTimeHeld(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testUsageChargedForTimeHeld)
}

func testUsageChargedForTimeHeld(t *testing.T, open storetest.Opener) {
	clk := coretest.NewFakeClock()
	a, r := servicetest.ClientOn(open(), clk, coretest.Alice), servicetest.ClientOn(open(), clk, coretest.Root)
	_, err := r.SetPolicy([]string{"halflife=1d"})
	require.NoError(t, err)
	p, err := a.Create(servicetest.Half(0, 2*time.Hour))
	require.NoError(t, err)
	clk.Advance(time.Hour)
	users, err := Usage(a)
	require.NoError(t, err)
	require.Len(t, users, 1)
	require.InDelta(t, 0.5, users[0].Usage, 1e-9, "a running booking counts what it has held")
	require.InDelta(t, 0.5, users[0].GPUs, 1e-9)
	require.NoError(t, p.Release())
	clk.Advance(24 * time.Hour)
	users, err = Usage(a)
	require.NoError(t, err)
	require.InDelta(t, 0.25, users[0].Usage, 1e-9, "charged 0.5 GPU-hours at release, halved a day later")
	require.InDelta(t, 0.5, users[0].Hours7d, 1e-9)
	require.Zero(t, users[0].GPUs)

	// At an equal share: two GPUs used for ever at the rate that keeps
	// usage steady is u = 1, F = 0.5.
	steady := 2 * (24 * time.Hour).Seconds() / 0.6931471805599453
	require.InDelta(t, 0.5, admission.FairShare(steady, 2, 24*time.Hour, 1), 1e-12)
	require.InDelta(t, 1.0, admission.Priority(0.5, 12*time.Hour, policy.Default()), 1e-12, "half the full age weight after half of max-age")
}
