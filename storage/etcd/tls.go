package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/chronos-gpu/chronos/core/clock"
)

// ErrTLS means the connection to etcd failed for a reason of TLS: a missing
// or wrong CA, a client certificate etcd wants or refuses, TLS on one side
// only. Waiting does not mend it, so operations end at once, saying so.
var ErrTLS = errors.New("TLS failed")

// operation is the context of one operation: it ends with the caller's
// ctx (Ctrl-C), at the timeout, or as soon as the connection fails for a
// reason of TLS (context.Cause says which), rather than at the timeout as
// if etcd did not answer.
func (s *Store) operation(ctx context.Context) (context.Context, context.CancelFunc) {
	base, fail := context.WithCancelCause(ctx)
	op, cancel := context.WithTimeout(base, s.cfg.Timeout)
	go s.watchTLS(op, fail)
	return op, func() { cancel(); fail(nil) }
}

// watchTLS waits while ctx lasts for the connection to fail, and each time
// it does, asks the members why (gRPC keeps the reason to itself while it
// waits to reconnect). A TLS reason ends ctx with it as the cause.
func (s *Store) watchTLS(ctx context.Context, fail context.CancelCauseFunc) {
	conn := s.cli.ActiveConnection()
	for {
		state := conn.GetState()
		if state == connectivity.TransientFailure {
			if err := s.probeTLS(ctx); err != nil {
				fail(err)
				return
			}
		}
		if !conn.WaitForStateChange(ctx, state) {
			return
		}
	}
}

// probeTLS shakes hands with each member as this client's TLS settings
// would, and returns the first TLS failure, in words that say what to
// change. Members that cannot be reached at all say nothing here.
func (s *Store) probeTLS(ctx context.Context) error {
	for _, ep := range s.cfg.Endpoints {
		if err := probeTLS(ctx, ep, s.cfg.TLS); err != nil {
			return err
		}
	}
	return nil
}

func probeTLS(ctx context.Context, ep string, cfg *tls.Config) error {
	if cfg == nil {
		// A plain client: does the member speak TLS instead?
		conn, err := (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", ep) //nolint:gosec // only asks whether it speaks TLS
		if err == nil {
			_ = conn.Close()
		} else if !remoteAlert(err) {
			return nil
		}
		return fmt.Errorf("%w: etcd at %s serves TLS and this client does not use it: give --cacert the CA that signed etcd's certificate (and --cert and --key if etcd asks clients for certificates)", ErrTLS, ep)
	}
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", ep)
	if err != nil {
		return nil
	}
	defer func() { _ = raw.Close() }()
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(ep)
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		if err := tlsError(ep, cfg, err); err != nil {
			return err
		}
		if speaksHTTP2(ctx, ep) {
			return fmt.Errorf("%w: etcd at %s does not speak TLS: drop --cacert, --cert and --key, or serve clients over TLS", ErrTLS, ep)
		}
		return nil
	}
	// Under TLS 1.3 the member judges the client's certificate after the
	// client's side of the handshake is done: its verdict comes as an
	// alert on the first read. HTTP/2's preface has it answer at once.
	if _, err := http2Answer(ctx, conn); err != nil {
		return tlsError(ep, cfg, err)
	}
	return nil
}

// speaksHTTP2 reports whether the member at ep answers HTTP/2 over plain
// TCP, as an etcd without TLS does.
func speaksHTTP2(ctx context.Context, ep string) bool {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ep)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	frame, err := http2Answer(ctx, conn)
	return err == nil && frame[3] == 0x4 // a SETTINGS frame
}

// http2Answer sends HTTP/2's client preface and reads the header of the
// first frame the server answers with, within a second.
func http2Answer(ctx context.Context, conn net.Conn) ([9]byte, error) {
	var frame [9]byte
	deadline := clock.Kernel.Now().Add(time.Second) // a network deadline
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return frame, err
	}
	_, err := io.ReadFull(conn, frame[:])
	return frame, err
}

// tlsError says what a failed handshake means and which flags mend it; nil
// when err is not about TLS (a member closing, a timeout).
func tlsError(ep string, cfg *tls.Config, err error) error {
	var (
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		header    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &authority) && cfg.RootCAs == nil:
		return fmt.Errorf("%w: etcd at %s shows a certificate signed by a CA this host does not trust (%w): give --cacert the CA that signed etcd's certificate", ErrTLS, ep, err)
	case errors.As(err, &authority):
		return fmt.Errorf("%w: etcd at %s shows a certificate that the CA given by --cacert did not sign (%w): give --cacert the CA that signed etcd's certificate", ErrTLS, ep, err)
	case errors.As(err, &hostname):
		return fmt.Errorf("%w: etcd at %s shows a certificate for another name (%w): name the member in the store URL as its certificate does", ErrTLS, ep, err)
	case errors.As(err, &invalid):
		return fmt.Errorf("%w: etcd at %s shows a certificate that is not valid (%w)", ErrTLS, ep, err)
	case errors.As(err, &header):
		return fmt.Errorf("%w: etcd at %s does not speak TLS: drop --cacert, --cert and --key, or serve clients over TLS", ErrTLS, ep)
	case remoteAlert(err):
		if len(cfg.Certificates) == 0 {
			return fmt.Errorf("%w: etcd at %s asks for a client certificate (%w): give --cert and --key, a certificate signed by the CA etcd trusts (its --trusted-ca-file)", ErrTLS, ep, err)
		}
		return fmt.Errorf("%w: etcd at %s refused this client's certificate (%w): give --cert and --key a certificate signed by the CA etcd trusts (its --trusted-ca-file)", ErrTLS, ep, err)
	}
	return nil
}

// remoteAlert reports whether err is the member's TLS alert: it refused the
// handshake.
func remoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && strings.HasPrefix(op.Err.Error(), "tls: ")
}
