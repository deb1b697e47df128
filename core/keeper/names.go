package keeper

import (
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/proc"
)

// nameTTL is how long the keeper uses a login name it looked up: a
// renamed login shows after it.
const nameTTL = time.Minute

// names remembers callers' login names by uid. Looking one up reads the
// user database through NSS (a third of a millisecond), and the keeper
// names the caller in each request, and in each refusal its accepting
// loop writes: under a member's flood those lookups were most of that
// loop's time, and everyone's connections queued behind it.
type names struct {
	mu   sync.Mutex
	seen map[int]namedAt
}

type namedAt struct {
	name string
	at   time.Time
}

// maxNames bounds the uids remembered.
const maxNames = 4096

// of is uid's login name (its number where it has none).
func (n *names) of(uid int) string {
	now := clock.Kernel.Now() // freshness of a cache, not a time of the books
	n.mu.Lock()
	got, ok := n.seen[uid]
	n.mu.Unlock()
	if ok && now.Sub(got.at) < nameTTL {
		return got.name
	}
	name := proc.UserName(uid)
	n.mu.Lock()
	if n.seen == nil || len(n.seen) >= maxNames {
		n.seen = map[int]namedAt{}
	}
	n.seen[uid] = namedAt{name: name, at: now}
	n.mu.Unlock()
	return name
}
