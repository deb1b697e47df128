import re,sys,os,subprocess
def body(path):
    s=open(path).read()
    m=re.search(r'^package \w+\n', s, re.M)
    s=s[m.end():]
    s=re.sub(r'^\s*import \([^)]*\)\n', '', s, count=1, flags=re.S)
    s=re.sub(r'^\s*import "[^"]*"\n', '', s, count=1)
    return s
def imports(path):
    s=open(path).read()
    m=re.search(r'^import \(([^)]*)\)', s, re.M|re.S)
    if m: return [l.strip() for l in m.group(1).splitlines() if l.strip()]
    m=re.search(r'^import ("[^"]*")', s, re.M)
    return [m.group(1)] if m else []
dst=sys.argv[1]
for src in sys.argv[2:]:
    imps=imports(src)
    s=open(dst).read()
    # add src's imports to dst
    m=re.search(r'^import \(([^)]*)\)', s, re.M|re.S)
    if m:
        have=set(l.strip() for l in m.group(1).splitlines())
        add=[i for i in imps if i not in have]
        s=s[:m.end(1)]+''.join('\t'+i+'\n' for i in add)+s[m.end(1):]
    elif imps:
        m=re.search(r'^package \w+\n', s, re.M)
        s=s[:m.end()]+'\nimport (\n'+''.join('\t'+i+'\n' for i in imps)+')\n'+s[m.end():]
    s=s.rstrip('\n')+'\n'+body(src)
    open(dst,'w').write(s)
    os.remove(src)
subprocess.run(['goimports','-local','github.com/chronos-gpu/chronos','-w',dst],check=True)
