package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Scheme starts a store URL that names an etcd cluster.
const Scheme = "etcd://"

// ErrURL means a store URL could not be read.
var ErrURL = errors.New("not an etcd store URL")

// IsURL reports whether s names an etcd store rather than a file.
func IsURL(s string) bool { return strings.HasPrefix(s, Scheme) }

// ParseURL reads etcd://host:port[,host:port...][/prefix].
func ParseURL(s string) (Config, error) {
	var cfg Config
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return cfg, fmt.Errorf("%w: %q does not start with %s", ErrURL, s, Scheme)
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	for h := range strings.SplitSeq(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return cfg, fmt.Errorf("%w: %q: give each member as host:port, e.g. etcd://gpu1:2379,gpu2:2379", ErrURL, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("%w: %q: the port must be a number from 1 to 65535", ErrURL, h)
		}
		cfg.Endpoints = append(cfg.Endpoints, h)
	}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		cfg.Prefix = "/" + prefix
	}
	return cfg, nil
}

// TLSConfig builds the client's TLS from PEM files: the CA that signed the
// members' certificates, and this client's certificate and key (both, or
// neither when etcd does not ask clients for one).
func TLSConfig(cacert, cert, key string) (*tls.Config, error) {
	if cacert == "" && cert == "" && key == "" {
		return nil, nil
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("etcd TLS: give both --cert and --key, or neither")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cacert != "" {
		pem, err := os.ReadFile(cacert)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: CA certificate: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd TLS: %s holds no PEM certificate", cacert)
		}
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
