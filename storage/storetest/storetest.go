// Package storetest gives tests a fresh ledger on each storage engine — a
// bbolt file in a temporary directory and a prefix of a real etcd server —
// so that the same test runs on both.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// Opener returns a new handle on one ledger each call, as another process
// would open it.
type Opener func() storage.Store

// Each runs fn as a subtest per engine, side by side (t.Parallel), each
// with a fresh, empty ledger. The etcd subtest uses the test binary's
// shared etcd server (TestMain should call etcdtest.StopShared) and skips
// only when no etcd server can be had.
func Each(t *testing.T, fn func(t *testing.T, open Opener)) {
	t.Helper()
	t.Run("bbolt", func(t *testing.T) {
		t.Parallel()
		fn(t, Bolt(t))
	})
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		fn(t, Etcd(t, etcdtest.Shared(t)))
	})
}

// Bolt is a new ledger file in a temporary directory.
func Bolt(t testing.TB) Opener {
	path := filepath.Join(t.TempDir(), "chronos.db")
	return func() storage.Store { return bolt.New(path) }
}

// Etcd is a new ledger on the cluster, under a prefix of its own. Handles
// are closed when the test ends.
func Etcd(t testing.TB, c *etcdtest.Cluster) Opener {
	cfg := etcd.Config{Endpoints: c.Endpoints(), Prefix: NewPrefix()}
	return func() storage.Store {
		s, err := etcd.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

// NewPrefix is a key prefix no other test uses.
func NewPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "/test-" + hex.EncodeToString(b)
}

// Fingerprint identifies a ledger's whole content: two equal fingerprints
// mean nothing was written between. For a file it is the file's bytes; for
// etcd, every key under the prefix with the revision that last changed it.
func Fingerprint(t testing.TB, s storage.Store) string {
	t.Helper()
	switch s := s.(type) {
	case *bolt.Ledger:
		b, err := os.ReadFile(s.Path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	case *etcd.Store:
		resp, err := s.Client().Get(context.Background(), s.Prefix()+"/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, kv := range resp.Kvs {
			fmt.Fprintf(&out, "%q=%q@%d\n", kv.Key, kv.Value, kv.ModRevision)
		}
		return out.String()
	}
	t.Fatalf("storetest: unknown store %T", s)
	return ""
}
