package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

// DEBUG SLEEP stops the whole server as Redis's does (its event loop
// sleeps): other clients and the cluster bus wait until it ends. Redis's
// tests/cluster makes nodes time out that way (06, 10).
func TestDebugSleepStopsTheServer(t *testing.T) {
	n := startClusterTestServer(t, "", "--enable-debug-command", "yes")
	sleeper, other := dialTest(t, n.srv), dialTest(t, n.srv)
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	// The sleep starts after sent: neither the bus nor the other client may
	// run before sent+1s (a lower bound, whatever the machine's load).
	sent := time.Now()
	sleeper.send("DEBUG", "SLEEP", "1")
	testharness.WaitFor(t, 5*time.Second, "DEBUG SLEEP to close the execution gate and hold the bus", func() bool {
		n.srv.mu.Lock()
		defer n.srv.mu.Unlock()
		for _, c := range n.srv.clients {
			if c.tx.busHeld.Load() {
				return n.srv.tx.gate.closed.Load()
			}
		}
		return false
	})
	busAt := make(chan time.Time, 1)
	go func() {
		release := n.srv.cluster.Hold() // what the bus's own loop takes for each step
		busAt <- time.Now()
		release()
	}()
	other.send("PING")
	if got := other.readWithin(10 * time.Second); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if d := time.Since(sent); d < time.Second {
		t.Errorf("another client was served %v into a 1 s DEBUG SLEEP", d)
	}
	if got := sleeper.readWithin(10 * time.Second); got != "+OK\r\n" {
		t.Fatalf("DEBUG SLEEP = %q", got)
	}
	select {
	case at := <-busAt:
		if d := at.Sub(sent); d < time.Second {
			t.Errorf("the cluster bus ran %v into a 1 s DEBUG SLEEP", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cluster bus stayed held after DEBUG SLEEP")
	}

	// Inside a transaction holding CLUSTER commands (which holds the bus
	// itself) DEBUG SLEEP must not take the bus a second time.
	sleeper.do("MULTI")
	sleeper.do("CLUSTER", "BUMPEPOCH")
	sleeper.do("DEBUG", "SLEEP", "0.1")
	if got := sleeper.readWithinDo(10*time.Second, "EXEC"); !strings.HasSuffix(got, "+OK\r\n") {
		t.Fatalf("EXEC = %q", got)
	}
}

func (tc *testConn) readWithinDo(d time.Duration, args ...string) string {
	tc.t.Helper()
	tc.send(args...)
	return tc.readWithin(d)
}

func TestDebugClusterSubcommands(t *testing.T) {
	a := startClusterTestServer(t, "", "--enable-debug-command", "yes", "--cluster-node-timeout", "1000")
	b := startClusterTestServer(t, "", "--enable-debug-command", "yes", "--cluster-node-timeout", "1000")
	ac, bc := dialTest(t, a.srv), dialTest(t, b.srv)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1"}, "+OK\r\n"},
		{[]string{"DEBUG", "DROP-CLUSTER-PACKET-FILTER", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"DEBUG", "CLUSTERLINK", "KILL", "to", "0123456789012345678901234567890123456789"},
			"-ERR Unknown node 0123456789012345678901234567890123456789\r\n"},
		{[]string{"DEBUG", "CLUSTERLINK", "KILL", "to"}, ""},
	} {
		got := ac.do(tc.args...)
		if tc.want == "" {
			if !strings.HasPrefix(got, "-ERR unknown subcommand or wrong number of arguments for 'CLUSTERLINK'") {
				t.Errorf("%q = %q", tc.args, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}

	bID := bulkBody(t, bc.do("CLUSTER", "MYID"))
	aID := bulkBody(t, ac.do("CLUSTER", "MYID"))
	ac.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.cport))
	testharness.WaitFor(t, 10*time.Second, "the handshake", func() bool {
		an, bn := bulkBody(t, ac.do("CLUSTER", "NODES")), bulkBody(t, bc.do("CLUSTER", "NODES"))
		return strings.Contains(an, bID) && strings.Contains(bn, aID) && !strings.Contains(an, "handshake") &&
			!strings.Contains(bn, "handshake")
	})
	// Both drop PINGs: nothing flows between them and, after node-timeout,
	// each flags the other PFAIL; without the filter they recover.
	ac.do("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "0")
	bc.do("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "0")
	testharness.WaitFor(t, 15*time.Second, "PFAIL on both sides", func() bool {
		return strings.Contains(bulkBody(t, ac.do("CLUSTER", "NODES")), "fail?") &&
			strings.Contains(bulkBody(t, bc.do("CLUSTER", "NODES")), "fail?")
	})
	ac.do("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1")
	bc.do("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1")
	testharness.WaitFor(t, 15*time.Second, "PFAIL cleared", func() bool {
		return !strings.Contains(bulkBody(t, ac.do("CLUSTER", "NODES")), "fail?") &&
			!strings.Contains(bulkBody(t, bc.do("CLUSTER", "NODES")), "fail?")
	})
	testharness.WaitFor(t, 10*time.Second, "two links with b", func() bool {
		return strings.Count(ac.do("CLUSTER", "LINKS"), bID) == 2
	})
	if got := ac.do("DEBUG", "CLUSTERLINK", "KILL", "to", bID); got != "+OK\r\n" {
		t.Fatalf("CLUSTERLINK KILL = %q", got)
	}
	testharness.WaitFor(t, 10*time.Second, "the link to b made again", func() bool {
		return strings.Count(ac.do("CLUSTER", "LINKS"), bID) == 2
	})
}

func TestDebugClusterLinkWithoutCluster(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	if got := tc.do("DEBUG", "CLUSTERLINK", "KILL", "to", "x"); got != "-ERR Debug option only available for cluster mode enabled setup!\r\n" {
		t.Errorf("CLUSTERLINK KILL = %q", got)
	}
	if got := tc.do("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "1"); got != "+OK\r\n" {
		t.Errorf("DROP-CLUSTER-PACKET-FILTER = %q", got)
	}
}
