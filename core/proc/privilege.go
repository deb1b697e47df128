package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Only root keeps other users' records (releases a booking whose `chronos
// run` is gone, drops a request whose waiting process is gone, reclaims an
// idle booking): any other process may see another user's processes as gone
// when they run. It may be in a user, pid or mount namespace of its own with
// another boot id, or /proc may be mounted hidepid=2, so its view of /proc
// says nothing of other users' processes. Every process keeps its own user's
// records, as seen from its own view, as before.

// RealRoot reports whether this process is the host's superuser: effective
// uid 0 in the initial user namespace. Inside `unshare -r` (or a rootless
// container) the effective uid is 0 too, but only over the namespace its
// member made: that is not root. Only the initial namespace maps every uid
// to itself (uid_map "0 0 4294967295"); where /proc cannot say, the answer
// is no.
func RealRoot() bool { return realRoot() }

var realRoot = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	ranges, err := uidMap()
	return err == nil && len(ranges) == 1 && ranges[0] == (uidRange{inside: 0, outside: 0, count: 1<<32 - 1})
})

// HostUID is this process's uid as the host's users know it: the uid its
// user namespace maps it to (the member who ran `unshare -r`, not 0), or
// its uid where the map cannot be read.
var HostUID = sync.OnceValue(func() int {
	uid := os.Getuid()
	ranges, err := uidMap()
	if err != nil {
		return uid
	}
	for _, r := range ranges {
		if u := uint64(uid); u >= r.inside && u < r.inside+r.count {
			return int(r.outside + u - r.inside)
		}
	}
	return uid
})

// KeepsRecordsOf says whether a process keeps uid's records from its own
// view of processes: root (as root says: RealRoot, or a monitor told so)
// keeps everyone's; any other process its own user's only.
func KeepsRecordsOf(root bool, uid int) bool { return root || uid == HostUID() }

// uidRange is one line of /proc/self/uid_map: count uids from inside (in
// this process's namespace) are outside.. in its parent's.
type uidRange struct{ inside, outside, count uint64 }

func uidMap() ([]uidRange, error) {
	f, err := os.Open("/proc/self/uid_map")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []uidRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		var n [3]uint64
		for i, s := range fields {
			if n[i], err = strconv.ParseUint(s, 10, 64); err != nil {
				return nil, err
			}
		}
		out = append(out, uidRange{inside: n[0], outside: n[1], count: n[2]})
	}
	return out, sc.Err()
}
