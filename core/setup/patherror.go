package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/chronos-gpu/chronos/core/proc"
)

// LedgerPathError is a ledger path that cannot be used, in plain words.
type LedgerPathError struct {
	Path, From string
	Err        *fs.PathError
}

func (e LedgerPathError) Unwrap() error { return e.Err }

// groupShutOut names the group that shares the first of the paths that
// exists (the one refused, else the ledger's, else its directory), when
// this process is not in it: a shared ledger's group.
func groupShutOut(paths ...string) (string, bool) {
	for _, p := range append(paths, filepath.Dir(paths[len(paths)-1])) {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok || sys.Gid == 0 || int(sys.Gid) == os.Getegid() {
			return "", false
		}
		if groups, err := os.Getgroups(); err == nil && slices.Contains(groups, int(sys.Gid)) {
			return "", false
		}
		g, err := user.LookupGroupId(strconv.Itoa(int(sys.Gid)))
		if err != nil {
			return "", false
		}
		return g.Name, true
	}
	return "", false
}

func (e LedgerPathError) Error() string {
	why := e.Err.Err.Error()
	switch {
	case errors.Is(e.Err, fs.ErrNotExist) && e.Err.Path == e.Path:
		why = "its directory " + filepath.Dir(e.Path) + " does not exist"
		if st, err := os.Stat(filepath.Dir(e.Path)); err == nil && st.IsDir() {
			why = "no file can be made in " + filepath.Dir(e.Path)
		}
	case errors.Is(e.Err, fs.ErrNotExist):
		why = e.Err.Path + " does not exist"
	case errors.Is(e.Err, syscall.ENOTDIR):
		why = "a part of the path is a file, not a directory"
	case errors.Is(e.Err, syscall.EISDIR):
		why = "it is a directory"
	case errors.Is(e.Err, syscall.EROFS):
		why = "it is on a read-only file system"
	case errors.Is(e.Err, fs.ErrPermission):
		me := proc.CurrentIdentity().User
		why = fmt.Sprintf("%s may not use %s (a shared ledger of a group you are not in?)", me, e.Err.Path)
		if _, err := os.Stat(e.Path); errors.Is(err, fs.ErrNotExist) {
			// A directory set aside (by a package, or by hand) with no
			// ledger in it yet: nobody is shut out of anything.
			why = fmt.Sprintf("there is no ledger there yet, and %s may not make one in %s: ask root to set it up (sudo chronos init --shared --group GROUP), or keep one of your own with --db FILE",
				me, filepath.Dir(e.Path))
		}
		if group, ok := groupShutOut(e.Err.Path, e.Path); ok {
			why = fmt.Sprintf("%s is shared with the group %s, and %s is not in it: ask root to add you (sudo usermod -aG %s %s), then log in again",
				e.Err.Path, group, me, group, me)
		}
	}
	return fmt.Sprintf("cannot use the ledger %s%s: %s", e.Path, e.From, why)
}
