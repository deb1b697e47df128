package setup

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// DefaultStoreFile is where StoreFile is unless the environment moves it.
const DefaultStoreFile = "/etc/chronos/store"

// StoreFile names a lab's shared ledger on etcd for every user of a host;
// `sudo chronos init --store etcd://…` writes it. $CHRONOS_STORE_FILE
// moves it (tests do).
func StoreFile() string {
	if p := os.Getenv("CHRONOS_STORE_FILE"); p != "" {
		return p
	}
	return DefaultStoreFile
}

// StoreConfig says which ledger to use and how to reach it.
type StoreConfig struct {
	// Store is a ledger file's path, or etcd://host:port[,host:port…][/prefix]
	// for a ledger shared by many hosts.
	Store string
	// CACert, Cert and Key are PEM files for TLS to etcd.
	CACert, Cert, Key string
	// Guarded is the group of a guarded ledger on etcd, as the store file
	// says (init --store … --guarded): the key is root's, and members read
	// and write through root's keeper. Empty: open.
	Guarded string
}

// FindStore completes what the flags gave. The store is the flag's, else
// $CHRONOS_STORE, else $CHRONOS_DB, else the one in the store file, else
// the ledger file LedgerPath finds. TLS files the flags did not name come
// from the store file.
func FindStore(flags StoreConfig) (StoreConfig, error) {
	cfg := flags
	file, err := ReadStoreFile(StoreFile())
	if err != nil {
		return cfg, err
	}
	for _, s := range []string{os.Getenv("CHRONOS_STORE"), os.Getenv("CHRONOS_DB"), file.Store} {
		if cfg.Store == "" {
			cfg.Store = s
		}
	}
	if cfg.Store == "" {
		if cfg.Store, err = LedgerPath(""); err != nil {
			return cfg, err
		}
	}
	if cfg.Store == file.Store {
		cfg.Guarded = file.Guarded
	}
	for _, f := range []struct {
		v    *string
		from string
	}{{&cfg.CACert, file.CACert}, {&cfg.Cert, file.Cert}, {&cfg.Key, file.Key}} {
		if *f.v == "" {
			*f.v = f.from
		}
	}
	return cfg, nil
}

// ReadStoreFile reads a store file: lines of key=value (store, cacert,
// cert, key, guarded), # for comments. A missing file is an empty config.
func ReadStoreFile(path string) (StoreConfig, error) {
	var cfg StoreConfig
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return cfg, fmt.Errorf("read %s: %w (it names this lab's shared ledger: members of its group may read it)", path, err)
	}
	if err != nil {
		return cfg, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		fields := map[string]*string{"store": &cfg.Store, "cacert": &cfg.CACert, "cert": &cfg.Cert, "key": &cfg.Key, "guarded": &cfg.Guarded}
		if p := fields[k]; ok && p != nil && v != "" {
			*p = v
			continue
		}
		return cfg, fmt.Errorf("%s line %d: %q: write key=value with key store, cacert, cert, key or guarded", path, n, line)
	}
	return cfg, sc.Err()
}

// WriteStoreFile makes cfg the ledger of every user of this host: it writes
// path owned by root and group, mode 0640, so that the group's members can
// read where the ledger is (and which TLS files reach it) and others
// cannot. Root only.
func WriteStoreFile(path string, cfg StoreConfig, group string) error {
	if !proc.RealRoot() {
		return fmt.Errorf("%w: writing %s (try sudo chronos init --store …)", domain.ErrNotRoot, path)
	}
	gid := 0
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return fmt.Errorf("%w: group %q", domain.ErrUnknownUser, group)
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	var b strings.Builder
	b.WriteString("# The ledger every chronos on this host uses; written by chronos init.\n")
	fmt.Fprintf(&b, "store=%s\n", cfg.Store)
	for _, kv := range [][2]string{{"cacert", cfg.CACert}, {"cert", cfg.Cert}, {"key", cfg.Key}, {"guarded", cfg.Guarded}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return storage.WriteAtomically(path, 0o640, func(f *os.File) error {
		if err := f.Chown(0, gid); err != nil {
			return err
		}
		_, err := f.WriteString(b.String())
		return err
	})
}

// HostName is this host's name in a ledger shared by many hosts:
// $CHRONOS_HOST, else the system's host name up to its first dot.
func HostName() string {
	if h := os.Getenv("CHRONOS_HOST"); h != "" {
		return h
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	short, _, _ := strings.Cut(h, ".")
	return short
}
