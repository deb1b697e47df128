package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

// migrateCmd is `chronos migrate`: a host's ledger file into the lab's
// ledger on etcd.
func migrateCmd(g *globals) *cobra.Command {
	var from, to, host string
	cmd := &cobra.Command{
		Use:   "migrate --from FILE --to etcd://… [--host NAME]",
		Short: "Copy a host's ledger file into a lab's ledger on etcd, as that host's",
		Long: `Copy every booking (history included), the audit trail, the GPU inventory
and the policy (where the lab's ledger has none) from a host's ledger file
into a ledger many hosts share, labelled with the host. Bookings get new ids
there (printed); events follow them. The file is only read. A host already
migrated (the lab's ledger holds bookings of it) is refused.

Run it once on each host, as root, while no chronos run job is running
there (a running job names its booking by the old id), then point the host
at the lab's ledger with chronos init --store.`,
		Example: "  sudo chronos migrate --from /var/lib/chronos/chronos.db --to etcd://gpu1:2379,gpu2:2379,gpu3:2379",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageError{errors.New("migrate: give --from FILE and --to etcd://…")}
			}
			if _, err := os.Stat(from); err != nil {
				return fmt.Errorf("migrate: the ledger file %s: %w", from, err)
			}
			cfg := g.store
			cfg.Store = to
			if !cfg.Etcd() {
				return usageError{fmt.Errorf("migrate --to %s: give the lab's ledger, etcd://host:port,…", to)}
			}
			dst, err := core.OpenStore(cfg)
			if err != nil {
				return err
			}
			if host == "" {
				host = core.HostName()
			}
			rep, err := core.Migrate(storage.New(from), dst, host)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Copied %d bookings (%d live) and %d events of host %s from %s to %s.\n", rep.Bookings, rep.Live, rep.Events, host, from, dst)
			fmt.Fprintf(out, "Policy: %s. GPU inventory: %s.\n", rep.Policy, map[bool]string{true: "copied", false: "none in the file"}[rep.Inventory])
			for _, old := range slices.Sorted(maps.Keys(rep.IDs)) {
				if id := rep.IDs[old]; old != id {
					fmt.Fprintf(out, "Booking %d is now %d.\n", old, id)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the host's ledger file")
	cmd.Flags().StringVar(&to, "to", "", "the lab's ledger, etcd://host:port,…")
	cmd.Flags().StringVar(&host, "host", "", "the host's name in the lab (default: $CHRONOS_HOST, else this host's short name)")
	return cmd
}
