package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// make install honours PREFIX and DESTDIR, and what the systemd unit
// points at — the binary, its documentation — is what it installed.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dest := t.TempDir()
	// GO=true: the binary the tests built is the one installed.
	out, err := exec.Command("make", "install", "DESTDIR="+dest, "PREFIX=/opt/chronos", "GO=true", "BIN="+chronosBin).CombinedOutput()
	require.NoError(t, err, "%s", out)

	st, err := os.Stat(filepath.Join(dest, "opt/chronos/bin/chronos"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	unit, err := os.ReadFile(filepath.Join(dest, "opt/chronos/lib/systemd/system/chronos-monitor.service"))
	require.NoError(t, err)
	require.NotContains(t, string(unit), "/usr/local")
	for _, pattern := range []string{`(?m)^Documentation=file://(/\S+)$`, `(?m)^ExecStart=(/\S+) `} {
		m := regexp.MustCompile(pattern).FindSubmatch(unit)
		require.NotNil(t, m, pattern)
		require.FileExists(t, filepath.Join(dest, string(m[1])), "the unit names %s", m[1])
	}
}
