package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// hostClient is a client acting as host on a ledger many hosts share.
func hostClient(s storage.Store, host string, who domain.Identity) *Client {
	return NewClient(Options{Ledger: s, Devices: testDevices, As: &who, Host: host})
}

// A ledger file is one host's: it knows no other host, and its own name
// means itself.
func TestLedgerFileHasNoOtherHosts(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil, coretest.Alice)
	_, err := c.Create(Request{Host: "gpu9", Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrNoDevice)
	require.ErrorContains(t, err, "this host's alone")
	p, err := c.Create(Request{Host: setup.HostName(), Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	require.Empty(t, p.Host, "a file's bookings carry no host")
}

// On a ledger many hosts share, a client given no host name is this host,
// so that every process here books this host's GPUs under one name: a
// library user and the command line never each get a GPU 0 of their own.
func TestUnnamedClientIsThisHost(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	lib := clientOn(open(), nil, coretest.Alice)
	require.Equal(t, setup.HostName(), lib.Host())
	cli := hostClient(open(), setup.HostName(), coretest.Bob)
	_, err := lib.Create(Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	_, err = cli.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
}
