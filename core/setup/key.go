package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// KeyMode is a guarded ledger's etcd client key: root's alone, so that no
// member reaches etcd but through root's keeper.
const KeyMode fs.FileMode = 0o600

// ErrKeyNotRoots says a key could not be made root's alone.
var ErrKeyNotRoots = errors.New("the etcd client key cannot be made root's alone")

// MakeKeyRoots makes the key file at path root's, mode 0600, through its
// descriptor (a link is refused, a FIFO does not block), and checks that
// it took: a file system that ignores owners or modes is refused, naming
// the file.
func MakeKeyRoots(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%w: %s is a symbolic link: name the file itself", ErrKeyNotRoots, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKeyNotRoots, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotRoots, path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrKeyNotRoots, path, st.Mode().Type())
	}
	if err := f.Chown(0, 0); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotRoots, path, err)
	}
	if err := f.Chmod(KeyMode); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotRoots, path, err)
	}
	if st, err = f.Stat(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKeyNotRoots, path, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid != 0 || sys.Gid != 0 || st.Mode().Perm() != KeyMode {
		return fmt.Errorf("%w: %s is still mode %s (its file system keeps other owners or modes): move it to a local directory of root's", ErrKeyNotRoots, path, st.Mode().Perm())
	}
	return nil
}
