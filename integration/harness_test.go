package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupBuild()
	os.Exit(code)
}

// TestHarnessSmoke starts one server and checks that it answers PING, through
// go-redis and through redis-cli. It is skipped only while cmd/shoal-server
// does not build; once it does, every check here is a real assertion.
func TestHarnessSmoke(t *testing.T) {
	BuildServer(t) // skips the test if cmd/shoal-server does not build yet
	s := StartServer(t)

	if !strings.Contains(s.Log(), "Ready to accept connections") {
		t.Fatalf("log lacks the ready line:\n%s", s.Log())
	}
	if s.PID() == 0 || !s.Running() {
		t.Fatalf("server not running (pid %d)", s.PID())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{
		Addr:            s.Addr,
		Protocol:        2,    // plain RESP2: the handshake is nothing but the PING below
		DisableIdentity: true, // no CLIENT SETINFO on connect
		DialTimeout:     5 * time.Second,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
		MaxRetries:      -1,
	})
	defer rdb.Close()
	pong, err := rdb.Ping(ctx).Result()
	if err != nil {
		t.Fatalf("go-redis PING %s: %v", s.Addr, err)
	}
	if pong != "PONG" {
		t.Fatalf("go-redis PING = %q, want PONG", pong)
	}

	out, err := RedisCLI(t, s, "PING")
	if err != nil {
		t.Fatalf("redis-cli PING: %v", err)
	}
	if out != "PONG" {
		t.Fatalf("redis-cli PING = %q, want PONG", out)
	}
}

// TestHarnessRestartKill checks the harness's own process handling: Restart
// brings the server back on the same port with a new process, Kill stops it.
func TestHarnessRestartKill(t *testing.T) {
	BuildServer(t)
	s := StartServer(t)
	pid, port := s.PID(), s.Port

	s.Restart()
	if s.Port != port {
		t.Fatalf("port changed across Restart: %d -> %d", port, s.Port)
	}
	if s.PID() == pid || !s.Running() {
		t.Fatalf("after Restart: pid %d (was %d), running=%v", s.PID(), pid, s.Running())
	}
	if n := strings.Count(s.Log(), "Ready to accept connections"); n != 2 {
		t.Fatalf("want 2 ready lines in the log after one restart, got %d", n)
	}
	if out, err := RedisCLI(t, s, "PING"); err != nil || out != "PONG" {
		t.Fatalf("redis-cli PING after Restart = %q, %v", out, err)
	}

	s.Kill()
	if s.Running() {
		t.Fatalf("server still running after Kill")
	}
	if out, err := RedisCLI(t, s, "PING"); err == nil && out == "PONG" {
		t.Fatalf("server still answers after Kill")
	}
}
