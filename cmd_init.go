package main

import (
	"errors"
	"fmt"
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
			mode, guard, err := setup.InitLedgerFiles(path, group, guarded)
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
			fmt.Fprintf(cmd.OutOrStdout(), "Shared ledger ready at %s (group %s, mode %04o%s).\n", path, setup.GroupOrRoot(group), mode, setup.GuardedNote(guard))
			setup.NextSteps(cmd.OutOrStdout(), path, elsewhere != "", group)
			return nil
		},
	}
	cmd.Flags().BoolVar(&shared, "shared", false, "create the shared ledger in "+setup.SharedDir)
	cmd.Flags().StringVar(&group, "group", "", "group whose members may book (default: root's group)")
	cmd.Flags().BoolVar(&guarded, "guarded", false, "members write the ledger only through root's monitor (the keeper), and on etcd read it through it too; needs --group")
	return cmd
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
		g, err := setup.GuardStore(cfg, group)
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
		s, setup.StoreFile(), setup.GroupOrRoot(group), setup.GuardedStoreNote(guard, cfg.Key))
	return nil
}
