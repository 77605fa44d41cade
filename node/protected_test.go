package node

import (
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// greetingFrom connects to addr from the source address src and returns
// everything the server sends before it closes the connection (nothing is
// sent: a request could turn the close into a reset that loses the reply).
// ok is false when the server kept the connection open (it was accepted).
func greetingFrom(t *testing.T, src, addr string) (reply string, ok bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: testIOTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot connect from %s (no 127/8 source addresses here?): %v", src, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), false // still open after a second: accepted
	}
	return string(b), true
}

// TestProtectedModeDeniesNonLocalPeers: with protected-mode yes and no
// password, Redis 7.0 denies every client whose address is not exactly
// 127.0.0.1 or ::1, even with an explicit bind (a client from 127.0.0.2
// stands in for a remote one here; integration's TestProtectedModeRemote
// uses a network namespace). The reply is compared with a real Redis's.
func TestProtectedModeDeniesNonLocalPeers(t *testing.T) {
	redisAddr := startRealRedis(t, "--protected-mode", "yes")
	want, closed := greetingFrom(t, "127.0.0.2", redisAddr)
	if !closed || !strings.HasPrefix(want, "-DENIED ") {
		t.Fatalf("redis-server's reply to a 127.0.0.2 client: %q (closed %v)", want, closed)
	}
	s := startTestServer(t, "--protected-mode", "yes")
	a := s.Addr().String()
	if got, closed := greetingFrom(t, "127.0.0.2", a); !closed || got != want {
		t.Fatalf("shoal's reply to a 127.0.0.2 client (closed %v):\n got %q\nwant %q", closed, got, want)
	}
	admin := dialTest(t, s) // 127.0.0.1: served
	info := bulkBody(t, admin.do("INFO", "stats"))
	if !regexp.MustCompile(`\brejected_connections:1\r\n`).MatchString(info) ||
		!regexp.MustCompile(`\btotal_connections_received:1\r\n`).MatchString(info) {
		t.Fatalf("INFO after one refused and one served connection: %q", info)
	}
	// A password, or protected-mode no, lets the client in.
	admin.do("CONFIG", "SET", "requirepass", "pw")
	if got, closed := greetingFrom(t, "127.0.0.2", a); closed {
		t.Fatalf("with requirepass a 127.0.0.2 client was closed: %q", got)
	}
	admin.do("AUTH", "pw")
	admin.do("CONFIG", "SET", "requirepass", "")
	admin.do("CONFIG", "SET", "protected-mode", "no")
	if got, closed := greetingFrom(t, "127.0.0.2", a); closed {
		t.Fatalf("with protected-mode no a 127.0.0.2 client was closed: %q", got)
	}
}
