package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// TestClusterReadonlyScriptRoutingMatchesRedis: on a READONLY connection to
// a replica, a script that declares writes (a shebang without no-writes, a
// function registered without it) is redirected to the master with MOVED,
// as Redis's getNodeByQuery does with the script's flags (getCommandFlags);
// a script without a shebang runs on the replica and its write fails inside
// it; no-writes scripts are served. In MULTI the redirect comes at queueing.
func TestClusterReadonlyScriptRoutingMatchesRedis(t *testing.T) {
	const key = "k126" // slot 58, served by the pair's master (0-100)
	const lib = "#!lua name=routelib\n" +
		"redis.register_function('wfn', function(k) return redis.call('set', k[1], '1') end)\n" +
		"redis.register_function{function_name='rfn', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}"
	script := [][]string{
		{"READONLY"},
		{"EVAL", "#!lua\nreturn redis.call('set', KEYS[1], '1')", "1", key},
		{"EVAL_RO", "#!lua\nreturn redis.call('get', KEYS[1])", "1", key},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", key},
		{"EVAL", "return redis.call('set', KEYS[1], '1')", "1", key},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", key},
		{"FCALL", "wfn", "1", key},
		{"FCALL_RO", "wfn", "1", key},
		{"FCALL", "rfn", "1", key},
		{"FCALL_RO", "rfn", "1", key},
		{"MULTI"},
		{"EVAL", "#!lua\nreturn redis.call('set', KEYS[1], '1')", "1", key},
		{"EXEC"},
		{"READWRITE"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", key},
	}
	type pair struct {
		a, b *testConn
		norm func(string) string
	}
	build := func(ac, bc *testConn, aPort, aCPort int) pair {
		aID := bulkBody(t, ac.do("CLUSTER", "MYID"))
		bID := bulkBody(t, bc.do("CLUSTER", "MYID"))
		for _, c := range []*testConn{ac, bc} {
			// The pair serves slots 0-100 only.
			require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "cluster-require-full-coverage", "no"))
		}
		formPair(t, ac, bc, aPort, aCPort, aID, bID)
		testharness.WaitFor(t, 20*time.Second, "cluster_state:ok on the replica", func() bool {
			return strings.Contains(bulkBody(t, bc.do("CLUSTER", "INFO")), "cluster_state:ok")
		})
		require.Equal(t, "$8\r\nroutelib\r\n", ac.do("FUNCTION", "LOAD", lib))
		// The library reaches the replica through replication.
		testharness.WaitFor(t, 20*time.Second, "the library on the replica", func() bool {
			return strings.Contains(bc.do("FUNCTION", "LIST"), "routelib")
		})
		return pair{a: ac, b: bc, norm: normalizer(strconv.Itoa(aPort), "<APORT>")}
	}
	r1, r1p, r1c := startRealClusterRedis(t)
	r2, _, _ := startRealClusterRedis(t)
	o1 := startClusterTestServer(t, "")
	o2 := startClusterTestServer(t, "")
	real := build(dialTestAddr(t, r1), dialTestAddr(t, r2), r1p, r1c)
	ours := build(dialTest(t, o1.srv), dialTest(t, o2.srv), o1.port, o1.cport)
	for _, step := range script {
		want, got := real.norm(real.b.do(step...)), ours.norm(ours.b.do(step...))
		require.Equal(t, want, got, "%q", strings.Join(step, " "))
	}
}

// TestClusterShardChannelsOnOpenSlotMatchRedis: while slot 58 migrates
// from A to B, A still serves its shard channels (Redis checks no key for
// SPUBLISH/SSUBSCRIBE, so there is no ASK); B serves them only after
// ASKING.
func TestClusterShardChannelsOnOpenSlotMatchRedis(t *testing.T) {
	const channel = "k126" // slot 58
	type masters struct {
		a, b *testConn
		norm func(string) string
	}
	build := func(ac, bc *testConn, aPort, aCPort, bPort int) masters {
		aID := bulkBody(t, ac.do("CLUSTER", "MYID"))
		bID := bulkBody(t, bc.do("CLUSTER", "MYID"))
		formMasters(t, ac, bc, aPort, aCPort, aID, bID) // a serves slot 58
		require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SETSLOT", "58", "MIGRATING", bID))
		require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "SETSLOT", "58", "IMPORTING", aID))
		return masters{a: ac, b: bc, norm: normalizer(strconv.Itoa(aPort), "<APORT>", strconv.Itoa(bPort), "<BPORT>")}
	}
	r1, r1p, r1c := startRealClusterRedis(t)
	r2, r2p, _ := startRealClusterRedis(t)
	o1 := startClusterTestServer(t, "")
	o2 := startClusterTestServer(t, "")
	real := build(dialTestAddr(t, r1), dialTestAddr(t, r2), r1p, r1c, r2p)
	ours := build(dialTest(t, o1.srv), dialTest(t, o2.srv), o1.port, o1.cport, o2.port)
	steps := []struct {
		onB bool
		cmd []string
	}{
		{false, []string{"SPUBLISH", channel, "hello"}},
		{false, []string{"GET", channel}}, // a key: ASK (it is not here)
		{true, []string{"SPUBLISH", channel, "hello"}},
		{true, []string{"ASKING"}},
		{true, []string{"SPUBLISH", channel, "hello"}},
		{false, []string{"SSUBSCRIBE", channel}},
	}
	for _, st := range steps {
		run := func(m masters) string {
			if st.onB {
				return m.norm(m.b.do(st.cmd...))
			}
			return m.norm(m.a.do(st.cmd...))
		}
		require.Equal(t, run(real), run(ours), "on B %v: %q", st.onB, st.cmd)
	}
}

