package node

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Standalone FAILOVER: its refusals; a failover to the named replica
// (writes paused, the replica takes over by a partial resync, the old
// master follows it); a TIMEOUT without FORCE that the stopped-up replica
// never meets aborts; FAILOVER ABORT and REPLICAOF while failing over.
func TestStandaloneFailover(t *testing.T) {
	ms, rs := startReplServer(t), startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	if got := m.do("FAILOVER"); got != "-ERR FAILOVER requires connected replicas.\r\n" {
		t.Fatalf("FAILOVER without replicas = %q", got)
	}
	if got := m.do("FAILOVER", "ABORT"); got != "-ERR No failover in progress.\r\n" {
		t.Fatalf("FAILOVER ABORT = %q", got)
	}
	// Test servers run with port 0: each announces the port it got.
	for _, c := range []struct {
		conn *testConn
		srv  *Server
	}{{m, ms}, {r, rs}} {
		c.conn.do("CONFIG", "SET", "replica-announce-port", strconv.Itoa(c.srv.Addr().(*net.TCPAddr).Port))
	}
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	// The port the replica announced (REPLCONF listening-port), as INFO shows it.
	_, rport, _ := strings.Cut(infoField(t, m, "replication", "slave0"), ",port=")
	rport, _, _ = strings.Cut(rport, ",")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAILOVER", "TO", "127.0.0.1", "1"}, "-ERR FAILOVER target HOST and PORT is not a replica.\r\n"},
		{[]string{"FAILOVER", "FORCE", "TIMEOUT", "100"}, "-ERR FAILOVER with force option requires both a timeout and target HOST and IP.\r\n"},
		{[]string{"FAILOVER", "TO", "127.0.0.1", rport, "FORCE"}, "-ERR FAILOVER with force option requires both a timeout and target HOST and IP.\r\n"},
		{[]string{"FAILOVER", "TIMEOUT", "0"}, "-ERR FAILOVER timeout must be greater than 0\r\n"},
	} {
		if got := m.do(tc.args...); got != tc.want {
			t.Fatalf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := r.do("FAILOVER"); got != "-ERR FAILOVER is not valid when server is a replica.\r\n" {
		t.Fatalf("FAILOVER on a replica = %q", got)
	}

	m.do("SET", "k", "v")
	partial := infoField(t, r, "stats", "sync_partial_ok")
	if got := m.do("FAILOVER", "TO", "127.0.0.1", rport); got != "+OK\r\n" {
		t.Fatalf("FAILOVER TO the replica = %q", got)
	}
	replWaitFor(t, 15*time.Second, "the failover to end", func() bool {
		return infoField(t, m, "replication", "master_failover_state") == "no-failover"
	})
	if !strings.HasPrefix(m.do("ROLE"), "*5\r\n$5\r\nslave\r\n") || !strings.HasPrefix(r.do("ROLE"), "*3\r\n$6\r\nmaster\r\n") {
		t.Fatalf("roles after the failover: old master %q, old replica %q", m.do("ROLE"), r.do("ROLE"))
	}
	waitInSync(t, r, m)
	if got := infoField(t, r, "stats", "sync_partial_ok"); got == partial {
		t.Fatalf("the old master did not continue by a partial resync (sync_partial_ok still %s)", got)
	}
	if got := m.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET k on the old master = %q", got)
	}

	// Now r is the master. Its replica m never catches up while the
	// master's offset moves past what m acknowledged: m's link is held
	// by DEBUG SLEEP, so TIMEOUT without FORCE aborts.
	r.do("SET", "k2", "v")
	sleeper := dialTest(t, ms)
	sleeper.send("DEBUG", "SLEEP", "2")
	time.Sleep(100 * time.Millisecond)
	r.do("SET", "k3", "v")
	if got := r.do("FAILOVER", "TIMEOUT", "300"); got != "+OK\r\n" {
		t.Fatalf("FAILOVER TIMEOUT 300 = %q", got)
	}
	if got := r.do("REPLICAOF", "NO", "ONE"); got != "-ERR REPLICAOF not allowed while failing over.\r\n" {
		t.Fatalf("REPLICAOF while failing over = %q", got)
	}
	replWaitFor(t, 15*time.Second, "the timed-out failover to abort", func() bool {
		return infoField(t, r, "replication", "master_failover_state") == "no-failover"
	})
	if !strings.HasPrefix(r.do("ROLE"), "*3\r\n$6\r\nmaster\r\n") {
		t.Fatalf("after an aborted failover the master is %q", r.do("ROLE"))
	}
	if got := r.do("SET", "k4", "v"); got != "+OK\r\n" {
		t.Fatalf("writes after the abort = %q", got)
	}
	sleeper.read()

	// FAILOVER ABORT while waiting for a replica held back.
	sleeper.send("DEBUG", "SLEEP", "2")
	time.Sleep(100 * time.Millisecond)
	r.do("SET", "k5", "v")
	if got := r.do("FAILOVER", "TIMEOUT", "60000"); got != "+OK\r\n" {
		t.Fatalf("FAILOVER TIMEOUT 60000 = %q", got)
	}
	if got := infoField(t, r, "replication", "master_failover_state"); got != "waiting-for-sync" {
		t.Fatalf("master_failover_state = %q", got)
	}
	if got := r.do("GET", "k5"); got != "$1\r\nv\r\n" {
		t.Fatalf("reads while failing over = %q", got)
	}
	if got := r.do("FAILOVER", "ABORT"); got != "+OK\r\n" {
		t.Fatalf("FAILOVER ABORT = %q", got)
	}
	if got := infoField(t, r, "replication", "master_failover_state"); got != "no-failover" {
		t.Fatalf("master_failover_state after ABORT = %q", got)
	}
	sleeper.read()
}
