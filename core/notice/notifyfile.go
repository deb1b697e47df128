package notice

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage"
)

// DefaultNotifyFile is where NotifyFile is unless the environment moves it.
const DefaultNotifyFile = "/etc/chronos/notify"

// NotifyFile holds the webhook root's monitor posts notices to. It is
// root's file, not a ledger record: whoever can write the ledger could
// otherwise make root post to any address. $CHRONOS_NOTIFY_FILE moves it
// (tests do).
func NotifyFile() string {
	if p := os.Getenv("CHRONOS_NOTIFY_FILE"); p != "" {
		return p
	}
	return DefaultNotifyFile
}

// ErrNotifyFileUntrusted says the notify file could have been written by
// someone other than root: it is not used.
var ErrNotifyFileUntrusted = errors.New("not trusted")

// ReadNotifyFile returns the webhook address in the notify file at path
// ("" when there is no file). The file is used only when it is a regular
// file (a link is not followed), owned by root and writable by nobody else;
// it holds the address on one line, with # for comments.
func ReadNotifyFile(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return "", nil
	}
	if errors.Is(err, unix.ELOOP) {
		return "", fmt.Errorf("%s is a symbolic link: %w (chronos does not follow links)", path, ErrNotifyFileUntrusted)
	}
	if err != nil {
		return "", &fs.PathError{Op: "read", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", fmt.Errorf("%s is not a regular file: %w", path, ErrNotifyFileUntrusted)
	case st.Uid != 0:
		return "", fmt.Errorf("%s belongs to uid %d, not root: %w (sudo chown root: %s)", path, st.Uid, ErrNotifyFileUntrusted, path)
	case st.Mode&0o022 != 0:
		return "", fmt.Errorf("%s is writable by its group or others (mode %04o): %w (sudo chmod go-w %s)", path, st.Mode&0o7777, ErrNotifyFileUntrusted, path)
	}
	sc := bufio.NewScanner(f)
	address := ""
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if address != "" {
			return "", fmt.Errorf("%s line %d: one webhook address only", path, n)
		}
		if address, err = policy.NotifyURL(line); err != nil {
			return "", fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	return address, sc.Err()
}

// WriteNotifyFile makes address the webhook of root's monitor: it writes
// path as root's alone (mode 0600, since a webhook address is often a
// secret), or removes it when address is "". Root only.
func WriteNotifyFile(path, address string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: writing %s", domain.ErrNotRoot, path)
	}
	if address == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return storage.WriteAtomically(path, 0o600, func(f *os.File) error {
		if err := f.Chown(0, 0); err != nil {
			return err
		}
		_, err := f.WriteString("# The webhook root's chronos monitor posts notices to; written by chronos policy set.\n" + address + "\n")
		return err
	})
}

// NotifyShown is what `chronos policy` shows for notify-url: the address
// when this process may read it, else where it is and why it is not shown.
func NotifyShown(path string) string {
	address, err := ReadNotifyFile(path)
	switch {
	case err == nil:
		return address
	case errors.Is(err, fs.ErrPermission):
		return "set in " + path + " (root only)"
	default:
		return "not used: " + err.Error()
	}
}

// NotifySetting picks the notify-url settings out of settings: they go to
// the notify file, the rest to the ledger. The last one wins; found says
// whether there was one.
func NotifySetting(settings []string) (rest []string, address string, found bool, err error) {
	for _, s := range settings {
		k, v, _ := strings.Cut(strings.TrimSpace(s), "=")
		if k = strings.ToLower(strings.TrimSpace(k)); k != "notify-url" && k != "notify_url" {
			rest = append(rest, s)
			continue
		}
		if address, err = policy.NotifyURL(strings.TrimSpace(v)); err != nil {
			return nil, "", false, err
		}
		found = true
	}
	for _, s := range rest {
		if k, _, _ := strings.Cut(strings.TrimSpace(s), "="); found && strings.EqualFold(strings.TrimSpace(k), "for") {
			return nil, "", false, domain.InputErr("notify-url is the whole host's webhook: it takes no for=")
		}
	}
	return rest, address, found, nil
}
