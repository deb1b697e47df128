package storage

import (
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BackupPath is where the rolling backup of the ledger at path lives.
func BackupPath(path string) string { return path + ".backup" }

// maybeBackup refreshes the rolling backup when it is older than
// BackupEvery. It runs after a committed update, under the write lock, so
// the copy is the state just committed. Most calls cost one stat. A copy is
// made only of a file that passes bbolt's check, so the backup stays the last
// good ledger; failing to make one never fails the update it follows.
func (l *Ledger) maybeBackup(db *bolt.DB) {
	every := l.BackupEvery
	if every < 0 {
		return
	}
	if every == 0 {
		every = DefaultBackupEvery
	}
	backup := BackupPath(l.Path)
	if st, err := os.Stat(backup); err == nil && time.Since(st.ModTime()) < every {
		return
	}
	_ = l.writeBackup(db, backup)
}

func (l *Ledger) writeBackup(db *bolt.DB, backup string) error {
	mode := l.mode()
	if st, err := os.Stat(l.Path); err == nil {
		mode = st.Mode().Perm()
	}
	return db.View(func(btx *bolt.Tx) error {
		for err := range btx.Check() {
			return fmt.Errorf("not backed up: %w", err)
		}
		return writeAtomically(backup, mode, func(f *os.File) error {
			_, err := btx.WriteTo(f)
			return err
		})
	})
}

// writeAtomically writes a file through a temporary one beside it, synced
// and renamed into place, so that readers see the old file or the new one,
// whole. The temporary file has a fixed name: callers hold the ledger's
// lock, and a copy cut short by a crash is overwritten by the next.
func writeAtomically(path string, mode fs.FileMode, write func(*os.File) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Chmod(mode) // undo the umask
	}
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
