package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// daemon is a second unprivileged user, beside nobody.
var daemon = &syscall.Credential{Uid: 1, Gid: 1}

// A limit of 0 is a limit: the user may book nothing, and is told so;
// none lifts it. For one user's own setting and the policy's alike.
func TestZeroQuotaIsALimit(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	require.Equal(t, 0, cli(t, db, "stats").code, "root records the simulated GPUs")
	for _, set := range [][]string{{"user-gpus=1"}, {"user-gpus=0", "for=daemon"}, {"user-hours=0", "for=nobody"}} {
		r := cli(t, db, append([]string{"policy", "set"}, set...)...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.NoError(t, os.Chmod(db, 0o666))
	r := cli(t, db, "policy")
	require.Contains(t, r.stdout, "set: user-gpus=0 for=daemon")
	require.Contains(t, r.stdout, "set: user-hours=0 for=nobody")

	r = runChronos(t, bin, db, daemon, "create", "0", "40%", "1h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: user-gpus=0: you may hold no GPU at all (user-gpus=none is no limit)")
	r = runChronos(t, bin, db, daemon, "create", "0", "40%", "1h", "--wait")
	require.Equal(t, 1, r.code, "a request that can never be granted does not wait")
	require.Contains(t, r.stderr, "you may hold no GPU at all")
	r = asNobody(t, bin, db, "create", "0", "10%", "1m")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: user-hours=0/7d: you may book no GPU-hours at all (user-hours=none is no limit)")
	r = cli(t, db, "create", "0", "40%", "1h", "--user", "daemon")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over daemon's quota: user-gpus=0: daemon may hold no GPU at all", "root booking for daemon is told whose quota")
	require.Empty(t, listJSON(t, db))

	// none lifts daemon's limit altogether: more than the policy's 1 GPU.
	r = cli(t, db, "policy", "set", "user-gpus=none", "for=daemon")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "set: user-gpus=none for=daemon")
	require.Equal(t, 0, runChronos(t, bin, db, daemon, "create", "0", "100%", "1h").code)
	require.Equal(t, 0, runChronos(t, bin, db, daemon, "create", "1", "50%", "1h").code)

	// The policy's own 0 holds root too (root is not exempt unless set).
	r = cli(t, db, "policy", "set", "user-gpus=0")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^user-gpus\s+0\s+none\s`, r.stdout)
	r = cli(t, db, "create", "1", "10%", "1h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: user-gpus=0: you may hold no GPU at all")
	require.Equal(t, 0, cli(t, db, "policy", "set", "user-gpus=none").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "10%", "1h").code)
}

// When root books for someone, a quota refusal names them, not "you".
func TestQuotaRefusalForAnotherUserNamesThem(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/chronos.db"
	require.Equal(t, 0, cli(t, db, "policy", "set", "user-gpus=0.5").code)
	require.Equal(t, 0, cli(t, db, "create", "0", "40%", "1h", "--user", "nobody").code)
	r := cli(t, db, "create", "1", "20%", "1h", "--user", "nobody")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over nobody's quota: user-gpus=0.5: nobody would hold 0.6 GPUs at once (0.4 already, 0.2 asked)")
	r = cli(t, db, "extend", "1", "1h")
	require.Equal(t, 0, r.code, r.stderr)
}

// `policy --help` says what the policy covers: fair sharing too.
func TestPolicyHelpNamesTheFairnessKnobs(t *testing.T) {
	t.Parallel()
	r := cli(t, t.TempDir()+"/chronos.db", "policy", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	for _, knob := range []string{"quotas", "user-gpus", "user-hours", "halflife", "for="} {
		require.Contains(t, r.stdout, knob)
	}
}

// A group's caps hold its members together: with nobody and daemon put in
// a group made for the test, daemon is refused for what nobody holds, and
// told which cap and the group's figure; root, outside the group, is not.
// A cap for a user is refused: it needs a group.
func TestGroupCapsHoldTwoMembers(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	group := fmt.Sprintf("chronos-gc-%d", os.Getpid())
	if out, err := exec.Command("groupadd", "-U", "nobody,daemon", group).CombinedOutput(); err != nil {
		t.Skipf("groupadd: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("groupdel", group).Run() })
	require.Equal(t, 0, cli(t, db, "stats").code, "root records the simulated GPUs")

	r := cli(t, db, "policy", "set", "group-gpus=4", "for=nobody")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "group-gpus caps a group's members together: it needs a group, for=@GROUP (for=@students); for=nobody names a user, whom user-gpus limits alone")
	r = cli(t, db, "policy", "set", "group-gpus=1", "for=@"+group, "group-hours=1.5/1d", "for=@"+group)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "set: group-gpus=1 group-hours=1.5/1d for=@"+group)
	require.Regexp(t, `(?m)^group-gpus\s+none\s+none\s`, r.stdout)
	require.NoError(t, os.Chmod(db, 0o666))

	r = asNobody(t, bin, db, "create", "0", "50%", "2h")
	require.Equal(t, 0, r.code, r.stderr)
	r = runChronos(t, bin, db, daemon, "create", "1", "60%", "1h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: group-gpus=1 for @"+group+": the group would hold 1.1 GPUs at once (0.5 already, 0.6 asked)")
	r = runChronos(t, bin, db, daemon, "create", "1", "50%", "2h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: group-hours=1.5/1d for @"+group+": the group has 1.0 GPU-hours booked in the window, 1.0 asked")
	r = runChronos(t, bin, db, daemon, "create", "1", "50%", "1h")
	require.Equal(t, 0, r.code, "within both caps: %s", r.stderr)

	// Root is in no such group: what the members hold does not count.
	r = cli(t, db, "create", "1", "50%", "2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, listJSON(t, db), 3)
}
