package keeper

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/chronos-gpu/chronos/storage"
)

// DefaultSocket is where the keeper listens; CHRONOS_SOCKET names another
// place (tests, a second ledger).
const DefaultSocket = "/run/chronos/chronos.sock"

// SocketPath is the keeper's socket: $CHRONOS_SOCKET, else DefaultSocket.
func SocketPath() string {
	if p := os.Getenv("CHRONOS_SOCKET"); p != "" {
		return p
	}
	return DefaultSocket
}

// SocketMode is the socket's: root and the group may connect.
const SocketMode fs.FileMode = 0o660

// ErrUnsafeSocket says the socket's place is not one root alone controls.
var ErrUnsafeSocket = errors.New("unsafe place for the keeper's socket")

// Listener is the keeper's listening socket.
type Listener struct {
	*net.UnixListener
	path   string
	inode  fs.FileInfo // the socket file this keeper made
	closed sync.Once
	err    error
}

// Listen makes the keeper's socket at path, root's and group gid's, mode
// 0660. Its directory is made root's, 0755, when missing; one that is a
// link, or that anyone but root may write, is refused (a member could swap
// the socket for their own). A socket left by a keeper that is gone is
// replaced; anything else there is refused. The socket is bound under a
// name of its own, given its owner and mode, then renamed into place, so
// it never answers at path with the wrong ones.
func Listen(path string, gid int) (*Listener, error) {
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := rootsDirectory(dir); err != nil {
		return nil, err
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	tmp := path + ".new-" + strconv.Itoa(os.Getpid())
	if err := clearStale(tmp); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", tmp, err)
	}
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (*Listener, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	// Nobody else may write dir, so tmp is the socket just bound.
	if err := os.Lchown(tmp, 0, gid); err != nil {
		return fail(fmt.Errorf("socket %s: %w", tmp, err))
	}
	if err := os.Chmod(tmp, SocketMode); err != nil {
		return fail(fmt.Errorf("socket %s: %w", tmp, err))
	}
	st, err := os.Lstat(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("socket %s: %w", path, err))
	}
	return &Listener{UnixListener: ln, path: path, inode: st}, nil
}

// Path is where the socket listens.
func (l *Listener) Path() string { return l.path }

// Close stops listening and removes the socket, unless another keeper has
// put its own in its place meanwhile.
func (l *Listener) Close() error {
	l.closed.Do(func() {
		l.err = l.UnixListener.Close()
		if st, err := os.Lstat(l.path); err == nil && os.SameFile(st, l.inode) {
			os.Remove(l.path)
		}
	})
	return l.err
}

// rootsDirectory checks that dir is a directory (not a link to one) that
// only root may write.
func rootsDirectory(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch uid, _, _ := storage.OwnerOf(st); {
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link: remove it (the keeper makes it)", ErrUnsafeSocket, dir)
	case !st.IsDir():
		return fmt.Errorf("%w: %s is not a directory: remove it (the keeper makes it)", ErrUnsafeSocket, dir)
	case uid != 0 || st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s (uid %d, mode %s) may be written by others than root: remove it (the keeper makes it root's, 0755)",
			ErrUnsafeSocket, dir, uid, st.Mode().Perm())
	}
	return nil
}

// clearStale removes a socket at path that nobody listens on; one that
// answers is another keeper's, and anything but a socket is refused.
func clearStale(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is there and is not a socket (%s): remove it", ErrUnsafeSocket, path, st.Mode().Type())
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("another keeper already serves %s", path)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check %s: %w", path, err)
	}
	return os.Remove(path)
}
