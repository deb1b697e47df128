package metrics

import (
	"errors"
	"net"
	"syscall"

	"github.com/chronos-gpu/chronos/core/human"
)

// ListenProblem says why an address could not be listened on.
func ListenProblem(err error) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "the address is in use (another exporter, or another chronos serving metrics there?)"
	case errors.Is(err, syscall.EACCES):
		return "ports below 1024 need root; choose another, such as 9400"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "this machine has no such address"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "no such host " + human.Quote(dns.Name)
	}
	return err.Error()
}
