package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// genManCmd is `chronos gen-man DIR` (hidden; `make man` runs it): a man
// page for chronos and one for each command, from their definitions, with
// the environment's tables in chronos(1). The date is SOURCE_DATE_EPOCH's,
// else today's.
func genManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "Write the man pages into DIR",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := os.MkdirAll(a[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.InitDefaultCompletionCmd()
			long := root.Long
			root.Long += "\n\n" + environmentMarkdown()
			defer func() { root.Long = long }()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "CHRONOS", Section: "1", Source: "chronos " + version, Manual: "Chronos Manual"}
			if err := doc.GenManTree(root, header, a[0]); err != nil {
				return fmt.Errorf("write the man pages: %w", err)
			}
			return nil
		},
	}
}
