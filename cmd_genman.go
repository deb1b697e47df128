package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/core/supervisor"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// exitStatusMarkdown is chronos(1)'s EXIT STATUS section.
var exitStatusMarkdown = fmt.Sprintf(`# EXIT STATUS

**0**
: success.

**%d**
: the operation was refused or failed; the message says why (overbooked, not yours, the ledger busy…).

**%d**
: the command line was wrong (a mistyped command gets the nearest ones).

**%d**
: chronos run: chronos stopped the command because its booking ended.

chronos run otherwise exits with its command's status (128+N when signal N ended it), or %d when it could not release its booking afterwards.
`, exitError, exitUsage, supervisor.ExitExpired, exitError)

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
			root.Long += "\n\n" + exitStatusMarkdown + "\n" + setup.EnvironmentMarkdown() + "\n" + setup.FilesMarkdown(bolt.DefaultBackupEvery, notice.DefaultNotifyFile)
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
