// Package netdial dials outgoing TCP connections from a chosen source
// address (bind-source-addr), best effort as Redis's
// anetTcpNonBlockBestEffortBindConnect: when the source address cannot be
// bound, the connection is made from the address the kernel picks.
package netdial

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Dial connects to addr ("host:port") within timeout (0 = none) or until
// ctx ends, from source when it is not "" (an IP address or a host name;
// the port is chosen by the kernel).
func Dial(ctx context.Context, addr, source string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if source == "" {
		return d.DialContext(ctx, "tcp", addr)
	}
	local, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(source, "0"))
	if err != nil {
		return d.DialContext(ctx, "tcp", addr) // an unresolvable source binds nothing
	}
	bound := d
	bound.LocalAddr = local
	conn, err := bound.DialContext(ctx, "tcp", addr)
	if err != nil && bindFailed(err) {
		return d.DialContext(ctx, "tcp", addr)
	}
	return conn, err
}

// bindFailed reports whether the dial failed binding its source address
// (not connecting): the address is not local, is in use, or does not fit
// the destination's family.
func bindFailed(err error) bool {
	var mismatch *net.AddrError // Go's "mismatched local address type"
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EADDRINUSE) ||
		errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EINVAL) || errors.As(err, &mismatch)
}
