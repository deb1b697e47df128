package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/setup"
)

// nobody is the unprivileged user tests run the binary as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// asNobody runs the real binary as uid 65534 against db.
func asNobody(t *testing.T, bin, db string, args ...string) result {
	t.Helper()
	return runChronos(t, bin, db, nobody, args...)
}

// rootsLedgerForAll is a ledger that anyone may write, holding root's
// booking of share of GPU 0, and the binary any user may run (see otherUserLedger).
func rootsLedgerForAll(t *testing.T, share string) (bin, db string) {
	t.Helper()
	bin, db = otherUserLedger(t)
	r := chronos(t, db, "create", "0", share, "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Chmod(db, 0o666))
	return bin, db
}

// otherUserLedger skips unless the test runs as root; else it returns the
// binary, which any user may run (TestMain), and a ledger path in a
// directory of the test's that any user may write.
//
// (It used to copy the binary there. Writing an executable while tests in
// parallel fork and exec is how exec fails with "text file busy": a child
// forked meanwhile holds the file open for writing until it execs.)
func otherUserLedger(t *testing.T) (bin, db string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the binary as another uid")
	}
	dir, err := os.MkdirTemp("", "chronos-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	return chronosBin, filepath.Join(dir, "chronos.db")
}

// An ordinary user who can write the ledger file still cannot extend,
// release or run inside another's booking, book for someone else, or change
// the policy: the ownership checks hold, and a refusal writes nothing.
func TestOtherUsersAreRefused(t *testing.T) {
	t.Parallel()
	bin, db := rootsLedgerForAll(t, "0.2")
	before, err := os.ReadFile(db)
	require.NoError(t, err)

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"extend", "1", "10m"}, "not your booking: 1 belongs to root"},
		{[]string{"release", "1"}, "not your booking"},
		{[]string{"run", "--partition", "1", "--", "true"}, "not your booking"},
		{[]string{"create", "0", "0.1", "1h", "--user", "root"}, "only root may do that"},
		{[]string{"policy", "set", "expiry=notify"}, "only root may do that"},
		{[]string{"release", "--user", "root", "--yes"}, `only root may do that: --user "root" acts on another user's bookings`},
		{[]string{"queue", "cancel", "--user", "root", "--yes"}, "only root may do that"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := asNobody(t, bin, db, tc.args...)
			require.Equal(t, 1, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
			after, err := os.ReadFile(db)
			require.NoError(t, err)
			require.Equal(t, before, after, "a refusal changed the ledger")
		})
	}
	// Their own booking is theirs to change.
	r := asNobody(t, bin, db, "create", "1", "0.1", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 2: 10% (8.0 GiB) of GPU 1 for nobody")
	r = asNobody(t, bin, db, "extend", "2", "10m")
	require.Equal(t, 0, r.code, r.stderr)
	r = chronos(t, db, "release", "2") // and root's to end
	require.Equal(t, 0, r.code, r.stderr)
}

// A ledger another user may not touch is named, with who may not, in
// words — not a system call's error.
func TestLedgerOutOfReach(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the binary as another uid")
	}
	bin, elsewhere := otherUserLedger(t)
	db := filepath.Join(t.TempDir(), "chronos.db") // in a directory of root's, 0700
	r := asNobody(t, bin, db, "create", "0", "0.1", "1h")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: cannot use the ledger "+db+" ($CHRONOS_DB): nobody may not use "+db+" (a shared ledger of a group you are not in?)\n", r.stderr)

	// A directory anyone may read, with no ledger in it yet: nobody is shut
	// out of anything, root has yet to set it up.
	unset := filepath.Join(filepath.Dir(elsewhere), "unset")
	require.NoError(t, os.Mkdir(unset, 0o755))
	db = filepath.Join(unset, "chronos.db")
	r = asNobody(t, bin, db, "create", "0", "0.1", "1h")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: cannot use the ledger "+db+" ($CHRONOS_DB): there is no ledger there yet, and nobody may not make one in "+unset+
		": ask root to set it up (sudo chronos init --shared --group GROUP), or keep one of your own with --db FILE\n", r.stderr)
	require.NoFileExists(t, db)

	// A group's shared ledger names the group, and how to be let in.
	shared := filepath.Join(filepath.Dir(elsewhere), "lab") // in a directory anyone may enter
	require.NoError(t, os.Mkdir(shared, 0o770))
	require.NoError(t, os.Chown(shared, 0, 1)) // root:daemon, as init --shared --group daemon makes it
	require.NoError(t, os.Chmod(shared, 0o2770))
	db = filepath.Join(shared, "chronos.db")
	require.Equal(t, 0, chronos(t, db, "stats").code)
	require.NoError(t, os.Chown(db, 0, 1))
	r = asNobody(t, bin, db, "create", "0", "0.1", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is shared with the group daemon, and nobody is not in it: ask root to add you (sudo usermod -aG daemon nobody), then log in again")
}

