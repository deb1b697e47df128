package etcd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// openTLS opens the ledger under prefix with the TLS files given as
// --cacert, --cert and --key would give them.
func openTLS(t *testing.T, c *etcdtest.Cluster, prefix, cacert, cert, key string) *Store {
	t.Helper()
	tc, err := TLSConfig(cacert, cert, key)
	require.NoError(t, err)
	s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: prefix, TLS: tc})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A TLS mistake is named as one, with the flags that mend it, at once
// rather than after the timeout as if etcd did not answer; and nothing is
// written. The right files work.
func TestTLSMistakesAreNamed(t *testing.T) {
	t.Parallel()
	certs, err := etcdtest.NewCerts(t.TempDir())
	require.NoError(t, err)
	other, err := etcdtest.NewCerts(t.TempDir())
	require.NoError(t, err)
	c := etcdtest.StartTLS(t, certs, true)

	right := openTLS(t, c, "/tls", certs.CA, certs.ClientCert, certs.ClientKey)
	id, err := addBooking(right)
	require.NoError(t, err)
	require.NoError(t, right.View(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(id)
		require.NoError(t, err)
		require.EqualValues(t, 1000, p.SharePPM)
		return nil
	}))

	for _, tc := range []struct {
		name, cacert, cert, key string
		want                    []string
	}{
		{"no client certificate", certs.CA, "", "", []string{"asks for a client certificate", "give --cert and --key"}},
		{"a client certificate of another CA", certs.CA, other.ClientCert, other.ClientKey, []string{"refused this client's certificate", "--trusted-ca-file"}},
		{"the wrong CA", other.CA, certs.ClientCert, certs.ClientKey, []string{"the CA given by --cacert did not sign", "give --cacert"}},
		{"no CA", "", certs.ClientCert, certs.ClientKey, []string{"a CA this host does not trust", "give --cacert"}},
		{"no TLS", "", "", "", []string{"serves TLS and this client does not use it", "give --cacert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTLS(t, c, "/tls", tc.cacert, tc.cert, tc.key)
			_, err := addBooking(s)
			require.ErrorIs(t, err, ErrTLS)
			require.ErrorIs(t, err, storage.ErrUnavailable)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.ErrorContains(t, err, "nothing was written")
			// Named at once, not found out at the timeout: an operation that
			// ran into the timeout says it "did not answer".
			require.NotContains(t, err.Error(), "did not answer")
			err = s.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
			require.ErrorIs(t, err, ErrTLS, "reads too")
		})
	}
	require.Equal(t, 1, requireWhole(t, right), "nothing was written")
}

// TLS files given for an etcd that serves plain TCP: said so.
func TestTLSToAPlainMember(t *testing.T) {
	t.Parallel()
	certs, err := etcdtest.NewCerts(t.TempDir())
	require.NoError(t, err)
	s := openTLS(t, etcdtest.Shared(t), "/tls-to-plain", certs.CA, certs.ClientCert, certs.ClientKey)
	_, err = addBooking(s)
	require.ErrorIs(t, err, ErrTLS)
	require.ErrorContains(t, err, "does not speak TLS")
	require.ErrorContains(t, err, "drop --cacert, --cert and --key")
}
