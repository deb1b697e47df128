package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// make install honours PREFIX and DESTDIR, and what the systemd unit
// points at — the binary, its documentation — is what it installed.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dest := t.TempDir()
	// GO=true: the binary the tests built is the one installed.
	install := exec.Command("make", "install", "DESTDIR="+dest, "PREFIX=/opt/chronos", "GO=true", "BIN="+chronosBin, "MANDIR="+filepath.Join(t.TempDir(), "man"))
	install.Env = append(os.Environ(), "GOCOVERDIR="+coverDir)
	out, err := install.CombinedOutput()
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

	// The man pages, one a command, chronos(1) with the environment; the
	// completions where bash-completion, zsh and fish look.
	man := filepath.Join(dest, "opt/chronos/share/man/man1")
	for _, page := range []string{"chronos.1", "chronos-report.1", "chronos-list.1", "chronos-show.1", "chronos-completion-bash.1"} {
		require.FileExists(t, filepath.Join(man, page))
	}
	page, err := os.ReadFile(filepath.Join(man, "chronos-list.1"))
	require.NoError(t, err)
	require.Contains(t, string(page), `\fB--mine\fP`)
	page, err = os.ReadFile(filepath.Join(man, "chronos.1"))
	require.NoError(t, err)
	require.Regexp(t, `(?s)\.SH EXIT STATUS.*\\fB124\\fP.*\.SH ENVIRONMENT.*CHRONOS_DB.*CHRONOS_DEADLINE_UNIX.*\.SH FILES.*/var/lib/chronos/chronos\.db.*LEDGER\.backup.*/etc/chronos/store`, string(page))
	for file, first := range map[string]string{
		"share/bash-completion/completions/chronos":    "# bash completion V2 for chronos",
		"share/zsh/site-functions/_chronos":            "#compdef chronos",
		"share/fish/vendor_completions.d/chronos.fish": "# fish completion for chronos",
	} {
		data, err := os.ReadFile(filepath.Join(dest, "opt/chronos", file))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(data), first), file)
	}
}
