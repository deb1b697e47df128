package setup

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// FilesMarkdown is chronos(1)'s FILES section: a ledger file's backup is
// at most backupEvery old after a write; notifyFile is the webhook's.
func FilesMarkdown(backupEvery time.Duration, notifyFile string) string {
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
`, SharedDir, storage.BackupPath(""), DefaultStoreFile, human.FormatDuration(backupEvery), notifyFile)
}
