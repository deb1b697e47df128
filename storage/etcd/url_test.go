package etcd

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in        string
		endpoints []string
		prefix    string
		bad       string
	}{
		{in: "etcd://gpu1:2379", endpoints: []string{"gpu1:2379"}},
		{in: "etcd://gpu1:2379,10.0.0.2:2379,[::1]:2379/lab/", endpoints: []string{"gpu1:2379", "10.0.0.2:2379", "[::1]:2379"}, prefix: "/lab"},
		{in: "gpu1:2379", bad: "does not start with etcd://"},
		{in: "etcd://", bad: "host:port"},
		{in: "etcd://gpu1", bad: "host:port"},
		{in: "etcd://gpu1:port", bad: "port must be a number"},
		{in: "etcd://gpu1:2379,,gpu2:2379", bad: "host:port"},
		{in: "etcd://:2379", bad: "host:port"},
	} {
		cfg, err := ParseURL(tc.in)
		if tc.bad != "" {
			require.ErrorIs(t, err, ErrURL, tc.in)
			require.ErrorContains(t, err, tc.bad, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.endpoints, cfg.Endpoints, tc.in)
		require.Equal(t, tc.prefix, cfg.Prefix, tc.in)
	}
}

func TestTLSConfigRefusesHalfAPair(t *testing.T) {
	t.Parallel()
	cfg, err := TLSConfig("", "", "")
	require.NoError(t, err)
	require.Nil(t, cfg, "no files: plain TCP")
	_, err = TLSConfig("", "client.pem", "")
	require.ErrorContains(t, err, "both --cert and --key")
	_, err = TLSConfig("/no/such/ca.pem", "", "")
	require.ErrorContains(t, err, "CA certificate")
}
