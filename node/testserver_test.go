package node

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/internal/testharness"
)

// This file is the shared helper for tests that talk to a real in-process
// server over 127.0.0.1: startTestServer starts one (port 0, stopped when
// the test ends) and dialTest opens a raw RESP connection whose replies are
// returned byte for byte, so that tests can compare them with what Redis
// sends.

// testIOTimeout bounds every read and write of a test connection: 10 s,
// stretched by SHOAL_TEST_SLACK (make test: 30 s), so that a loaded
// machine does not turn a slow reply into an i/o timeout.
var testIOTimeout = testharness.Slack(10 * time.Second)

// startTestServer starts a server configured with the given command-line
// style options (e.g. "--maxclients", "5") on a free loopback port.
func startTestServer(t testing.TB, opts ...string) *Server {
	t.Helper()
	// Its own directory: a SAVE, BGSAVE or shutdown save must not write
	// dump.rdb into the package directory (a later --dir in opts wins).
	// Full syncs start at once (repl-diskless-sync-delay 0), as in Redis's
	// own test configuration.
	args := append([]string{"--port", "0", "--bind", "127.0.0.1", "--save", "", "--dir", t.TempDir(),
		"--repl-diskless-sync-delay", "0"}, opts...)
	// A cluster node on port 0 would put its bus on 0+10000: every such
	// test server in the process would take port 10000. Give it a free one.
	if slices.ContainsFunc(opts, func(o string) bool { return strings.EqualFold(o, "--cluster-enabled") }) &&
		!slices.Contains(opts, "--cluster-port") {
		args = append(args, "--cluster-port", strconv.Itoa(testharness.TCPPort(t)))
	}
	cfg, err := config.Load(args)
	if err != nil {
		t.Fatalf("config.Load(%q): %v", args, err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// testConn is a raw RESP connection to a test server.
type testConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

// dialTest connects to s; the connection is closed when the test ends.
func dialTest(t testing.TB, s *Server) *testConn {
	t.Helper()
	return dialTestAddr(t, s.Addr().String())
}

// dialTestAddr connects to any RESP server (tests also use it to talk to a
// real redis-server).
func dialTestAddr(t testing.TB, addr string) *testConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testIOTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &testConn{t: t, c: c, r: bufio.NewReader(c)}
}

// encodeCommand encodes args as a RESP multibulk request.
func encodeCommand(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// send writes one request without reading the reply.
func (tc *testConn) send(args ...string) {
	tc.t.Helper()
	tc.writeRaw(encodeCommand(args...))
}

// writeRaw writes bytes as they are (inline commands, broken protocol).
func (tc *testConn) writeRaw(b []byte) {
	tc.t.Helper()
	_ = tc.c.SetWriteDeadline(time.Now().Add(testIOTimeout))
	if _, err := tc.c.Write(b); err != nil {
		tc.t.Fatalf("write: %v", err)
	}
}

// do sends one command and returns its reply's raw bytes.
func (tc *testConn) do(args ...string) string {
	tc.t.Helper()
	tc.send(args...)
	return tc.read()
}

// diskIOTimeout bounds a reply that waits for the disk (SAVE's fsync): on
// a machine whose disk other jobs keep busy that takes longer than a
// network round trip may.
var diskIOTimeout = testharness.Slack(60 * time.Second)

// doDisk is do for a command whose reply waits for the disk.
func (tc *testConn) doDisk(args ...string) string {
	tc.t.Helper()
	tc.send(args...)
	return tc.readWithin(diskIOTimeout)
}

// read returns the next reply's raw bytes (RESP2 or RESP3).
func (tc *testConn) read() string {
	tc.t.Helper()
	return tc.readWithin(testIOTimeout)
}

// bulkBody returns the payload of a raw bulk or verbatim string reply.
func bulkBody(t testing.TB, raw string) string {
	t.Helper()
	if !strings.HasPrefix(raw, "$") && !strings.HasPrefix(raw, "=") {
		t.Fatalf("not a bulk reply: %q", raw)
	}
	i := strings.Index(raw, "\r\n")
	body := raw[i+2 : len(raw)-2]
	if raw[0] == '=' {
		body = body[4:]
	}
	return body
}

// serveSlots makes the cluster-enabled server tc talks to serve the slot
// ranges given (CLUSTER ADDSLOTSRANGE's arguments; every slot when none)
// and waits for cluster_state:ok.
func serveSlots(t testing.TB, tc *testConn, ranges ...string) {
	t.Helper()
	if len(ranges) == 0 {
		ranges = []string{"0", "16383"}
	}
	if got := tc.do(append([]string{"CLUSTER", "ADDSLOTSRANGE"}, ranges...)...); got != "+OK\r\n" {
		t.Fatalf("CLUSTER ADDSLOTSRANGE %v: %q", ranges, got)
	}
	testharness.WaitFor(t, 10*time.Second, "cluster_state:ok", func() bool {
		return strings.Contains(tc.do("CLUSTER", "INFO"), "cluster_state:ok")
	})
}
