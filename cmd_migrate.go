package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/migrate"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

// migrateCmd is `chronos migrate`: a host's ledger file into the lab's
// ledger on etcd, or its part of the lab's ledger back into a file.
func migrateCmd(g *globals) *cobra.Command {
	var from, to, host string
	cmd := &cobra.Command{
		Use:   "migrate --from FILE|etcd://… --to etcd://…|FILE [--host NAME]",
		Short: "Move a host's bookings between its ledger file and a lab's ledger on etcd",
		Long: `Move a host into a lab's ledger on etcd (--from its file --to etcd://…), or
back out of it (--from etcd://… --to a new file). Everything of the host's
is carried: every booking (history included), their audit trail, holds and
usage, the intervals hours quotas count, the users' fair-share usage (added
to what the target holds), the GPU minutes of the host's GPUs, the line's
past, the GPU inventory, and the policy where the target has none. Bookings
get new ids there (printed); events follow them. The source is only read,
and what was written is read back and checked.

Refused: a target that already holds the host's bookings (migrated before),
and a host with work still running on the source by its ids — a live
chronos run booking, or a request waiting in line (cancel it or let it
start). Run it as root, then point the host at the new ledger
(chronos init --store etcd://… going in; removing /etc/chronos/store going
out).`,
		Example: "  sudo chronos migrate --from /var/lib/chronos/chronos.db --to etcd://gpu1:2379,gpu2:2379,gpu3:2379\n" +
			"  sudo chronos migrate --from etcd://gpu1:2379 --to /var/lib/chronos/chronos.db --host gpu2",
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageError{errors.New("migrate: give --from and --to: a ledger file and a lab's ledger, etcd://host:port,…")}
			}
			src, err := g.migrationEnd("--from", from, true)
			if err != nil {
				return err
			}
			dst, err := g.migrationEnd("--to", to, false)
			if err != nil {
				return err
			}
			if host == "" {
				host = setup.HostName()
			}
			rep, err := migrate.Host(cmd.Context(), src, dst, host)
			if err != nil {
				return err
			}
			migrate.WriteReport(cmd.OutOrStdout(), rep, src, dst)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the ledger to move from: the host's file, or the lab's etcd://host:port,…")
	cmd.Flags().StringVar(&to, "to", "", "the ledger to move to: the lab's etcd://host:port,…, or a new file")
	cmd.Flags().StringVar(&host, "host", "", "the host's name in the lab (default: $CHRONOS_HOST, else this host's short name)")
	return cmd
}

// migrationEnd opens one end of a migration: a lab's ledger on etcd (with
// the TLS files the flags and the store file give), or a ledger file,
// which must exist when it is the source.
func (g *globals) migrationEnd(flag, where string, source bool) (storage.Store, error) {
	cfg := g.store
	cfg.Store = where
	if source && !onEtcd(cfg) {
		if _, err := os.Stat(where); err != nil {
			return nil, fmt.Errorf("migrate %s: the ledger file %s: %w", flag, where, err)
		}
	}
	return openStore(cfg)
}
