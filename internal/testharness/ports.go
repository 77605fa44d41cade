package testharness

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeBusPort returns a port that was free on 127.0.0.1 for both TCP and
// UDP a moment ago: the cluster bus (memberlist) listens on both.
func FreeBusPort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port, nil
		}
	}
	return 0, errors.New("no port free for both TCP and UDP on 127.0.0.1")
}

// TCPPort is FreePort for a test: it fails the test when there is none.
func TCPPort(t testing.TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("no free port: %v", err)
	}
	return port
}

// BusPort is FreeBusPort for a test: it fails the test when there is none.
func BusPort(t testing.TB) int {
	t.Helper()
	port, err := FreeBusPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
