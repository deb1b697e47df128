package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// One release frees room for more waiting requests than one transaction
// may grant (etcd takes at most 128 operations in one): the release grants
// what fits in its transaction and the releasing process places the rest,
// a transaction at a time, so that all are booked when it returns.
func TestPlacementOverManyTransactions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testPlacementOverManyTransactions)
}

func testPlacementOverManyTransactions(t *testing.T, open storetest.Opener) {
	const n = 80 // 80 grants write 400 keys, over 4 transactions' worth
	require.Greater(t, n*admission.GrantWrites, 3*storage.WriteBudget)
	r, a := clientOn(open(), nil, coretest.Root), clientOn(open(), nil, coretest.Alice)
	hold, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	for range n {
		p, _, err := a.Enqueue(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}, admission.WaitOptions{})
		require.NoError(t, err)
		require.Nil(t, p)
	}
	_, err = r.Release(hold.ID)
	require.NoError(t, err)
	line, err := r.Queue()
	require.NoError(t, err)
	require.Empty(t, line, "every request was placed by the time the release returned")
	parts, err := r.List(false)
	require.NoError(t, err)
	require.Len(t, parts, n)
	var sum int64
	for _, p := range parts {
		require.Equal(t, coretest.Alice.UID, p.UID)
		sum += p.SharePPM
	}
	require.LessOrEqual(t, sum, int64(human.Ppm))
}

// Two hosts share an etcd ledger; requests for each host's GPU 0 come
// interleaved. Each (host, GPU) is booked up to 100% and never over, each
// GPU's line is granted in fair-share order, and a user's quota counts
// what they hold on both hosts.
func TestTwoHostsShareTheLine(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	on := map[string]map[int]*Client{} // host, uid: client
	for _, host := range []string{"gpu1", "gpu2"} {
		on[host] = map[int]*Client{}
		for _, who := range []domain.Identity{coretest.Root, coretest.Alice, coretest.Bob} {
			on[host][who.UID] = hostClient(open(), host, who)
		}
	}
	admin := on["gpu1"][coretest.Root.UID]
	_, err := admin.SetPolicy([]string{"user-gpus=1"})
	require.NoError(t, err)
	_, err = admin.SetPolicy([]string{"exempt=yes", "for=root"})
	require.NoError(t, err)
	require.NoError(t, open().Update(context.Background(), func(tx *storage.Tx) error { // bob has used much: alice goes first
		return tx.PutUserUsage(domain.UserUsage{UID: coretest.Bob.UID, User: "bob", GPUSeconds: 500 * 3600, At: clock.System().Now()})
	}))
	var holds []uint64
	for _, host := range []string{"gpu1", "gpu2"} {
		p, err := on[host][coretest.Root.UID].Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
		require.NoError(t, err)
		holds = append(holds, p.ID)
	}

	// Eight requests of half a GPU, interleaved: alice and bob by turns,
	// for gpu1:0 and gpu2:0 by pairs; each asked from the other host.
	type asked struct {
		id   uint64
		host string
		uid  int
	}
	var all []asked
	for i := range 8 {
		host, from := []string{"gpu1", "gpu2"}[i/2%2], []string{"gpu2", "gpu1"}[i/2%2]
		who := []domain.Identity{coretest.Alice, coretest.Bob}[i%2]
		p, q, err := on[from][who.UID].Enqueue(Request{Host: host, Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
		require.NoError(t, err)
		require.Nil(t, p)
		require.Equal(t, host, q.Host)
		all = append(all, asked{q.ID, host, who.UID})
	}
	for i, id := range holds {
		_, err := on[[]string{"gpu1", "gpu2"}[i]][coretest.Root.UID].Release(id)
		require.NoError(t, err)
	}

	// Alice, ahead in line, got half of each host's GPU 0: one GPU in
	// all, her quota, so her next two wait although each GPU had room
	// (counted per host, she would have had it all). Bob got the other
	// halves: they end as her quota frees.
	parts, err := admin.List(false)
	require.NoError(t, err)
	held := map[string]int64{}
	byUser := map[int]int64{}
	for _, p := range parts {
		require.Equal(t, 0, p.Device)
		held[p.Host] += p.SharePPM
		byUser[p.UID] += p.SharePPM
	}
	require.Equal(t, map[string]int64{"gpu1": human.Ppm, "gpu2": human.Ppm}, held, "each host's GPU 0 full, neither over")
	require.Equal(t, map[int]int64{coretest.Alice.UID: human.Ppm, coretest.Bob.UID: human.Ppm}, byUser)
	granted := map[uint64]bool{}
	for _, p := range parts {
		granted[p.Request] = true
	}
	for i, a := range all {
		require.Equal(t, i < 4, granted[a.id], "request %d (%s of %s:0)", i, map[int]string{coretest.Alice.UID: "alice's", coretest.Bob.UID: "bob's"}[a.uid], a.host)
	}

	// What is left waits in fair-share order: alice's first.
	line, err := on["gpu2"][coretest.Bob.UID].Queue()
	require.NoError(t, err)
	var ids []uint64
	for _, e := range line {
		ids = append(ids, e.ID)
	}
	require.Equal(t, []uint64{all[4].id, all[6].id, all[5].id, all[7].id}, ids)
}

// A waiter is looked up only by a process of its own machine: a request
// whose waiting process was of another machine stays in line whatever
// this machine's /proc says of its pid, for that machine to look after.
func TestOtherMachinesWaitersAreLeftAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testOtherMachinesWaitersAreLeftAlone)
}

func testOtherMachinesWaitersAreLeftAlone(t *testing.T, open storetest.Opener) {
	r, a := clientOn(open(), nil, coretest.Root), clientOn(open(), nil, coretest.Alice)
	_, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	_, q, err := a.Enqueue(half(0, time.Hour), admission.WaitOptions{})
	require.NoError(t, err)
	_, gone, err := a.Enqueue(half(0, time.Hour), admission.WaitOptions{})
	require.NoError(t, err)
	require.NoError(t, open().Update(context.Background(), func(tx *storage.Tx) error {
		req, err := tx.Request(q.ID)
		if err != nil {
			return err
		}
		req.Waiter.Host, req.Waiter.PID = "another-machine", 1<<22-1 // no such pid here
		if err := tx.PutRequest(&req); err != nil {
			return err
		}
		if req, err = tx.Request(gone.ID); err != nil {
			return err
		}
		req.Waiter.PID = 1<<22 - 1 // of this machine, and gone
		return tx.PutRequest(&req)
	}))
	_, err = r.TendLine()
	require.NoError(t, err)
	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1, "this machine's gone waiter left; the other machine's stays")
	require.Equal(t, q.ID, line[0].ID)
}
