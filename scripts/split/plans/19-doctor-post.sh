#!/bin/sh
# Issue 20, step seventeen, after plans/19-doctor.txt: the moved code is
# named for what it holds, and the comments the tool could not fix.
set -e
export PATH=/tmp/tools:$PATH
mv core/monitor/cmd_app.go core/monitor/beside.go
mv core/monitor/cmd_monitor_test.go core/monitor/beside_test.go
mv core/setup/cmd_doctor.go core/setup/doctor.go
mv core/setup/cmd_genman.go core/setup/files.go
mv core/human/completion.go core/human/enum.go
python3 scripts/split/merge.py core/view/completion.go core/view/describe.go
python3 - <<'PY'
import re
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/monitor/beside.go', '// Runner is what besideMonitor runs: a *monitor.Monitor.',
    '// Runner is what Beside runs: a *Monitor, or one with metrics served\n// beside it.')
sub('core/human/enum.go', 'import (\n\t_ "embed"\n)\n\n', '')
sub('core/human/enum.go', 'func Strings[', '// Strings is ss, a domain type\'s values, as plain strings.\nfunc Strings[')
sub('core/view/completion.go', 'func BackendChoices(', '// BackendChoices are the backends --backend takes, each with a tab and\n# what it reads, as completion offers them.\nfunc BackendChoices('.replace('\n# ', '\n// '))
for path in ['core/view/completion.go']:
    s = open(path).read()
    m = re.search(r'^import \((.*?)\n\)', s, re.M | re.S)
    lines = [l.strip() for l in m.group(1).splitlines() if l.strip() and l.strip() != '_ "embed"']
    def path_of(l): return l.split('"')[1]
    std = sorted({l for l in lines if '.' not in path_of(l).split('/')[0]}, key=path_of)
    own = sorted({l for l in lines if path_of(l).startswith('github.com/chronos-gpu/chronos')}, key=path_of)
    other = sorted({l for l in lines if l not in std and l not in own}, key=path_of)
    groups = ['\n'.join('\t' + l for l in g) for g in (std, other, own) if g]
    s = s[:m.start()] + 'import (\n' + '\n\n'.join(groups) + '\n)' + s[m.end():]
    open(path, 'w').write(s)
PY
goimports -local github.com/chronos-gpu/chronos -w core/view/completion.go core/human/enum.go core/monitor/beside.go
