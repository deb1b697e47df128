package setup

import (
	"fmt"
	"io"
	"io/fs"

	"github.com/chronos-gpu/chronos/storage"
)

// InitLedgerFiles prepares the shared ledger's directory and files, open or
// guarded, and says the ledger's mode and, when guarded, its guard.
func InitLedgerFiles(path, group string, guarded bool) (fs.FileMode, *storage.Guard, error) {
	if !guarded {
		_, err := InitSharedAt(path, group)
		return 0o660, nil, err
	}
	g, err := InitGuardedAt(path, group)
	return GuardedFileMode, &g, err
}

// GuardedNote is what init adds to its line about a guarded ledger.
func GuardedNote(g *storage.Guard) string {
	if g == nil {
		return ""
	}
	return ", guarded: members write through root's monitor"
}

// NextSteps says what an admin does after init --shared: the monitor, a
// policy, the group's members.
func NextSteps(w io.Writer, path string, elsewhere bool, group string) {
	db := "" // what names this ledger where it is not the shared one
	if elsewhere {
		db = " --db " + path
	}
	fmt.Fprintln(w, "Next:")
	fmt.Fprintln(w, "  1. Start the monitor, which ends bookings on time when no app is open:")
	if elsewhere {
		fmt.Fprintf(w, "       in tmux: sudo chronos%s --monitor\n", db)
		fmt.Fprintf(w, "     or the systemd unit (make install puts it in place), with Environment=CHRONOS_DB=%s added\n", path)
		fmt.Fprintln(w, "       by sudo systemctl edit chronos-monitor, then sudo systemctl enable --now chronos-monitor")
	} else {
		fmt.Fprintln(w, "       sudo systemctl enable --now chronos-monitor   (make install puts the unit in place)")
		fmt.Fprintln(w, "     or, in tmux: sudo chronos --monitor")
	}
	fmt.Fprintln(w, "  2. Set a policy if the defaults don't suit (see chronos policy --help):")
	fmt.Fprintf(w, "       sudo chronos%s policy set max=1d user-gpus=2\n", db)
	if group == "" {
		fmt.Fprintln(w, "  3. Only root may book: make it a group's with sudo chronos init --shared --group NAME")
	} else {
		fmt.Fprintf(w, "  3. Add the users who book to the group (they log in again to be in it):\n       sudo usermod -aG %s NAME\n", group)
	}
	if elsewhere {
		fmt.Fprintf(w, "Users name this ledger with --db %s or CHRONOS_DB=%s: without either they use %s's, where it exists, or their own.\n", path, path, SharedDir)
	}
}

// GroupOrRoot names who shares a ledger: its group, else root alone.
func GroupOrRoot(g string) string {
	if g == "" {
		return "root"
	}
	return g
}
