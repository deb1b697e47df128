package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// The audit trail says who acted and why for what the line does: a grant
// is bob's booking, made from his request, placed by whoever freed the
// room (it read "created #2 by alice … for bob"); a waiter's own --timeout
// is his leaving, placed by whoever tended the line (it read "left by
// root").
func TestLineEventsSayWhoAndWhy(t *testing.T) { storetest.Each(t, testLineEventsSayWhoAndWhy) }

func testLineEventsSayWhoAndWhy(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, b := l.as(coretest.Alice), l.as(coretest.Bob)
	held, err := a.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	_, waits, err := b.Enqueue(half(0, time.Hour), admission.WaitOptions{})
	require.NoError(t, err)
	_, brief, err := b.Enqueue(half(0, time.Hour), admission.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)

	l.clock.Advance(2 * time.Minute)
	_, err = l.as(coretest.Root).TendLine() // as root's monitor does
	require.NoError(t, err)
	left := l.events(t)
	last := left[len(left)-1]
	require.Equal(t, domain.EventLeft, last.Kind)
	require.Equal(t, "bob", last.User, "his own --timeout")
	require.Regexp(t, `^request `+strconv.FormatUint(brief.ID, 10)+` \(50% of GPU (\w+:)?0 for 1h.*\): waited 1m \(--timeout\); placed by root$`, last.Detail)

	_, err = a.Release(held.ID)
	require.NoError(t, err)
	evs := l.events(t)
	last = evs[len(evs)-1]
	require.Equal(t, domain.EventCreated, last.Kind)
	require.Equal(t, "bob", last.User, "bob's booking, made from his request")
	require.Regexp(t, `^50% \(40\.0 GiB\) of GPU (\w+:)?0 for 1h, granted from the line \(request `+strconv.FormatUint(waits.ID, 10)+
		`, after 2m in line; placed by alice\)$`, last.Detail)
}
