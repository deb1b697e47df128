package setup

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage/etcd"
)

// The store comes from the flag, else $CHRONOS_STORE, else $CHRONOS_DB,
// else the store file, else the ledger file's own rules; TLS files the flags
// do not name come from the store file.
func TestFindStore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store")
	require.NoError(t, os.WriteFile(file, []byte("# lab\nstore = etcd://gpu1:2379,gpu2:2379\ncacert=/etc/chronos/ca.pem\ncert=/etc/chronos/c.pem\nkey=/etc/chronos/k.pem\n"), 0o640))
	t.Setenv("CHRONOS_STORE_FILE", file)
	t.Setenv("XDG_STATE_HOME", dir)
	for _, tc := range []struct {
		name    string
		flags   StoreConfig
		env, db string
		store   string
		cert    string
	}{
		{name: "flag", flags: StoreConfig{Store: "/x.db"}, env: "etcd://e:1", db: "/d.db", store: "/x.db", cert: "/etc/chronos/c.pem"},
		{name: "CHRONOS_STORE", env: "etcd://e:1", db: "/d.db", store: "etcd://e:1", cert: "/etc/chronos/c.pem"},
		{name: "CHRONOS_DB", db: "/d.db", store: "/d.db", cert: "/etc/chronos/c.pem"},
		{name: "store file", store: "etcd://gpu1:2379,gpu2:2379", cert: "/etc/chronos/c.pem"},
		{name: "flag's TLS first", flags: StoreConfig{Cert: "/mine.pem"}, store: "etcd://gpu1:2379,gpu2:2379", cert: "/mine.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CHRONOS_STORE", tc.env)
			t.Setenv("CHRONOS_DB", tc.db)
			cfg, err := FindStore(tc.flags)
			require.NoError(t, err)
			require.Equal(t, tc.store, cfg.Store)
			require.Equal(t, tc.cert, cfg.Cert)
			require.Equal(t, "/etc/chronos/ca.pem", cfg.CACert)
		})
	}

	// No store file and nothing set: the ledger file, as before.
	t.Setenv("CHRONOS_STORE_FILE", filepath.Join(dir, "none"))
	t.Setenv("CHRONOS_STORE", "")
	t.Setenv("CHRONOS_DB", "")
	cfg, err := FindStore(StoreConfig{})
	require.NoError(t, err)
	want, err := LedgerPath("")
	require.NoError(t, err)
	require.Equal(t, want, cfg.Store)
	require.False(t, etcd.IsURL(cfg.Store))
}

func TestStoreFileMistakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unknown key":   "store=etcd://a:1\nendpoint=b:2\n",
		"no value":      "store=\n",
		"not key=value": "etcd://a:1\n",
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		_, err := ReadStoreFile(path)
		require.ErrorContains(t, err, "write key=value", name)
		require.ErrorContains(t, err, "line", name)
	}
}

// The store file is root's and the group's, 0640: members read it, others
// cannot.
func TestWriteStoreFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	path := filepath.Join(t.TempDir(), "etc", "store")
	cfg := StoreConfig{Store: "etcd://gpu1:2379", CACert: "/ca.pem", Cert: "/c.pem", Key: "/k.pem"}
	require.NoError(t, WriteStoreFile(path, cfg, "daemon"))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	g, err := user.LookupGroup("daemon")
	require.NoError(t, err)
	require.Equal(t, g.Gid, strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Gid)))
	require.Zero(t, st.Sys().(*syscall.Stat_t).Uid)
	got, err := ReadStoreFile(path)
	require.NoError(t, err)
	require.Equal(t, cfg, got)

	// Root writes through no name someone else could have made: a link
	// planted where the old code wrote <path>.new leaves its target alone.
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
	require.NoError(t, os.Symlink(victim, path+".new"))
	cfg.Store = "etcd://gpu2:2379"
	require.NoError(t, WriteStoreFile(path, cfg, "daemon"))
	kept, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "keep\n", string(kept))
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), vst.Mode().Perm(), "nor its mode")
	got, err = ReadStoreFile(path)
	require.NoError(t, err)
	require.Equal(t, cfg, got)
}
