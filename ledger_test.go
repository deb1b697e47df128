package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
)

// The command layer picks the engine from the store's name: a path is a
// file, etcd://… a cluster; a name that looks like an etcd member is a
// mistake to point out, not a ledger file to create.
func TestOpenStorePicksTheEngine(t *testing.T) {
	t.Parallel()
	s, err := openStore(setup.StoreConfig{Store: filepath.Join(t.TempDir(), "c.db")})
	require.NoError(t, err)
	require.IsType(t, &bolt.Ledger{}, s)

	s, err = openStore(setup.StoreConfig{Store: "etcd://127.0.0.1:1/lab"})
	require.NoError(t, err, "etcd is not reached before the first transaction")
	require.IsType(t, &etcd.Store{}, s)
	require.NoError(t, s.(*etcd.Store).Close())

	for store, want := range map[string]string{
		"gpu1:2379":   `store "gpu1:2379": a ledger on etcd is written etcd://gpu1:2379`,
		"etcd://gpu1": `"gpu1": give each member as host:port`,
	} {
		_, err := openStore(setup.StoreConfig{Store: store})
		require.ErrorAs(t, err, new(usageError), store)
		require.ErrorContains(t, err, want)

		var out, errb bytes.Buffer
		code := execute(context.Background(), []string{"--store", store, "list"}, &out, &errb)
		require.Equal(t, exitUsage, code, store)
		require.Contains(t, errb.String(), want)
	}
}
