package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
)

//nolint:funlen,gocyclo // the command: its flags, then one report that reads top to bottom, a branch per thing it checks
func doctorCmd(g *globals) *cobra.Command {
	var repair, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--repair]",
		Short: "Check the ledger file for damage; --repair rebuilds it from what can be read",
		Long: `Check the ledger: that it opens, passes bbolt's consistency check, has a
schema this chronos reads, that every record decodes, that the index of live
bookings matches them, that every booking has its "created" event and every
ended one the event that ended it, and that no GPU is booked past 100%. A
ledger on etcd gets the same checks of its records (etcd keeps its pages).

With --repair a damaged ledger is rebuilt: the damaged file is kept as
<ledger>.damaged-<time>, every record that can still be read is copied into a
new file (live bookings, history, events, policy, inventory), what the damaged
file lost is taken from the rolling backup <ledger>.backup when that is good,
and the new file replaces the old one. A file that never was a chronos
ledger (no bbolt header, no chronos bucket, no backup beside it) is left
alone unless --force is given too. Exits 0 when the ledger is healthy (or
was repaired) and its backup, if any, is usable; 1 when problems remain or
the backup is damaged (it says whether the ledger itself is healthy).`,
		Example: "  chronos doctor\n  sudo chronos doctor --repair",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			printDiagnosis := func(d storage.Diagnosis) { setup.WriteDiagnosis(out, d) }
			cfg, err := g.storeConfig()
			if err != nil {
				return err
			}
			if onEtcd(cfg) {
				if repair {
					return usageError{fmt.Errorf("doctor --repair rebuilds a ledger file; the ledger is on etcd (%s), which keeps its data whole: "+
						"restore an etcd snapshot (etcdutl snapshot restore) to undo damage", cfg.Store)}
				}
				return g.diagnoseStore(cmd, cfg, asJSON, printDiagnosis)
			}
			l, err := g.ledger()
			if err != nil {
				return err
			}
			var healthy bool
			var result any
			if repair {
				repairLedger := l.Repair
				if force {
					repairLedger = l.RepairAnyway
				}
				r, err := repairLedger()
				if err != nil {
					return err
				}
				healthy, result = r.After.Healthy && !r.After.BackupDamaged, r
				if !asJSON {
					if !r.Done {
						printDiagnosis(r.Before)
					} else {
						fmt.Fprintf(out, "The damaged ledger is saved as %s.\n", r.SavedAs)
						for _, s := range r.Sources {
							fmt.Fprintln(out, "Rebuilt from:", s)
						}
						for _, s := range r.Lost {
							fmt.Fprintln(out, "Lost:", human.Printable(s))
						}
						fmt.Fprintf(out, "Wrote a new ledger: %d bookings (%d live), %d events.\n", r.Partitions, r.Live, r.Events)
						printDiagnosis(r.After)
					}
				}
			} else {
				d, err := l.Diagnose()
				if err != nil {
					return err
				}
				healthy, result = d.Healthy && !d.BackupDamaged, d
				if !asJSON {
					printDiagnosis(d)
					if !d.Healthy {
						fmt.Fprintln(out, "Run `chronos doctor --repair` to rebuild it from what can be read (the damaged file is kept).")
					}
				}
			}
			if asJSON {
				if err := view.PrintJSON(out, result); err != nil {
					return err
				}
			}
			if !healthy {
				return exitStatus{code: exitError}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "rebuild a damaged ledger from what can be read (keeps the damaged file)")
	cmd.Flags().BoolVar(&force, "force", false, "with --repair: replace even a file that never was a chronos ledger")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// diagnoseStore checks the records of a ledger on etcd: its pages are
// etcd's to keep whole.
func (g *globals) diagnoseStore(cmd *cobra.Command, cfg setup.StoreConfig, asJSON bool, print func(storage.Diagnosis)) error {
	s, err := openStore(cfg)
	if err != nil {
		return err
	}
	d, err := storage.DiagnoseStore(cmd.Context(), s, clock.System().Now())
	if err != nil {
		return err
	}
	d.Backup = "etcd's own (etcdctl snapshot save)"
	if asJSON {
		err = view.PrintJSON(cmd.OutOrStdout(), d)
	} else {
		print(d)
	}
	if err == nil && !d.Healthy {
		err = exitStatus{code: exitError}
	}
	return err
}
