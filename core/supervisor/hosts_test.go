package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Hosts sharing a ledger book their own GPUs by index and each other's as
// host:index; admission counts each host's GPU 0 apart.
func TestHostsShareALedger(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testHostsShareALedger)
}

func testHostsShareALedger(t *testing.T, open storetest.Opener) {
	s := open()
	g1 := core.NewClient(core.Options{Ledger: s, Devices: servicetest.Devices, As: &coretest.Alice, Host: "gpu1"})
	g2 := core.NewClient(core.Options{Ledger: open(), Devices: servicetest.Devices, As: &coretest.Bob, Host: "gpu2"})

	p, err := g1.Create(core.Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "gpu1", p.Host)
	q, err := g2.Create(core.Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err, "gpu2's GPU 0 is another GPU")
	require.Equal(t, "gpu2", q.Host)

	// From gpu2, gpu1's GPU 0 by name.
	_, err = g2.Create(core.Request{Host: "gpu1", Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "GPU gpu1:0 has 40% (32.0 GiB) free")
	r, err := g2.Create(core.Request{Host: "gpu1", Device: 0, Memory: human.Fraction(0.4), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "gpu1", r.Host)
	require.Equal(t, coretest.Bob.UID, r.UID)
	// Its own name is the same as no name.
	own, err := g2.Create(core.Request{Host: "gpu2", Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour})
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
	_, err = g1.Create(core.Request{Host: "gpu9", Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrNoDevice)
	require.ErrorContains(t, err, "no GPUs of host gpu9 are known")
	_, err = g1.Create(core.Request{Host: "gpu2", Device: 7, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrNoDevice)

	// chronos run starts its command here: another host's GPU is refused,
	// by booking or by name, and nothing is written.
	_, err = Run(context.Background(), g2, RunOptions{Command: []string{"true"}, Partition: r.ID})
	require.ErrorIs(t, err, domain.ErrOtherHost)
	require.ErrorContains(t, err, "booking 3 is on gpu1")
	_, err = Run(context.Background(), g2, RunOptions{Command: []string{"true"}, Request: core.Request{Host: "gpu1", Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour}})
	require.ErrorIs(t, err, domain.ErrOtherHost)
	require.ErrorContains(t, err, "run it on gpu1")
	require.Equal(t, before, storetest.Fingerprint(t, s))
}
