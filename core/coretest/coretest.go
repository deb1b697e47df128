// Package coretest holds what chronos's tests share across packages and no
// program needs. It imports nothing of chronos, so any package's tests may
// use it.
package coretest

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// WriteExecutable writes data to path as an executable (mode 0755) through
// a child process, never through a descriptor of the test's own process: a
// file this process opened for writing stays open, until it execs, in any
// child another parallel test forks meanwhile, and running the file then
// fails with "text file busy" (ETXTBSY; golang.org/issue/22315).
func WriteExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", path)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "write %s: %s", path, out)
}
