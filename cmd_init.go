package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

func initCmd() *cobra.Command {
	var shared bool
	var group string
	cmd := &cobra.Command{
		Use:   "init --shared [--group NAME]",
		Short: "Create the machine's shared ledger (root)",
		Long: `Create ` + core.SharedDir + ` for a group of users: owned by root and the group,
setgid and sticky, mode 3770; the ledger inside gets mode 0660. Every user in the group
then shares one ledger; everyone else cannot read or change it.`,
		Example: "  sudo chronos init --shared --group gpu",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !shared {
				return usageError{errors.New("init: say --shared (a per-user ledger needs no init)")}
			}
			path, err := core.InitShared(core.SharedDir, group)
			if err != nil {
				return err
			}
			l := storage.New(path)
			if err := l.Update(func(*storage.Tx) error { return nil }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Shared ledger ready at %s (group %s, mode 0660).\n", path, groupOrRoot(group))
			return nil
		},
	}
	cmd.Flags().BoolVar(&shared, "shared", false, "create the shared ledger in "+core.SharedDir)
	cmd.Flags().StringVar(&group, "group", "", "group whose members may book (default: root's group)")
	return cmd
}

func groupOrRoot(g string) string {
	if g == "" {
		return "root"
	}
	return g
}
