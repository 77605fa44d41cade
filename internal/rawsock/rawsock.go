// Package rawsock serves a TCP connection's reads and writes with raw system
// calls.
//
// The socket is non-blocking (the runtime's netpoller waits for readiness,
// through the socket's syscall.RawConn), so read and write never block. The
// ordinary path wraps each in the runtime's entersyscall/exitsyscall, and a
// system call entered while every P is idle wakes the runtime's sysmon
// thread, which then polls every 20 µs until the process is idle again. A
// node answering one request at a time (redis-benchmark -P 1, a replica
// applying its master's stream) goes idle between almost every request, so
// each request paid a futex wake of sysmon, its nanosleeps and their context
// switches: about one context switch per request on a 3+3 cluster's master,
// against 0.16 for redis-server. Raw calls leave sysmon asleep (the same
// reason as the cluster bus's raw UDP calls, gossip/udp_raw_linux.go).
package rawsock

import "net"

// Wrap returns c with raw reads and writes where they are built (a plain
// *net.TCPConn on Linux), else c itself. The result still has every method
// of *net.TCPConn but is not one: code that needs the socket itself asks
// for TCP.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	if w := wrapTCP(tc); w != nil {
		return w
	}
	return c
}

// TCP is the *net.TCPConn under c (wrapped or not), or nil.
func TCP(c net.Conn) *net.TCPConn {
	switch t := c.(type) {
	case *net.TCPConn:
		return t
	case *Conn:
		return t.TCPConn
	}
	return nil
}
