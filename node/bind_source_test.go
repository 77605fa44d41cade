package node

import (
	"strings"
	"testing"
	"time"
)

// bind-source-addr: the replica's link to its master leaves from it (the
// master sees the replica at 127.0.0.2), and a source address that cannot
// be bound falls back to the kernel's choice (Redis's best-effort bind).
func TestBindSourceAddrReplicationLink(t *testing.T) {
	ms := startReplServer(t, "--protected-mode", "no")
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	if got := r.do("CONFIG", "SET", "bind-source-addr", "127.0.0.2"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind-source-addr = %q", got)
	}
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	if got := infoField(t, m, "replication", "slave0"); !strings.Contains(got, "ip=127.0.0.2,") {
		t.Fatalf("master's slave0 = %q, want ip=127.0.0.2", got)
	}

	// 192.0.2.1 (TEST-NET-1) is not a local address: the link still comes up.
	r.do("REPLICAOF", "NO", "ONE")
	r.do("CONFIG", "SET", "bind-source-addr", "192.0.2.1")
	replicaOf(t, r, ms)
	replWaitFor(t, 15*time.Second, "link up despite an unbindable source", func() bool {
		return infoField(t, r, "replication", "master_link_status") == "up"
	})
	replWaitFor(t, 15*time.Second, "the master sees the replica at 127.0.0.1", func() bool {
		return strings.Contains(infoField(t, m, "replication", "slave0"), "ip=127.0.0.1,")
	})
}
