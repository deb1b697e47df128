// Package setup finds a ledger and prepares its place before the service
// opens it: which ledger (a file's path or an etcd store, from flags,
// the environment and the store file), a shared or guarded ledger's
// directory and modes, and this host's name in a ledger many hosts
// share; the environment variables chronos reads and sets, a ledger path
// that cannot be used in plain words, and what an admin does after init.
// It imports no service: core and the command layer use it.
package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// SharedDir is where a machine's shared ledger lives once an admin ran
// `sudo chronos init --shared`.
const SharedDir = "/var/lib/chronos"

const ledgerName = "chronos.db"

// LedgerPath finds the ledger file: the flag's value, else $CHRONOS_DB, else
// the shared system ledger when its directory exists, else a per-user one
// under $XDG_STATE_HOME (~/.local/state). The per-user directory is created
// (0700) when missing.
func LedgerPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv("CHRONOS_DB"); env != "" {
		return env, nil
	}
	if st, err := os.Stat(SharedDir); err == nil && st.IsDir() {
		return filepath.Join(SharedDir, ledgerName), nil
	}
	dir, err := UserStateDir()
	if err != nil {
		return "", fmt.Errorf("find the ledger (no --db, no CHRONOS_DB, no %s): %w", SharedDir, err)
	}
	return filepath.Join(dir, ledgerName), nil
}

// UserStateDir is the user's own chronos directory, under $XDG_STATE_HOME
// (~/.local/state): their ledger where there is no shared one, and the
// logs of their background waiters. It is created (0700) when missing.
func UserStateDir() (string, error) {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory: %w", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	dir := filepath.Join(state, "chronos")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	return dir, nil
}

// InitShared prepares the shared ledger directory for the members of group:
// owned by root and the group, setgid so new files keep the group, sticky so
// members cannot rename or remove files that are not theirs (root's ledger
// above all), writable by the group and closed to everyone else. A ledger
// and backup already there become root's, 0660 in the group. Everything is
// changed through a descriptor: a link a member put at one of these names is
// refused, never followed. Root only.
func InitShared(dir, group string) (string, error) {
	return InitSharedAt(filepath.Join(dir, ledgerName), group)
}

// InitSharedAt is InitShared for a ledger of another name or place: its
// directory is prepared as InitShared prepares SharedDir.
func InitSharedAt(path, group string) (string, error) {
	return initShared(path, group, SharedDirMode, 0o660)
}

// initShared prepares path's directory and files for group with these
// modes: an open ledger's or a guarded one's.
func initShared(path, group string, dirMode, fileMode fs.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if !proc.RealRoot() {
		return "", fmt.Errorf("%w: creating the shared ledger (try sudo chronos init --shared)", domain.ErrNotRoot)
	}
	gid := 0
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return "", fmt.Errorf("%w: %s", domain.ErrUnknownGroup, human.Quote(group))
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll's mode passes through the umask and cannot set the special bits.
	if err := storage.Own(dir, 0, gid, dirMode); err != nil {
		return "", fmt.Errorf("prepare %s: %w", dir, err)
	}
	for _, p := range []string{path, storage.BackupPath(path)} {
		if err := storage.Own(p, 0, gid, fileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("prepare %s: %w", p, err)
		}
	}
	return path, nil
}

// SharedDirMode is the shared ledger directory's mode: 3770, setgid and
// sticky.
const SharedDirMode = fs.ModeDir | fs.ModeSetgid | fs.ModeSticky | 0o770
