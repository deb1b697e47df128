package core

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage"
)

// `policy set notify-url=` writes root's notify file, not the ledger: the
// ledger's policy keeps no address (an old one is dropped), the audit
// event says where it went without the address (often a secret), `off`
// removes the file, and bad input changes nothing.
func TestSetPolicyWritesTheNotifyFile(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil, coretest.Root)
	c.notify = filepath.Join(t.TempDir(), "etc", "chronos", "notify")
	old := policy.Default()
	old.NotifyURL = "http://127.0.0.1:18080/redir"
	require.NoError(t, c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return tx.PutPolicy(old) }))

	const address = "https://hooks.slack.com/services/T0/B0/XyZ"
	p, err := c.SetPolicy([]string{"notify-url=" + address, "grace=10s"})
	require.NoError(t, err)
	require.Equal(t, address, p.NotifyURL)
	require.Equal(t, 10*time.Second, p.Grace)
	got, err := notice.ReadNotifyFile(c.notify)
	require.NoError(t, err)
	require.Equal(t, address, got)
	fi, err := os.Stat(c.notify)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a webhook address is often a secret")
	var stored domain.Policy
	require.NoError(t, c.ledger.View(c.ctx, func(tx *storage.Tx) error { stored, _, err = tx.Policy(); return err }))
	require.Empty(t, stored.NotifyURL, "the ledger keeps no webhook")
	evs, err := c.LastEvents(1)
	require.NoError(t, err)
	require.Contains(t, evs[0].Detail, "notify-url written to "+c.notify)
	require.NotContains(t, evs[0].Detail, "XyZ")
	shown, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, address, shown.NotifyURL)

	for _, bad := range [][]string{{"notify-url=file:///etc/passwd"}, {"notify-url=" + address + "/2", "grace=never"},
		{"notify-url=" + address + "/3", "for=alice"}} {
		_, err := c.SetPolicy(bad)
		require.ErrorIs(t, err, domain.ErrInput, "%v", bad)
		got, err := notice.ReadNotifyFile(c.notify)
		require.NoError(t, err)
		require.Equal(t, address, got, "%v changes nothing", bad)
	}

	p, err = c.SetPolicy([]string{"notify-url=off"})
	require.NoError(t, err)
	require.Empty(t, p.NotifyURL)
	require.NoFileExists(t, c.notify)
	require.Equal(t, 10*time.Second, p.Grace, "the rest stays")

	_, err = newTestClient(t, nil, coretest.Alice).SetPolicy([]string{"notify-url=" + address})
	require.ErrorIs(t, err, domain.ErrNotRoot)
}
