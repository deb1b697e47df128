package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/core/supervisor"
	"github.com/chronos-gpu/chronos/storage"
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

// filesMarkdown is chronos(1)'s FILES section.
func filesMarkdown() string {
	return fmt.Sprintf(`# FILES

**%[1]s/chronos.db**
: the machine's shared ledger, once an admin ran sudo chronos init --shared (group-owned; members of the group use it).

**~/.local/state/chronos/chronos.db**
: a personal ledger, where there is no shared one ($XDG_STATE_HOME/chronos/chronos.db when that is set).

**LEDGER%[2]s**
: the rolling backup beside each ledger file, at most %[4]s old after a write; chronos doctor --repair reads it.

**LEDGER.damaged-TIME-RANDOM**
: a damaged ledger as it was, kept by chronos doctor --repair before it rebuilt the ledger.

**%[3]s**
: the etcd ledger (etcd://…) and its TLS files for every user of a host sharing a lab's ledger (CHRONOS_STORE_FILE names another).

**%[5]s**
: the webhook root's monitor posts notices to, root's alone; chronos policy set notify-url= writes it (CHRONOS_NOTIFY_FILE names another).

**/run/utmp**
: who is logged in on which terminal, for notices.
`, setup.SharedDir, storage.BackupPath(""), setup.DefaultStoreFile, human.FormatDuration(bolt.DefaultBackupEvery), notice.DefaultNotifyFile)
}

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
			root.Long += "\n\n" + exitStatusMarkdown + "\n" + setup.EnvironmentMarkdown() + "\n" + filesMarkdown()
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
