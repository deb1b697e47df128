package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

func initCmd(g *globals) *cobra.Command {
	var shared, guarded bool
	var group string
	cmd := &cobra.Command{
		Use:   "init (--shared | --store etcd://…) [--group NAME]",
		Short: "Create the machine's shared ledger, or point it at a lab's ledger on etcd (root)",
		Long: `With --shared: create ` + setup.SharedDir + ` for a group of users: owned by root
and the group, setgid and sticky, mode 3770; the ledger inside gets mode 0660.
Every user in the group then shares one ledger; everyone else cannot read or
change it. --db PATH (or CHRONOS_DB) puts it at PATH instead, in a directory
prepared the same way; users then name it with --db or CHRONOS_DB too.

With --store etcd://host:port,…: check that etcd answers, then write
` + setup.StoreFile() + ` (root and the group, mode 0640), which makes that ledger,
shared by every host that names it, the ledger of every user of this host.
--cacert, --cert and --key name the TLS files, kept in the same file.

--guarded (with --group): members read and write the ledger only through
root's monitor, the keeper; on etcd the client key becomes root's alone
(0600), so no member reaches etcd but through it. Run it on every host.`,
		Example: "  sudo chronos init --shared --group gpu\n  sudo chronos init --store etcd://gpu1:2379,gpu2:2379,gpu3:2379 --group gpu",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.store.Store != "" {
				if shared {
					return usageError{errors.New("init: --shared or --store, not both")}
				}
				return initStore(cmd, g.store, group, guarded)
			}
			if !shared {
				return usageError{errors.New("init: say --shared, or --store etcd://… (a per-user ledger needs no init)")}
			}
			// --db or CHRONOS_DB puts the shared ledger elsewhere; users
			// then name it the same way.
			path, elsewhere := filepath.Join(setup.SharedDir, "chronos.db"), g.db
			if elsewhere == "" {
				elsewhere = os.Getenv("CHRONOS_DB")
			}
			if elsewhere != "" {
				path = elsewhere
			}
			mode, guard, err := initLedgerFiles(path, group, guarded)
			if err != nil {
				return err
			}
			l := bolt.New(path)
			if err := l.Update(cmd.Context(), func(*storage.Tx) error { return nil }); err != nil {
				return err
			}
			if err := core.NewClient(core.Options{Ledger: l, Context: cmd.Context()}).SetGuard(guard); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Shared ledger ready at %s (group %s, mode %04o%s).\n", path, groupOrRoot(group), mode, guardedNote(guard))
			nextSteps(cmd.OutOrStdout(), path, elsewhere != "", group)
			return nil
		},
	}
	cmd.Flags().BoolVar(&shared, "shared", false, "create the shared ledger in "+setup.SharedDir)
	cmd.Flags().StringVar(&group, "group", "", "group whose members may book (default: root's group)")
	cmd.Flags().BoolVar(&guarded, "guarded", false, "members write the ledger only through root's monitor (the keeper), and on etcd read it through it too; needs --group")
	return cmd
}

// initLedgerFiles prepares the shared ledger's directory and files, open or
// guarded, and says the ledger's mode and, when guarded, its guard.
func initLedgerFiles(path, group string, guarded bool) (fs.FileMode, *storage.Guard, error) {
	if !guarded {
		_, err := setup.InitSharedAt(path, group)
		return 0o660, nil, err
	}
	g, err := setup.InitGuardedAt(path, group)
	return setup.GuardedFileMode, &g, err
}

func guardedNote(g *storage.Guard) string {
	if g == nil {
		return ""
	}
	return ", guarded: members write through root's monitor"
}

// initStore is `chronos init --store`: the lab's ledger on etcd becomes this
// host's, once etcd has answered; guarded, its key becomes root's alone
// and the ledger is marked guarded (see guardStore).
func initStore(cmd *cobra.Command, cfg setup.StoreConfig, group string, guarded bool) error {
	if !onEtcd(cfg) {
		return usageError{fmt.Errorf("init --store %s: give an etcd URL, etcd://host:port,… (a ledger file needs no init; --shared makes the shared one)", cfg.Store)}
	}
	if !proc.RealRoot() {
		return fmt.Errorf("%w: writing %s (try sudo chronos init --store …)", domain.ErrNotRoot, setup.StoreFile())
	}
	var guard *storage.Guard
	if guarded {
		g, err := guardStore(cfg, group)
		if err != nil {
			return err
		}
		guard, cfg.Guarded = &g, g.Group
	}
	s, err := openStore(cfg)
	if err != nil {
		return err
	}
	if err := s.Update(cmd.Context(), func(*storage.Tx) error { return nil }); err != nil {
		return err
	}
	if guard != nil {
		if err := core.NewClient(core.Options{Ledger: s, Context: cmd.Context()}).SetGuard(guard); err != nil {
			return err
		}
	}
	if err := setup.WriteStoreFile(setup.StoreFile(), cfg, group); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "The ledger at %s answers; %s (group %s, mode 0640) makes it every user's ledger on this host%s.\n",
		s, setup.StoreFile(), groupOrRoot(group), guardedStoreNote(guard, cfg.Key))
	return nil
}

// nextSteps says what an admin does after init --shared: the monitor, a
// policy, the group's members.
func nextSteps(w io.Writer, path string, elsewhere bool, group string) {
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
		fmt.Fprintf(w, "Users name this ledger with --db %s or CHRONOS_DB=%s: without either they use %s's, where it exists, or their own.\n", path, path, setup.SharedDir)
	}
}

func groupOrRoot(g string) string {
	if g == "" {
		return "root"
	}
	return g
}
