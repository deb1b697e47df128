#!/bin/sh
# Issue 20, step eleven, after plans/13-procfs.txt: NA joins the readings
# of a process; what CUDA_VISIBLE_DEVICES names has a file of its own; the
# cgroup fuzz test's seeds are still gpu's DRM fixtures; a package
# comment; the depguard rule.
set -e
export PATH=/tmp/tools:$PATH
python3 scripts/split/merge.py gpu/procfs/proc.go gpu/procfs/gpu.go
mv gpu/procfs/visible.go gpu/procfs/cuda.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('gpu/procfs/proc.go', 'package procfs\n', '''// Package procfs is what /proc says about the processes on a host's GPUs:
// each one's owner, command, start time, booking and CUDA environment (a
// cache of those readings for the backends), the container it runs in,
// the boot time its start ticks count from, and the MPS daemons found
// there. It knows no GPU; package gpu's backends read processes through
// it.
package procfs
''')
sub('gpu/procfs/proc.go', '// NA marks an integer reading the hardware or driver does not provide.',
    '// NA marks an integer reading the hardware, the driver or /proc does not\n// provide.')
sub('gpu/procfs/fuzz_test.go', 'filepath.Join("testdata", "drm",', 'filepath.Join("..", "testdata", "drm",')
sub('gpu/gpu.go', '''// memory, the compute processes on each device, who owns them and the
// containers they run in.''', '''// memory, the compute processes on each device, who owns them and the
// containers they run in (read from /proc through gpu/procfs).''')

p = '.golangci.yaml'
s = open(p).read()
anchor = '''        gpu:
'''
assert anchor in s, 'gpu rule'
rule = '''        procfs:
          # What /proc says about processes: below the GPU backends, which
          # read processes through it; it knows no GPU and no ledger.
          files: ["**/gpu/procfs/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/gpu$
              desc: /proc's readings are below the GPU backends, which use them
            - pkg: github.com/chronos-gpu/chronos/core$
              desc: /proc's readings are below the service
            - pkg: github.com/chronos-gpu/chronos/core/domain
              desc: /proc's readings know no ledger
            - pkg: github.com/chronos-gpu/chronos/core/proc
              desc: /proc's readings are below core's processes and users, which use them
            - pkg: github.com/chronos-gpu/chronos/storage
              desc: /proc's readings know no ledger
            - pkg: github.com/chronos-gpu/chronos/tui
              desc: /proc's readings are below the app
'''
s = s.replace(anchor, rule + anchor, 1)
open(p, 'w').write(s)
PY
goimports -local github.com/chronos-gpu/chronos -w gpu/procfs/*.go gpu/gpu.go
