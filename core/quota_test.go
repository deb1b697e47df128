package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Quota refusals say their figures as they are: a small quota's GPU-hours
// do not round to 0.0, and one GPU is "1 GPU".
func TestQuotaFiguresReadRight(t *testing.T) {
	t.Parallel()
	for h, want := range map[float64]string{
		0: "0.0", 3: "3.0", 1.25: "1.25", 16.875: "16.88", 0.1: "0.1", // 25% for 5h is 1.25
		0.01:      "0.01",   // 36 GPU-seconds
		0.0125:    "0.013",  // two significant digits
		0.0027778: "0.0028", // 1% of a GPU for 1 s would be 2.8e-6: see below
		0.04:      "0.04",
		0.05:      "0.05",
	} {
		require.Equal(t, want, admission.FormatGPUHours(h), "%v GPU-hours", h)
	}
	require.Equal(t, "0.0000028", admission.FormatGPUHours(0.01/3600))
	require.Equal(t, "1 GPU", admission.FormatGPUCount(human.Ppm))
	require.Equal(t, "0.5 GPUs", admission.FormatGPUCount(human.Ppm/2))
	require.Equal(t, "2 GPUs", admission.FormatGPUCount(2*human.Ppm))
}

// "any" over the user's quota is refused for the quota, not for the first
// GPU being full while the others have room (it blamed "free share on GPU
// 0" with GPUs 1–3 free).
func TestAnyOverQuotaNamesTheQuota(t *testing.T) { storetest.Each(t, testAnyOverQuotaNamesTheQuota) }

func testAnyOverQuotaNamesTheQuota(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	_, err := l.as(coretest.Root).SetPolicy([]string{"user-gpus=1"})
	require.NoError(t, err)
	a := l.as(coretest.Alice)
	_, err = a.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	_, err = a.Create(Request{Device: domain.AnyDevice, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrQuota)
	require.NotErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "user-gpus=1: you would hold 1.5 GPUs at once (1 already, 0.5 asked)")

	// Another user, within the quota, gets GPU 1.
	p, err := l.as(coretest.Bob).Create(Request{Device: domain.AnyDevice, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, p.Device)
}

// --wait holds to the policy's ahead as --at does: a request whose turn in
// line would come further ahead than ahead= is refused, not queued.
func TestWaitHoldsToAhead(t *testing.T) { storetest.Each(t, testWaitHoldsToAhead) }

func testWaitHoldsToAhead(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	_, err := l.as(coretest.Root).SetPolicy([]string{"ahead=2d", "max=7d"})
	require.NoError(t, err)
	_, err = l.as(coretest.Alice).Create(Request{Device: 0, Memory: human.Fraction(1), Duration: 3 * 24 * time.Hour})
	require.NoError(t, err)
	b := l.as(coretest.Bob)
	_, _, err = b.Enqueue(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.ErrorIs(t, err, domain.ErrTooFarAhead)
	require.ErrorContains(t, err, "it would wait in line until ")
	require.ErrorContains(t, err, "it would start in 3d, the furthest is 2d (ahead=2d)")
	q, err := b.Queue()
	require.NoError(t, err)
	require.Empty(t, q, "nothing queued")

	_, e, err := b.Enqueue(Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err, "GPU 1 is free: booked at once")
	require.Nil(t, e)
}