// `chronos run` starts the command without a shell: its arguments arrive
// as they were given, however they look to a shell.
func TestRunPassesArgumentsLiterally(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, touched := filepath.Join(dir, "chronos.db"), filepath.Join(dir, "touched")
	arg := "$(touch " + touched + "); echo hi `touch " + touched + "` | cat > " + touched + " *"
	r := chronos(t, db, "run", "0", "0.1", "1m", "--", "printf", "%s\n", arg)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, arg+"\n", r.stdout)
	require.NoFileExists(t, touched)
}

// The command's environment is chronos's own, unchanged, plus the
// variables that tie it to its booking.
func TestRunPassesEnvironmentThrough(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	env := []string{"CHRONOS_TEST_ODD=a=b;$(x) 'quoted' \"double\"\ttab", "CUDA_VISIBLE_DEVICES=7"} // the latter replaced by the booking's
	r := runWith(t, chronosBin, db, nil, env, 0, "run", "1", "0.1", "1m", "--", "env", "-0")
	require.Equal(t, 0, r.code, r.stderr)

	// What chronos was given: the helper's environment, last value winning.
	parent := map[string]string{}
	for _, kv := range append(append(os.Environ(), binEnv(db)...), env...) {
		k, v, _ := strings.Cut(kv, "=")
		parent[k] = v
	}
	child := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		child[k] = v
	}
	set := map[string]bool{"CUDA_VISIBLE_DEVICES": true, "CHRONOS_BOOKING_ID": true, "CHRONOS_PARTITION_ID": true, "CHRONOS_EXPIRES_AT": true, "CHRONOS_DEADLINE_UNIX": true, "CHRONOS_RUN_PID": true}
	for k, v := range parent {
		if !set[k] {
			require.Equal(t, v, child[k], "variable %s", k)
		}
	}
	for k := range child {
		_, inherited := parent[k]
		require.True(t, inherited || set[k], "%s appeared from nowhere", k)
	}
	require.Equal(t, "1", child["CUDA_VISIBLE_DEVICES"])
	require.Equal(t, "1", child["CHRONOS_BOOKING_ID"])
	require.Equal(t, "1", child["CHRONOS_PARTITION_ID"])
	require.Equal(t, "1", child["CHRONOS_BOOKING_ID"])
	require.NotEmpty(t, child["CHRONOS_EXPIRES_AT"])
	require.NotEmpty(t, child["CHRONOS_DEADLINE_UNIX"])
	require.NotEmpty(t, child["CHRONOS_RUN_PID"], "the chronos run that wraps it")
}

// init --shared honours --db: the shared ledger goes where it says, in a
// directory prepared as /var/lib/chronos would be (which is not made), and
// the admin is told the next steps.
func TestInitSharedHonoursDB(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: init --shared is root's")
	}
	t.Parallel()
	_, had := os.Stat(setup.SharedDir)
	db := filepath.Join(t.TempDir(), "lab", "gpu.db")
	r := cli(t, db, "init", "--shared", "--group", "daemon")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Shared ledger ready at "+db+" (group daemon, mode 0660).\n", strings.SplitAfter(r.stdout, "\n")[0])
	// Every next step names this ledger: a monitor or policy without --db
	// would be the /var/lib/chronos one's.
	for _, step := range []string{"sudo chronos --db " + db + " --monitor", "Environment=CHRONOS_DB=" + db, "sudo systemctl enable --now chronos-monitor",
		"sudo chronos --db " + db + " policy set", "sudo usermod -aG daemon NAME", "Users name this ledger with --db " + db + " or CHRONOS_DB=" + db} {
		require.Contains(t, r.stdout, step)
	}
	st, err := os.Stat(filepath.Dir(db))
	require.NoError(t, err)
	require.Equal(t, setup.SharedDirMode, st.Mode()&(fs.ModeType|fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))
	st, err = os.Stat(db)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o660), st.Mode().Perm())
	require.Equal(t, uint32(1), st.Sys().(*syscall.Stat_t).Gid, "daemon's")
	if os.IsNotExist(had) {
		require.NoDirExists(t, setup.SharedDir, "--db was not ignored")
	}
}
