package netdial

import (
	"context"
	"net"
	"testing"
	"time"
)

// acceptOne listens on 127.0.0.1 and returns its address and the remote
// address of the first connection it accepts.
func acceptOne(t *testing.T) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	from := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		_ = c.Close()
	}()
	return ln.Addr().String(), from
}

func TestDialFromSource(t *testing.T) {
	for _, tc := range []struct{ source, want string }{
		{"", "127.0.0.1"},
		{"127.0.0.2", "127.0.0.2"},
		{"192.0.2.1", "127.0.0.1"}, // not a local address: best effort, unbound
		{"no-such-host.invalid", "127.0.0.1"},
	} {
		addr, from := acceptOne(t)
		c, err := Dial(context.Background(), addr, tc.source, 5*time.Second)
		if err != nil {
			t.Fatalf("source %q: %v", tc.source, err)
		}
		_ = c.Close()
		select {
		case got := <-from:
			if got != tc.want {
				t.Errorf("source %q: the peer saw %s, want %s", tc.source, got, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("source %q: no connection accepted", tc.source)
		}
	}
}
