#!/bin/sh
# Issue 20, step seventeen, before plans/19-doctor.txt: what the split
# tool cannot do. doctor's account of a ledger's health leaves the
# command's RunE for a function of its own (writeDiagnosis); the man
# page's FILES section takes the two figures setup may not import (the
# backup's interval, an engine's; the webhook's file, the notices') as
# arguments; the backends completion offers are described by a function
# beside the kinds' other words.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

p = 'cmd_doctor.go'
s = open(p).read()
start = s.index('\t\t\tprintDiagnosis := func(d storage.Diagnosis) {\n')
end = s.index('\t\t\tcfg, err := g.storeConfig()\n', start)
body = s[start:end]
s = s[:start] + '\t\t\tprintDiagnosis := func(d storage.Diagnosis) { writeDiagnosis(out, d) }\n' + s[end:]
body = body.replace('\t\t\tprintDiagnosis := func(d storage.Diagnosis) {\n', '')
body = body[:body.rindex('\t\t\t}\n')]
body = '\n'.join(l[3:] if l.startswith('\t\t\t') else l for l in body.split('\n'))
s = s.rstrip('\n') + '''

// writeDiagnosis says what doctor found of a ledger: healthy and what it
// holds, or each problem; and its backup, with what to do when that is
// damaged.
func writeDiagnosis(out io.Writer, d storage.Diagnosis) {
''' + body + '}\n'
open(p, 'w').write(s)

g = 'cmd_genman.go'
sub(g, '''// filesMarkdown is chronos(1)'s FILES section.
func filesMarkdown() string {''', '''// filesMarkdown is chronos(1)'s FILES section: a ledger file's backup is
// at most backupEvery old after a write; notifyFile is the webhook's.
func filesMarkdown(backupEvery time.Duration, notifyFile string) string {''')
sub(g, '''`, setup.SharedDir, storage.BackupPath(""), setup.DefaultStoreFile, human.FormatDuration(bolt.DefaultBackupEvery), notice.DefaultNotifyFile)''',
    '''`, setup.SharedDir, storage.BackupPath(""), setup.DefaultStoreFile, human.FormatDuration(backupEvery), notifyFile)''')
sub(g, '+ filesMarkdown()', '+ filesMarkdown(bolt.DefaultBackupEvery, notice.DefaultNotifyFile)')
PY
goimports -local github.com/chronos-gpu/chronos -w cmd_doctor.go cmd_genman.go
