package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// protectedModeDenied is Redis 7.0.15's clientAcceptHandler reply to a
// non-local client in protected mode (with its "Setup a an").
const protectedModeDenied = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// netnsPeer is a network namespace joined to the root namespace by a veth
// pair: hostAddr on the root side, the namespace's own address on the other.
type netnsPeer struct {
	ns       string
	hostAddr string
}

// run runs a command with a 10 s limit and returns its combined output.
func runCmd(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// newNetnsPeer creates the namespace and the veth pair (names and a /30 of
// 10.213.0.0/16 derived from the process id) and removes both when the test
// ends. It skips the test, with the reason, when that cannot be done (not
// root, no ip(8), no netns support, the addresses are taken).
func newNetnsPeer(t *testing.T) *netnsPeer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip(8) not found")
	}
	id := os.Getpid() % 16000
	ns := "shoalpm" + strconv.Itoa(id)
	host, peer := "shpm"+strconv.Itoa(id)+"h", "shpm"+strconv.Itoa(id)+"p" // <= 15 bytes
	hostAddr := fmt.Sprintf("10.213.%d.%d", id/64, (id%64)*4+1)
	peerAddr := fmt.Sprintf("10.213.%d.%d", id/64, (id%64)*4+2)
	// Cleanup first, so that a half-made setup is removed too (deleting
	// one end of a veth pair deletes both).
	t.Cleanup(func() {
		_, _ = runCmd("ip", "link", "del", host)
		_, _ = runCmd("ip", "netns", "del", ns)
	})
	if out, err := runCmd("ip", "netns", "add", ns); err != nil {
		t.Skipf("cannot create a network namespace: %v (%s)", err, out)
	}
	steps := [][]string{
		{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", ns},
		{"ip", "addr", "add", hostAddr + "/30", "dev", host},
		{"ip", "link", "set", host, "up"},
		{"ip", "netns", "exec", ns, "ip", "addr", "add", peerAddr + "/30", "dev", peer},
		{"ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"},
		{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
	}
	for _, st := range steps {
		if _, err := runCmd(st[0], st[1:]...); err != nil {
			t.Skipf("cannot set up the veth pair: %v", err)
		}
	}
	return &netnsPeer{ns: ns, hostAddr: hostAddr}
}

// cli runs redis-cli inside the namespace against the server's host-side
// address.
func (p *netnsPeer) cli(t *testing.T, port int, args ...string) string {
	t.Helper()
	full := append([]string{"netns", "exec", p.ns, "redis-cli", "-h", p.hostAddr, "-p", strconv.Itoa(port)}, args...)
	out, err := runCmd("ip", full...)
	if err != nil {
		t.Fatalf("redis-cli from the namespace: %v", err)
	}
	return strings.TrimRight(out, "\n")
}

// greeting connects from inside the namespace, sends nothing, and returns
// the bytes the server sends before it closes the connection ("" if it
// keeps it open for 2 s: accepted).
func (p *netnsPeer) greeting(t *testing.T, port int) string {
	t.Helper()
	script := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d && timeout 2 cat <&3", p.hostAddr, port)
	out, err := runCmd("ip", "netns", "exec", p.ns, "bash", "-c", script)
	if err != nil && !strings.Contains(err.Error(), "exit status 124") {
		t.Fatalf("raw connection from the namespace: %v", err)
	}
	return out
}

// TestProtectedModeRemote: a node bound to a non-loopback address with
// protected-mode yes and no password denies a client of another network
// namespace with Redis's exact text and closes the connection; with a
// password the client is let in (and asked to authenticate); with
// protected-mode no it is served. Loopback clients are served throughout.
func TestProtectedModeRemote(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not found")
	}
	p := newNetnsPeer(t)
	s := StartServer(t, "--bind", "127.0.0.1 "+p.hostAddr, "--protected-mode", "yes")

	if got := p.greeting(t, s.Port); got != protectedModeDenied {
		t.Fatalf("a remote client of a node in protected mode got\n%q\nwant\n%q", got, protectedModeDenied)
	}
	if got := p.cli(t, s.Port, "PING"); !strings.HasPrefix(got, "DENIED Redis is running in protected mode") {
		t.Fatalf("redis-cli PING from the namespace: %q", got)
	}
	if got, err := RedisCLI(t, s, "PING"); err != nil || got != "PONG" {
		t.Fatalf("loopback PING: %q %v", got, err)
	}

	if got, err := RedisCLI(t, s, "CONFIG", "SET", "requirepass", "s3cret"); err != nil || got != "OK" {
		t.Fatalf("CONFIG SET requirepass: %q %v", got, err)
	}
	if got := p.greeting(t, s.Port); got != "" {
		t.Fatalf("with a password a remote client was sent %q", got)
	}
	if got := p.cli(t, s.Port, "PING"); got != "NOAUTH Authentication required." {
		t.Fatalf("remote PING with requirepass: %q", got)
	}
	if got := p.cli(t, s.Port, "--no-auth-warning", "-a", "s3cret", "PING"); got != "PONG" {
		t.Fatalf("remote PING after AUTH: %q", got)
	}

	if got, err := RedisCLI(t, s, "--no-auth-warning", "-a", "s3cret", "CONFIG", "SET", "requirepass", ""); err != nil || got != "OK" {
		t.Fatalf("CONFIG SET requirepass '': %q %v", got, err)
	}
	if got := p.greeting(t, s.Port); got != protectedModeDenied {
		t.Fatalf("password removed again: a remote client got %q", got)
	}
	if got, err := RedisCLI(t, s, "CONFIG", "SET", "protected-mode", "no"); err != nil || got != "OK" {
		t.Fatalf("CONFIG SET protected-mode no: %q %v", got, err)
	}
	if got := p.cli(t, s.Port, "PING"); got != "PONG" {
		t.Fatalf("remote PING with protected-mode no: %q", got)
	}
}
