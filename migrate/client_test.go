package migrate

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/store"
)

// scriptedTarget accepts one connection and answers each request line
// starting with '*' by reply(command name); it returns its address.
func scriptedTarget(t *testing.T, reply func(cmd string) string) (host, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "*") {
				return
			}
			argc, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			var name string
			for i := 0; i < argc; i++ {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
				buf := make([]byte, n+2)
				if _, err := io.ReadFull(r, buf); err != nil {
					return
				}
				if i == 0 {
					name = string(buf[:n])
				}
			}
			if _, err := conn.Write([]byte(reply(name))); err != nil {
				return
			}
		}
	}()
	h, p, _ := net.SplitHostPort(ln.Addr().String())
	return h, p
}

func oneKey() []Key {
	db := store.New(1, nil, nil).DB(0)
	return []Key{{Name: []byte("k"), Entry: db.SetString([]byte("k"), []byte("v"), false)}}
}

// The target's acknowledgement acks the key; its error reply is MIGRATE's
// error, Redis's words, and acks nothing.
func TestMigrateClientReplies(t *testing.T) {
	now := func() int64 { return time.Now().UnixMilli() }
	var cache ConnCache
	defer cache.CloseAll()

	host, port := scriptedTarget(t, func(string) string { return "+OK\r\n" })
	var acked []string
	err := cache.Migrate(Request{Host: host, Port: port, DB: 3, Timeout: 5 * time.Second}, oneKey(), now,
		func(k []byte) { acked = append(acked, string(k)) })
	if err != nil || len(acked) != 1 || acked[0] != "k" {
		t.Fatalf("migrate: %v, acked %q", err, acked)
	}
	if n := cache.Size(); n != 1 {
		t.Errorf("cached connections %d, want 1", n)
	}

	host, port = scriptedTarget(t, func(cmd string) string {
		if cmd == "RESTORE" {
			return "-BUSYKEY Target key name already exists.\r\n"
		}
		return "+OK\r\n"
	})
	acked = nil
	err = cache.Migrate(Request{Host: host, Port: port, Timeout: 5 * time.Second}, oneKey(), now,
		func(k []byte) { acked = append(acked, string(k)) })
	if err == nil || err.Error() != "ERR Target instance replied with error: BUSYKEY Target key name already exists." || len(acked) != 0 {
		t.Fatalf("migrate to a refusing target: %v, acked %q", err, acked)
	}
}

// A target nobody listens on fails as a write, as Redis's non-blocking
// connect does, after the one retry.
func TestMigrateClientRefusedTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	var cache ConnCache
	err = cache.Migrate(Request{Host: host, Port: port, Timeout: time.Second}, oneKey(),
		func() int64 { return 0 }, func([]byte) { t.Error("acked") })
	if err == nil || err.Error() != "IOERR error or timeout writing to target instance" {
		t.Fatalf("got %v", err)
	}
	if n := cache.Size(); n != 0 {
		t.Errorf("cached connections %d, want 0", n)
	}
}
