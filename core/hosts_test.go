package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// hostClient is a client acting as host on a ledger many hosts share.
func hostClient(s storage.Store, host string, who Identity) *Client {
	return NewClient(Options{Ledger: s, Devices: testDevices, As: &who, Host: host})
}

// Hosts sharing a ledger book their own GPUs by index and each other's as
// host:index; admission counts each host's GPU 0 apart.
func TestHostsShareALedger(t *testing.T) { storetest.Each(t, testHostsShareALedger) }

func testHostsShareALedger(t *testing.T, open storetest.Opener) {
	s := open()
	g1 := hostClient(s, "gpu1", alice)
	g2 := hostClient(open(), "gpu2", bob)

	p, err := g1.Create(Request{Device: 0, Memory: Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "gpu1", p.Host)
	q, err := g2.Create(Request{Device: 0, Memory: Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err, "gpu2's GPU 0 is another GPU")
	require.Equal(t, "gpu2", q.Host)

	// From gpu2, gpu1's GPU 0 by name.
	_, err = g2.Create(Request{Host: "gpu1", Device: 0, Memory: Fraction(0.5), Duration: time.Hour})
	require.ErrorIs(t, err, ErrOverbooked)
	require.ErrorContains(t, err, "GPU gpu1:0 has 40% (32.0 GiB) free")
	r, err := g2.Create(Request{Host: "gpu1", Device: 0, Memory: Fraction(0.4), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "gpu1", r.Host)
	require.Equal(t, bob.UID, r.UID)
	// Its own name is the same as no name.
	own, err := g2.Create(Request{Host: "gpu2", Device: 1, Memory: Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "gpu2", own.Host)

	avail, err := g1.Available(0)
	require.NoError(t, err)
	require.Equal(t, int64(0), avail[0].FreePPM)
	require.Equal(t, 2, avail[0].Bookings)
	avail, err = g2.Available(0)
	require.NoError(t, err)
	require.Equal(t, int64(400_000), avail[0].FreePPM)

	evs, err := g1.Events(0, 0)
	require.NoError(t, err)
	require.Contains(t, evs[2].Detail, "of GPU gpu1:0", "the audit trail names the host")

	before := storetest.Fingerprint(t, s)
	_, err = g1.Create(Request{Host: "gpu9", Device: 0, Memory: Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, ErrNoDevice)
	require.ErrorContains(t, err, "no GPUs of host gpu9 are known")
	_, err = g1.Create(Request{Host: "gpu2", Device: 7, Memory: Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, ErrNoDevice)

	// chronos run starts its command here: another host's GPU is refused,
	// by booking or by name, and nothing is written.
	_, err = g2.Run(context.Background(), RunOptions{Command: []string{"true"}, Partition: r.ID})
	require.ErrorIs(t, err, ErrOtherHost)
	require.ErrorContains(t, err, "booking 3 is on gpu1")
	_, err = g2.Run(context.Background(), RunOptions{Command: []string{"true"}, Request: Request{Host: "gpu1", Device: 1, Memory: Fraction(0.1), Duration: time.Hour}})
	require.ErrorIs(t, err, ErrOtherHost)
	require.ErrorContains(t, err, "run it on gpu1")
	require.Equal(t, before, storetest.Fingerprint(t, s))
}

// A ledger file is one host's: it knows no other host, and its own name
// means itself.
func TestLedgerFileHasNoOtherHosts(t *testing.T) {
	c := newTestClient(t, nil, alice)
	_, err := c.Create(Request{Host: "gpu9", Device: 0, Memory: Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, ErrNoDevice)
	require.ErrorContains(t, err, "this host's alone")
	p, err := c.Create(Request{Host: HostName(), Device: 0, Memory: Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	require.Empty(t, p.Host, "a file's bookings carry no host")
}
