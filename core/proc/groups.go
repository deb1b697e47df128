package proc

import (
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
)

// GroupsOf is the names of the groups uid belongs to; none when it has no
// account here. They are kept for a minute: a waiter lays the line out
// every second or so, each layout asks for every waiting user's groups
// when the policy has group settings, and the lookups may go to LDAP.
func GroupsOf(uid int) []string {
	now := clock.Kernel.Now() // a cache of the system's answers, not a time of the books
	KnownGroups.Lock()
	defer KnownGroups.Unlock()
	if g, ok := KnownGroups.Of[uid]; ok && now.Sub(g.At) < groupsKept {
		return g.Names
	}
	if KnownGroups.Of == nil {
		KnownGroups.Of = map[int]GroupsAt{}
	}
	names := lookupGroupsOf(uid)
	KnownGroups.Of[uid] = GroupsAt{names, now}
	return names
}

const groupsKept = time.Minute

type GroupsAt struct {
	Names []string
	At    time.Time
}

var KnownGroups struct {
	sync.Mutex
	Of map[int]GroupsAt
}

func lookupGroupsOf(uid int) []string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			names = append(names, g.Name)
		}
	}
	return names
}

func LookupGroup(name string) (*user.Group, error) { return user.LookupGroup(name) }
