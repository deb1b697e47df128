package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

func TestFormatEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    domain.Event
		want string
	}{
		{domain.Event{Kind: domain.EventCreated, Partition: 3, User: "alice", Detail: "50% (40.0 GiB) of GPU 0 for 1h"},
			"created    #3 by alice: 50% (40.0 GiB) of GPU 0 for 1h"},
		{domain.Event{Kind: domain.EventReleased, Partition: 3, User: "alice"}, "released   #3 by alice"},
		{domain.Event{Kind: domain.EventUnbooked, User: "root", Process: &domain.EventProcess{PID: 4242, UID: 1003, User: "carol"},
			Detail: "python x.py uses 34.0 GiB on GPU 1 with no booking"},
			"unbooked   carol's pid 4242: python x.py uses 34.0 GiB on GPU 1 with no booking (recorded by root)"},
		{domain.Event{Kind: domain.EventSignalled, Partition: 7, User: "root", Process: &domain.EventProcess{PID: 9, UID: 1001, User: "alice"},
			Detail: "SIGTERM to python: booking #7 expired"},
			"signalled  #7 alice's pid 9: SIGTERM to python: booking #7 expired (recorded by root)"},
	} {
		require.Equal(t, tc.want, human.FormatEvent(tc.e))
	}
}