// TestClusterSlotsOmitsLoadingReplica: a replica whose full sync is still
// loading announces offset 0 (Redis's replicationGetSlaveOffset has no
// master client yet), so its master's CLUSTER SLOTS leaves it out until the
// sync is done.
func TestClusterSlotsOmitsLoadingReplica(t *testing.T) {
	a, b := startClusterTestServer(t, ""), startClusterTestServer(t, "")
	ac, bc := dialTest(t, a.srv), dialTest(t, b.srv)
	aID, bID := bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID"))
	for _, c := range []*testConn{ac, bc} {
		require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "cluster-require-full-coverage", "no"))
	}
	formPair(t, ac, bc, a.port, a.cport, aID, bID)
	testharness.WaitFor(t, 20*time.Second, "cluster_state:ok", func() bool {
		return strings.Contains(bulkBody(t, ac.do("CLUSTER", "INFO")), "cluster_state:ok")
	})
	require.Equal(t, "+OK\r\n", ac.do("SET", "k126", "v")) // slot 58: a non-zero offset to replicate
	listed := func() bool { return strings.Contains(ac.do("CLUSTER", "SLOTS"), bID) }
	testharness.WaitFor(t, 20*time.Second, "the synced replica in the master's CLUSTER SLOTS", listed)

	b.srv.repl.rep.SetSyncing(true) // a full sync in progress (loading)
	testharness.WaitFor(t, 20*time.Second, "the loading replica to leave CLUSTER SLOTS", func() bool { return !listed() })
	require.Contains(t, ac.do("CLUSTER", "SHARDS"), "loading")
	b.srv.repl.rep.SetSyncing(false)
	testharness.WaitFor(t, 20*time.Second, "the replica back in CLUSTER SLOTS", listed)
}

// TestClusterReplicatePreconditionsMatchRedis: CLUSTER REPLICATE's refusals
// in Redis's order and words: an unknown or malformed id, myself, a replica
// as the target, a master with keys (and no slots) or with slots.
func TestClusterReplicatePreconditionsMatchRedis(t *testing.T) {
	type side struct {
		a, b, x *testConn // a master (0-100), its replica, a third master
		norm    func(string) string
		aID     string
		bID     string
		xID     string
	}
	build := func(ac, bc, xc *testConn, aPort, aCPort int) side {
		sd := side{a: ac, b: bc, x: xc}
		sd.aID = bulkBody(t, ac.do("CLUSTER", "MYID"))
		sd.bID = bulkBody(t, bc.do("CLUSTER", "MYID"))
		sd.xID = bulkBody(t, xc.do("CLUSTER", "MYID"))
		formPair(t, ac, bc, aPort, aCPort, sd.aID, sd.bID)
		require.Equal(t, "+OK\r\n", xc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(aPort), strconv.Itoa(aCPort)))
		testharness.WaitFor(t, 20*time.Second, "the third node to know the pair's roles", func() bool {
			n := bulkBody(t, xc.do("CLUSTER", "NODES"))
			return strings.Contains(n, "slave "+sd.aID) && strings.Contains(n, "0-100") && !strings.Contains(n, "handshake")
		})
		// The pair learns the third node through gossip (a replica moves to
		// it below): wait until both list it, out of handshake.
		testharness.WaitFor(t, 20*time.Second, "the pair to know the third node", func() bool {
			for _, c := range []*testConn{ac, bc} {
				n := bulkBody(t, c.do("CLUSTER", "NODES"))
				if !strings.Contains(n, sd.xID) || strings.Contains(n, "handshake") {
					return false
				}
			}
			return true
		})
		sd.norm = normalizer(sd.aID, "<A>", sd.bID, "<B>", sd.xID, "<X>")
		return sd
	}
	debug := []string{"--enable-debug-command", "yes"}
	r1, r1p, r1c := startRealClusterRedis(t, debug...)
	r2, _, _ := startRealClusterRedis(t, debug...)
	r3, _, _ := startRealClusterRedis(t, debug...)
	o1, o2, o3 := startClusterTestServer(t, "", debug...), startClusterTestServer(t, "", debug...), startClusterTestServer(t, "", debug...)
	real := build(dialTestAddr(t, r1), dialTestAddr(t, r2), dialTestAddr(t, r3), r1p, r1c)
	ours := build(dialTest(t, o1.srv), dialTest(t, o2.srv), dialTest(t, o3.srv), o1.port, o1.cport)
	steps := []struct {
		on  func(side) *testConn
		cmd []string
	}{
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "0000000000000000000000000000000000000000"}},
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "NOT-AN-ID"}},
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "<X>"}},
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "<B>"}},
		{func(s side) *testConn { return s.x }, []string{"DEBUG", "POPULATE", "3"}},
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "<A>"}}, // keys, no slots
		{func(s side) *testConn { return s.x }, []string{"FLUSHALL"}},
		{func(s side) *testConn { return s.a }, []string{"CLUSTER", "REPLICATE", "<X>"}}, // slots
		{func(s side) *testConn { return s.b }, []string{"CLUSTER", "REPLICATE", "<B>"}},
		{func(s side) *testConn { return s.b }, []string{"CLUSTER", "REPLICATE", "<X>"}}, // a replica moves freely
		{func(s side) *testConn { return s.x }, []string{"CLUSTER", "REPLICATE", "<A>"}}, // empty now
	}
	for _, st := range steps {
		run := func(sd side) string {
			args := make([]string, len(st.cmd))
			for i, a := range st.cmd {
				args[i] = strings.NewReplacer("<A>", sd.aID, "<B>", sd.bID, "<X>", sd.xID).Replace(a)
			}
			return sd.norm(st.on(sd).do(args...))
		}
		require.Equal(t, run(real), run(ours), "%q", st.cmd)
	}
}
