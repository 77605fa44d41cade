package node

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/config"
)

// TestUnixSocket: unixsocket opens a listener at the path (a stale file
// there is replaced) with unixsocketperm; its clients are served although
// protected mode is on and there is no password (they are local), are
// listed as /unixsocket:0 as Redis lists them, and the file is removed when
// the server stops. A path that cannot be bound fails Listen.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shoal.sock")
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startTestServer(t, "--unixsocket", path, "--unixsocketperm", "700", "--protected-mode", "yes")
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket file: %v %v", st, err)
	}
	c, err := net.DialTimeout("unix", path, testIOTimeout)
	if err != nil {
		t.Fatalf("dial unix: %v", err)
	}
	defer c.Close()
	uc := &testConn{t: t, c: c, r: bufio.NewReader(c)}
	if got := uc.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING over the unix socket: %q", got)
	}
	if got := uc.do("CLIENT", "INFO"); !strings.Contains(got, " addr=/unixsocket:0 laddr=/unixsocket:0 ") {
		t.Fatalf("CLIENT INFO of a unix socket client: %q", got)
	}
	// TCP clients are served as before.
	if got := dialTest(t, s).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING over TCP: %q", got)
	}
	s.Shutdown()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file is still there after shutdown: %v", err)
	}

	bad := filepath.Join(dir, "no-such-dir", "shoal.sock")
	cfgArgs := []string{"--port", "0", "--bind", "127.0.0.1", "--save", "", "--unixsocket", bad}
	if err := listenWith(t, cfgArgs); err == nil {
		t.Fatalf("Listen with unixsocket %s succeeded", bad)
	}
}

// listenWith builds a server from command-line style args and returns what
// Listen says (the server is shut down either way).
func listenWith(t *testing.T, args []string) error {
	t.Helper()
	cfg, err := config.Load(args)
	if err != nil {
		t.Fatalf("config.Load(%q): %v", args, err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Shutdown()
	return s.Listen()
}

// TestEmptyBindListensOnNoTCPAddress: bind "" at start-up opens no TCP
// listener (Redis: only the unix socket), and with no unix socket either
// the server refuses to start, as Redis ("Configured to not listen
// anywhere").
func TestEmptyBindListensOnNoTCPAddress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shoal.sock")
	s := startTestServer(t, "--bind", "", "--unixsocket", path)
	if a := s.Addr(); a != nil {
		t.Fatalf("bind \"\" listens on %v", a)
	}
	c, err := net.DialTimeout("unix", path, testIOTimeout)
	if err != nil {
		t.Fatalf("dial unix: %v", err)
	}
	defer c.Close()
	uc := &testConn{t: t, c: c, r: bufio.NewReader(c)}
	if got := uc.do("CONFIG", "GET", "bind"); got != "*2\r\n$4\r\nbind\r\n$0\r\n\r\n" {
		t.Fatalf("CONFIG GET bind = %q", got)
	}
	err = listenWith(t, []string{"--port", "0", "--bind", "", "--save", ""})
	if err == nil || !strings.Contains(err.Error(), "Configured to not listen anywhere") {
		t.Fatalf("Listen with no address at all: %v", err)
	}
}

// TestBindThenListenWithOnlyUnixSocket: shoal-server's order (Bind, then
// LoadData, then Listen) with bind "" serves the unix socket Bind opened;
// Listen used to open it a second time (no TCP listener looked unbound)
// and leave the served one orphaned, so clients hung.
func TestBindThenListenWithOnlyUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shoal.sock")
	cfg, err := config.Load([]string{"--port", "0", "--bind", "", "--save", "", "--dir", t.TempDir(), "--unixsocket", path})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{LoadLater: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	for _, step := range []func() error{s.Bind, s.LoadData, s.Listen} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.DialTimeout("unix", path, testIOTimeout)
	if err != nil {
		t.Fatalf("dial unix: %v", err)
	}
	defer c.Close()
	uc := &testConn{t: t, c: c, r: bufio.NewReader(c)}
	if got := uc.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING over the unix socket = %q", got)
	}
}
