package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The files chronos writes live in directories that other people may write
// (a shared ledger's directory is writable by its group), so no file is ever
// reached through a name someone else could have planted: files are created
// with O_EXCL (a name that exists, a link included, is never reused) under
// random names, opened with O_NOFOLLOW and O_NONBLOCK (a link is refused and
// a FIFO does not block), checked with fstat on the descriptor, and changed
// through the descriptor (fchmod, fchown), never by path.

// ErrUnsafeFile means the file at the ledger's path is not one this process
// may write: it has other names (hard links), or, for root, another owner.
var ErrUnsafeFile = errors.New("refusing to write the ledger file")

// ErrReadOnly means the ledger cannot be written by this process; reading
// still works.
var ErrReadOnly = errors.New("the ledger is read-only here")

const noFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// openRegular opens the ledger's file at path without following a
// symbolic link or blocking on a FIFO, and refuses anything but a regular
// file. A missing file gives an error that matches fs.ErrNotExist.
func OpenRegular(path string, flag int) (*os.File, error) {
	f, err := openNoFollow(path, flag, 0)
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return f, err
}

// OpenAppend opens the file at path to append to, creating it with mode
// when there is none, as the ledger's files are opened: a symbolic link is
// refused, a FIFO does not block, and anything but a regular file is
// refused. For logs a person names.
func OpenAppend(path string, mode fs.FileMode) (*os.File, error) {
	return openNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, mode)
}

// errNotRegular: the path names something other than a regular file.
var errNotRegular = errors.New("not a regular file")

// openNoFollow opens path with flag (and perm, when it creates the file)
// without following a symbolic link or blocking on a FIFO, and checks on
// the descriptor that it opened a regular file.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, perm)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s is %w (a symbolic link)", path, errNotRegular)
	case errors.Is(err, unix.EISDIR):
		return nil, fmt.Errorf("%s is %w (a directory)", path, errNotRegular)
	case errors.Is(err, unix.ENXIO):
		return nil, fmt.Errorf("%s is %w (a FIFO or socket)", path, errNotRegular)
	case err != nil:
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %w (%s)", path, errNotRegular, kind(st.Mode()))
	}
	return f, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// createNew creates the file at path, which must not exist in any form (a
// dangling link included), with the given mode whatever the umask.
func CreateNew(path string, mode fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, mode)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// createTemp creates a file with a random name beside path, for writing a
// new version of it.
func createTemp(path string, mode fs.FileMode) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// ownerOf returns a file's owner and group from its stat.
func OwnerOf(st fs.FileInfo) (uid, gid int, links uint64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), int(sys.Gid), uint64(sys.Nlink)
	}
	return -1, -1, 0
}

// checkWritable says whether this process may write the open file f: it has
// one name (a hard link would let the name lead to another file), and when
// this process is root, root owns it — root never writes a file that a
// member of the group controls — in the group of its directory when that is
// a shared (setgid) one.
func CheckWritable(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	uid, fgid, links := OwnerOf(st)
	if links != 1 {
		return fmt.Errorf("%w %s: it has %d names (hard links); a ledger has one", ErrUnsafeFile, path, links)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	gid := -1
	if dir, err := os.Stat(filepath.Dir(path)); err == nil && dir.Mode()&fs.ModeSetgid != 0 {
		_, gid, _ = OwnerOf(dir)
	}
	switch {
	case uid != 0:
		return fmt.Errorf("%w %s: it belongs to %s, not root, and root writes only a ledger root owns "+
			"(if it is the shared ledger, check it, then take it over with `sudo chronos init --shared`)", ErrUnsafeFile, path, accountName(uid))
	case gid >= 0 && fgid != gid:
		return fmt.Errorf("%w %s: its group is %s, not the directory's %s (run `sudo chronos init --shared` to put it right)",
			ErrUnsafeFile, path, groupName(fgid), groupName(gid))
	}
	return nil
}

func accountName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return "gid " + strconv.Itoa(gid)
}

// WriteAtomically writes a new version of the file at path: a file of
// mode with a random name beside it, written (and, if need be, chowned) by
// write through its descriptor, synced and renamed over path, so readers
// see the old file or the new one, whole, and nothing is written through a
// name someone else made.
func WriteAtomically(path string, mode fs.FileMode, write func(*os.File) error) error {
	f, err := createTemp(path, mode)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(path)
	return nil
}

func syncDir(path string) {
	if d, err := os.OpenFile(filepath.Dir(path), os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Own makes the file or directory at path belong to uid and gid with the
// given mode, through a descriptor: a symbolic link at path is refused, not
// followed, and a file must be a regular one with a single name.
func Own(path string, uid, gid int, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%s is a symbolic link: remove it (chronos does not follow links)", path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file (%s): remove it", path, kind(st.Mode()))
		}
		if _, _, links := OwnerOf(st); links != 1 {
			return fmt.Errorf("%s has %d names (hard links): remove it, or check it and copy it to a file of its own", path, links)
		}
	}
	if err := f.Chown(uid, gid); err != nil {
		return err
	}
	return f.Chmod(mode)
}

// BackupPath is where the rolling backup of the file ledger at path lives.
// It is here, beside the other file rules, because setting up a shared
// directory gives the backup the ledger's owner and mode, whichever engine
// the command layer later opens.
func BackupPath(path string) string { return path + ".backup" }
