#!/bin/sh
# Issue 20, step eleven, before plans/13-procfs.txt: the three process
# helpers of gpu's /proc tests (a sleeping child, a pid that has exited, a
# made-up stat line) are used by the backends' tests too, which stay in
# gpu: they go to core/coretest (no client, no gpu), exported, and every
# test calls them there. The DRM test that compared a whole Container
# (its unexported containerd namespace too, which a test outside the
# package cannot name) compares the exported fields; the name it reads
# through that namespace is among them, and procfs's tests check the
# namespace itself.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
import glob, re
src = 'gpu/proc_test.go'
s = open(src).read()
moved = []
for name in ['startSleep', 'exitedPID', 'fakeStat']:
    m = re.search(r'(?:// [^\n]*\n)*func ' + name + r'\(.*?\n}\n\n', s, re.S)
    assert m, name
    block = m.group(0)
    s = s.replace(block, '', 1)
    new = name[0].upper() + name[1:]
    block = block.replace('// ' + name + ' ', '// ' + new + ' ').replace('func ' + name + '(', 'func ' + new + '(')
    moved.append(block.rstrip('\n') + '\n')
open(src, 'w').write(s)
drm = 'gpu/drm_test.go'
t = open(drm).read()
old = '''	require.Equal(t, Container{ID: dockerC, Runtime: RuntimeDocker, Name: "llm-server", PID: 1, namespace: "moby"}, served.Container)
'''
assert old in t
t = t.replace(old, '''	c := served.Container
	require.Equal(t, Container{ID: dockerC, Runtime: RuntimeDocker, Name: "llm-server", PID: 1},
		Container{ID: c.ID, Runtime: c.Runtime, Name: c.Name, Pod: c.Pod, Rootless: c.Rootless, PID: c.PID})
''')
open(drm, 'w').write(t)
dst = 'core/coretest/procs.go'
d = open(dst).read()
open(dst, 'w').write(d.rstrip('\n') + '\n\n' + '\n'.join(moved))
for f in glob.glob('gpu/*_test.go'):
    t = open(f).read()
    u = re.sub(r'(?<![\w.])(startSleep|exitedPID|fakeStat)\(', lambda m: 'coretest.' + m.group(1)[0].upper() + m.group(1)[1:] + '(', t)
    if u != t:
        if '"github.com/chronos-gpu/chronos/core/coretest"' not in u:
            u = u.replace('import (\n', 'import (\n\t"github.com/chronos-gpu/chronos/core/coretest"\n', 1)
        open(f, 'w').write(u)
PY
goimports -local github.com/chronos-gpu/chronos -w core/coretest/procs.go gpu/*_test.go
