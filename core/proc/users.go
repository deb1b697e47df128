package proc

import (
	"fmt"
	"os/user"
	"strconv"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// CurrentIdentity is the user running this process, as the host knows
// them: a member inside `unshare -r` is that member, not root.
func CurrentIdentity() domain.Identity {
	uid := HostUID()
	return domain.Identity{UID: uid, User: UserName(uid)}
}

// UserName returns the login name of uid, or the number when it has none.
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// LookupUser resolves a login name (or a numeric uid) to an identity.
func LookupUser(name string) (domain.Identity, error) {
	if u, err := user.Lookup(name); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		return domain.Identity{UID: uid, User: u.Username}, nil
	}
	if uid, err := strconv.Atoi(name); err == nil && uid >= 0 {
		return domain.Identity{UID: uid, User: UserName(uid)}, nil
	}
	return domain.Identity{}, fmt.Errorf("%w: %s", domain.ErrUnknownUser, human.Quote(name))
}
