package core_test

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/servicetest"
)

// whoami runs the test binary bin under the command prefix (unshare …) as
// uid and returns what it says: RealRoot, and CurrentIdentity's uid.
func whoami(t *testing.T, bin string, uid int, prefix ...string) string {
	t.Helper()
	cmd := exec.Command(prefix[0], append(prefix[1:], bin, "-test.run=^$")...)
	cmd.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=whoami")
	if uid != 0 {
		coretest.AsUser(cmd, uid)
	}
	// Stdout alone: under -cover a child of another uid says on stderr
	// that it cannot write its coverage to the test's directory.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s%s", out, stderr.String())
	return strings.TrimSpace(string(out))
}

// Inside `unshare -r` the effective uid is 0, but it is root only over the
// namespace: not real root, and the user is the member who made it.
func TestRealRootIsNotFooledByAUserNamespace(t *testing.T) {
	t.Parallel()
	nobody := servicetest.UIDOf(t, "nobody")
	coretest.NeedUserNamespaces(t, nobody)
	_, bin := coretest.OtherUserDir(t)
	require.Equal(t, "true 0", whoami(t, bin, 0, "env"), "root, on the host")
	require.Equal(t, "false 0", whoami(t, bin, 0, "unshare", "-r"), "root inside its own user namespace")
	require.Equal(t, "false "+strconv.Itoa(nobody), whoami(t, bin, nobody, "unshare", "-r"), "a member inside unshare -r")
	require.Equal(t, "false "+strconv.Itoa(nobody), whoami(t, bin, nobody, "env"), "a member")
}
