package core

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage"
)

func TestLadderPolicy(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil, coretest.Root)
	c.notify = filepath.Join(t.TempDir(), "etc", "notify")
	p, err := c.SetPolicy([]string{"reclaim=always", "idle=90m", "idle-warn=30m,1h", "idle-sm=10%", "idle-start=5m", "hold-max=2h",
		"notify-url=https://hooks.slack.com/services/T0/B0/XyZ"})
	require.NoError(t, err)
	require.Equal(t, policy.ReclaimAlways, p.Reclaim)
	require.Equal(t, 90*time.Minute, p.Idle)
	require.Equal(t, []time.Duration{30 * time.Minute, time.Hour}, p.IdleWarn)
	require.Equal(t, 10, p.IdleSM)
	require.Equal(t, "https://hooks.slack.com/services/T0/B0/XyZ", p.NotifyURL, "the URL keeps its case")
	require.Contains(t, policy.Format(p), "reclaim=always idle=1h30m idle-warn=30m,1h idle-sm=10% idle-start=5m hold-max=2h notify-url=https://hooks.slack.com/services/T0/B0/XyZ")
	stored, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, p, stored)

	for _, bad := range [][]string{{"idle-warn=2h"}, {"idle-warn=1h,30m"}, {"idle=30s"}, {"idle-sm=0"}, {"reclaim=sometimes"},
		{"notify-url=ftp://example.com"}, {"notify-url=hooks.slack.com"}, {"hold-max=0"}} {
		_, err := c.SetPolicy(bad)
		require.ErrorIs(t, err, domain.ErrInput, "%v", bad)
	}
	for _, bad := range []string{"150%", "0", "lots"} {
		_, err := c.SetPolicy([]string{"idle-sm=" + bad})
		require.EqualError(t, err, "idle-sm "+human.Quote(bad)+": the SM activity under which a minute counts as idle is a percent from 1% to 100%, like 5%", "a utilization threshold, not a compute share")
	}
	again, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, p, again, "refused settings change nothing")

	p, err = c.SetPolicy([]string{"idle-warn=none", "notify-url=off"})
	require.NoError(t, err)
	require.Empty(t, p.IdleWarn)
	require.Empty(t, p.NotifyURL)
	require.Contains(t, policy.Format(p), "idle-warn=none")

	_, err = newTestClient(t, nil, coretest.Alice).SetPolicy([]string{"reclaim=always"})
	require.ErrorIs(t, err, domain.ErrNotRoot)
}

// A policy stored before the ladder existed reads with the ladder's
// defaults, off.
func TestPolicyFromBeforeTheLadder(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil, coretest.Root)
	old := domain.Policy{Expiry: policy.ActNotify, OverBudget: policy.ActWarn, Unbooked: policy.ActOff, Grace: time.Second, WarnLead: time.Minute, MaxLength: time.Hour}
	require.NoError(t, c.Ledger().Update(context.Background(), func(tx *storage.Tx) error { return tx.PutPolicy(old) }))
	p, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, policy.ActNotify, p.Expiry)
	require.Equal(t, policy.ReclaimOff, p.Reclaim)
	require.Equal(t, policy.Default().IdleWarn, p.IdleWarn)
	require.Equal(t, 4*time.Hour, p.HoldMax)
}

func TestSplitPolicy(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"expiry=notify", "grace=5s", "idle-warn=1h,1h45m", "idle=2h"}, policy.Split("expiry=notify,grace=5s  idle-warn=1h,1h45m,idle=2h"))
	require.Empty(t, policy.Split("  "))
}
