package node

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// Tests of the CLUSTER command family: standalone refusal, byte-exact
// replies against a real redis-server 7.0 cluster node (RESP2 and RESP3,
// one node and a master with a replica), and the parts only shoal can show
// (keys in slots, the SETSLOT key check, persistence of SAVECONFIG).

// clusterTestNode is an in-process cluster-enabled server.
type clusterTestNode struct {
	srv   *Server
	addr  string
	port  int
	cport int
	dir   string
}

// startClusterTestServer starts a cluster-enabled server on free client and
// bus ports, with nodes.conf in its own temporary directory. dir, when not
// empty, is reused (a restart from the same nodes.conf).
func startClusterTestServer(t testing.TB, dir string, opts ...string) *clusterTestNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var lastErr error
	for range 5 {
		port, cport := testharness.BusPort(t), testharness.BusPort(t)
		if port == cport {
			continue
		}
		args := append([]string{"--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(cport),
			"--bind", "127.0.0.1", "--save", "", "--dir", dir, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf"}, opts...)
		cfg, err := config.Load(args)
		if err != nil {
			t.Fatalf("config.Load(%q): %v", args, err)
		}
		s, err := New(cfg, Options{})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if err := s.Listen(); err != nil {
			lastErr = err
			s.Shutdown()
			continue
		}
		t.Cleanup(s.Shutdown)
		return &clusterTestNode{srv: s, addr: s.Addr().String(), port: port, cport: cport, dir: dir}
	}
	t.Fatalf("could not start a cluster node: %v", lastErr)
	return nil
}

// startRealClusterRedis starts redis-server 7.0 with cluster-enabled on free
// ports (skipping the test without it) and returns its address and ports.
// cluster-announce-ip gives its myself line the IP shoal shows from --bind
// (a fresh Redis node learns its IP only from a peer).
func startRealClusterRedis(t *testing.T, opts ...string) (addr string, port, cport int) {
	t.Helper()
	cport = testharness.BusPort(t)
	addr = startRealRedis(t, append([]string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(cport),
		"--cluster-announce-ip", "127.0.0.1", "--cluster-config-file", "nodes.conf"}, opts...)...)
	_, p, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(p)
	return addr, port, cport
}

// renderReply writes v back in a canonical text form, with every string
// leaf passed through norm (lengths are recomputed, so replacements of
// different lengths are fine); a null bulk is "<nil>".
func renderReply(v testharness.Reply, norm func(string) string) string {
	var b strings.Builder
	renderReplyTo(&b, v, norm)
	return b.String()
}

func renderReplyTo(b *strings.Builder, v testharness.Reply, norm func(string) string) {
	switch v.Kind {
	case '*', '%', '~', '>':
		fmt.Fprintf(b, "%c%d[", v.Kind, len(v.Elems))
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			renderReplyTo(b, e, norm)
		}
		b.WriteByte(']')
	default:
		str := v.Str
		if v.Null {
			str = "<nil>"
		}
		fmt.Fprintf(b, "%c%q", v.Kind, norm(str))
	}
}

// nodeTimes matches the ping_sent and pong_recv fields of a CLUSTER NODES
// line; they are clock readings.
var nodeTimes = regexp.MustCompile(`(?m)^([0-9a-f]{40} \S+ \S+ \S+) \d+ \d+ `)

// normalizer replaces each given string by its placeholder and masks the
// times of CLUSTER NODES lines.
func normalizer(pairs ...string) func(string) string {
	r := strings.NewReplacer(pairs...)
	return func(s string) string {
		return r.Replace(nodeTimes.ReplaceAllString(s, "$1 <t> <t> "))
	}
}

func TestClusterDisabledInStandalone(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	id := strings.Repeat("a", 40)
	for _, cmd := range [][]string{
		{"CLUSTER", "HELP"}, {"CLUSTER", "INFO"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SLOTS"},
		{"CLUSTER", "SHARDS"}, {"CLUSTER", "MYID"}, {"CLUSTER", "KEYSLOT", "k"},
		{"CLUSTER", "COUNTKEYSINSLOT", "1"}, {"CLUSTER", "GETKEYSINSLOT", "1", "1"},
		{"CLUSTER", "MEET", "127.0.0.1", "1"}, {"CLUSTER", "MEET", "a", "b", "c", "d"},
		{"CLUSTER", "ADDSLOTS", "1"}, {"CLUSTER", "ADDSLOTSRANGE", "1", "2"},
		{"CLUSTER", "DELSLOTS", "1"}, {"CLUSTER", "DELSLOTSRANGE", "1", "2"}, {"CLUSTER", "FLUSHSLOTS"},
		{"CLUSTER", "REPLICATE", id}, {"CLUSTER", "REPLICAS", id}, {"CLUSTER", "SLAVES", id},
		{"CLUSTER", "SET-CONFIG-EPOCH", "1"}, {"CLUSTER", "BUMPEPOCH"}, {"CLUSTER", "RESET"},
		{"CLUSTER", "RESET", "bad"}, {"CLUSTER", "FORGET", id}, {"CLUSTER", "SAVECONFIG"},
		{"CLUSTER", "LINKS"}, {"CLUSTER", "COUNT-FAILURE-REPORTS", id},
		{"CLUSTER", "SETSLOT", "1", "STABLE"},
	} {
		require.Equal(t, "-ERR This instance has cluster support disabled\r\n", tc.do(cmd...), "%q", cmd)
	}
	// Arity is checked before the command runs, as in Redis.
	require.Equal(t, "-ERR wrong number of arguments for 'cluster|myid' command\r\n", tc.do("CLUSTER", "MYID", "x"))
	// INFO's Cluster section.
	require.Contains(t, tc.do("INFO", "cluster"), "# Cluster\r\ncluster_enabled:0\r\n")
}

// singleNodeScript is sent to a fresh cluster node of each kind; the
// replies must match once ids and ports are replaced.
var singleNodeScript = [][]string{
	{"CLUSTER", "MYID"},
	{"CLUSTER", "NODES"},
	{"CLUSTER", "SLOTS"},
	{"CLUSTER", "SHARDS"},
	{"CLUSTER", "LINKS"},
	{"CLUSTER", "HELP"},
	{"CLUSTER", "KEYSLOT", "foo{bar}"}, {"CLUSTER", "KEYSLOT", ""}, {"CLUSTER", "KEYSLOT", "{}x"},
	{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, {"CLUSTER", "COUNTKEYSINSLOT", "abc"},
	{"CLUSTER", "COUNTKEYSINSLOT", "-1"}, {"CLUSTER", "COUNTKEYSINSLOT", "0"},
	{"CLUSTER", "GETKEYSINSLOT", "1", "-1"}, {"CLUSTER", "GETKEYSINSLOT", "x", "1"},
	{"CLUSTER", "GETKEYSINSLOT", "1", "x"}, {"CLUSTER", "GETKEYSINSLOT", "16384", "1"},
	{"CLUSTER", "GETKEYSINSLOT", "0", "10"}, {"CLUSTER", "GETKEYSINSLOT", "0", "9223372036854775807"},
	{"CLUSTER", "MEET", "127.0.0.1", "abc"}, {"CLUSTER", "MEET", "127.0.0.1", "1", "abc"},
	{"CLUSTER", "MEET", "1.2.3", "1"}, {"CLUSTER", "MEET", "127.0.0.1", "0"},
	{"CLUSTER", "MEET", "127.0.0.1", "70000"}, {"CLUSTER", "MEET", "127.0.0.1", "7000", "0"},
	{"CLUSTER", "MEET", "a", "b", "c", "d"}, {"CLUSTER", "MEET", "a"},
	{"CLUSTER", "ADDSLOTS", "16384"}, {"CLUSTER", "ADDSLOTS", "abc"}, {"CLUSTER", "ADDSLOTS", "1", "1"},
	{"CLUSTER", "ADDSLOTS", "1", "x"}, {"CLUSTER", "ADDSLOTS"},
	{"CLUSTER", "DELSLOTS", "1"},
	{"CLUSTER", "ADDSLOTSRANGE", "1"}, {"CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"},
	{"CLUSTER", "ADDSLOTSRANGE", "5", "2"}, {"CLUSTER", "ADDSLOTSRANGE", "1", "3", "2", "4"},
	{"CLUSTER", "ADDSLOTSRANGE", "1", "16384"},
	{"CLUSTER", "DELSLOTSRANGE", "1", "2"}, {"CLUSTER", "DELSLOTSRANGE", "1", "2", "3"},
	{"CLUSTER", "SETSLOT", "1", "STABLE"}, {"CLUSTER", "SETSLOT", "1", "migrating", "abc"},
	{"CLUSTER", "SETSLOT", "1", "IMPORTING", "abc"}, {"CLUSTER", "SETSLOT", "1", "node", "abc"},
	{"CLUSTER", "SETSLOT", "1", "foo"}, {"CLUSTER", "SETSLOT", "1", "stable", "x"},
	{"CLUSTER", "SETSLOT", "1", "node"}, {"CLUSTER", "SETSLOT", "99999", "stable"},
	{"CLUSTER", "SETSLOT", "x", "stable"}, {"CLUSTER", "SETSLOT", "1"},
	{"CLUSTER", "SET-CONFIG-EPOCH", "-1"}, {"CLUSTER", "SET-CONFIG-EPOCH", "x"},
	{"CLUSTER", "RESET", "foo"}, {"CLUSTER", "RESET", "soft", "extra"},
	{"CLUSTER", "FORGET", "abc"}, {"CLUSTER", "REPLICATE", "abc"}, {"CLUSTER", "REPLICAS", "abc"},
	{"CLUSTER", "SLAVES", "abc"}, {"CLUSTER", "COUNT-FAILURE-REPORTS", "abc"},
	{"CLUSTER", "HELP", "extra"}, {"CLUSTER", "NOSUCH"}, {"CLUSTER", "FLUSHSLOTS", "x"},
	{"CLUSTER", "INFO", "x"}, {"CLUSTER"},
	{"CLUSTER", "BUMPEPOCH"}, {"CLUSTER", "BUMPEPOCH"},
	{"CLUSTER", "SET-CONFIG-EPOCH", "5"},
	{"CLUSTER", "RESET", "SOFT"}, {"CLUSTER", "RESET"},
	{"CLUSTER", "SET-CONFIG-EPOCH", "5"}, {"CLUSTER", "SET-CONFIG-EPOCH", "6"},
	{"CLUSTER", "BUMPEPOCH"},
	{"CLUSTER", "ADDSLOTS", "0", "1", "2", "5", "16383"},
	{"CLUSTER", "ADDSLOTSRANGE", "10", "20", "100", "200"},
	{"CLUSTER", "ADDSLOTS", "3", "5"}, {"CLUSTER", "ADDSLOTSRANGE", "21", "30", "30", "31"},
	{"CLUSTER", "SETSLOT", "0", "stable"}, {"CLUSTER", "SETSLOT", "0", "migrating", "abc"},
	{"CLUSTER", "SETSLOT", "5000", "importing", "abc"}, {"CLUSTER", "SETSLOT", "0", "importing", "abc"},
	{"CLUSTER", "SETSLOT", "4000", "migrating", "abc"},
	{"CLUSTER", "SETSLOT", "6000", "node", "<me>"},
	{"CLUSTER", "SETSLOT", "6001", "migrating", "<me>"},
	{"CLUSTER", "SETSLOT", "6000", "migrating", "<me>"},
	{"CLUSTER", "SETSLOT", "7000", "importing", "<me>"},
	{"CLUSTER", "NODES"},
	{"CLUSTER", "SETSLOT", "6000", "stable"},
	{"CLUSTER", "SETSLOT", "6000", "node", "<me>"},
	{"CLUSTER", "SETSLOT", "7000", "stable"},
	{"CLUSTER", "NODES"},
	{"CLUSTER", "SLOTS"},
	{"CLUSTER", "SHARDS"},
	{"CLUSTER", "REPLICAS", "<me>"}, {"CLUSTER", "SLAVES", "<me>"},
	{"CLUSTER", "COUNT-FAILURE-REPORTS", "<me>"},
	{"CLUSTER", "FORGET", "<me>"},
	{"CLUSTER", "REPLICATE", "<me>"},
	{"CLUSTER", "SAVECONFIG"},
	{"CLUSTER", "BUMPEPOCH"},
	{"CLUSTER", "COUNTKEYSINSLOT", "0"},
	{"CLUSTER", "DELSLOTS", "0", "0"}, {"CLUSTER", "DELSLOTS", "0", "3"},
	{"CLUSTER", "DELSLOTSRANGE", "10", "12", "11", "13"},
	{"CLUSTER", "DELSLOTSRANGE", "10", "12", "16383", "16383"},
	{"CLUSTER", "NODES"},
	{"CLUSTER", "FLUSHSLOTS"},
	{"CLUSTER", "SLOTS"},
	{"CLUSTER", "SHARDS"},
	{"CLUSTER", "ADDSLOTSRANGE", "0", "16383"},
	{"CLUSTER", "SLOTS"},
	{"CLUSTER", "DELSLOTSRANGE", "0", "16383"},
	{"CLUSTER", "RESET", "HARD"},
	{"CLUSTER", "NODES"},
	{"CLUSTER", "SHARDS"},
	{"HELLO", "3"},
	{"CLUSTER", "NODES"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "LINKS"},
	{"CLUSTER", "MYID"}, {"CLUSTER", "KEYSLOT", "x"}, {"CLUSTER", "HELP"}, {"CLUSTER", "BUMPEPOCH"},
	{"CLUSTER", "ADDSLOTSRANGE", "0", "99", "200", "299"}, {"CLUSTER", "SETSLOT", "50", "migrating", "<me>"},
	{"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "NODES"},
	{"CLUSTER", "REPLICAS", "<me>"}, {"CLUSTER", "GETKEYSINSLOT", "0", "5"},
	{"CLUSTER", "COUNT-FAILURE-REPORTS", "<me>"},
	{"CLUSTER", "MEET", "127.0.0.1", "x"},
}

// TestClusterCommandsMatchRedis runs singleNodeScript on a fresh shoal
// cluster node and a fresh redis-server cluster node. Both nodes are first
// taken past Redis's 2 s writable delay (cluster_size and cluster_state are
// frozen before it), then CLUSTER INFO is compared too.
func TestClusterCommandsMatchRedis(t *testing.T) {
	realAddr, realPort, realCPort := startRealClusterRedis(t)
	ours := startClusterTestServer(t, "")
	rc := dialTestAddr(t, realAddr)
	oc := dialTest(t, ours.srv)
	realID := bulkBody(t, rc.do("CLUSTER", "MYID"))
	ourID := bulkBody(t, oc.do("CLUSTER", "MYID"))

	// CLUSTER INFO of a fresh node, inside the writable delay and after.
	require.Equal(t, rc.do("CLUSTER", "INFO"), oc.do("CLUSTER", "INFO"))
	time.Sleep(2200 * time.Millisecond)
	require.Equal(t, rc.do("CLUSTER", "INFO"), oc.do("CLUSTER", "INFO"))

	for _, cmd := range singleNodeScript {
		run := func(tc *testConn, myID string) string {
			args := make([]string, len(cmd))
			for i, a := range cmd {
				args[i] = strings.ReplaceAll(a, "<me>", myID)
			}
			return tc.do(args...)
		}
		want := run(rc, realID)
		got := run(oc, ourID)
		if len(cmd) == 2 && cmd[1] == "HELP" {
			want = withExtensionHelp(t, want)
		}
		if cmd[0] == "HELLO" {
			// Server fields differ (ids, modules list); only the type.
			require.Equal(t, want[:1], got[:1])
			continue
		}
		if len(cmd) > 1 && strings.EqualFold(cmd[1], "RESET") && strings.HasPrefix(want, "+") {
			// RESET HARD takes a new random id on both.
			realID = bulkBody(t, rc.do("CLUSTER", "MYID"))
			ourID = bulkBody(t, oc.do("CLUSTER", "MYID"))
		}
		wantN := renderReply(testharness.ParseReply(t, want), normalizer(realID, "<ID>", strconv.Itoa(realCPort), "<CPORT>", strconv.Itoa(realPort), "<PORT>"))
		gotN := renderReply(testharness.ParseReply(t, got), normalizer(ourID, "<ID>", strconv.Itoa(ours.cport), "<CPORT>", strconv.Itoa(ours.port), "<PORT>"))
		require.Equal(t, wantN, gotN, "%q\nredis: %q\nshoal: %q", cmd, want, got)
	}
	require.Equal(t, rc.do("CLUSTER", "INFO"), oc.do("CLUSTER", "INFO"))
}

// TestClusterEndpointTypesMatchRedis compares CLUSTER SLOTS, SHARDS and
// NODES under each cluster-preferred-endpoint-type, with and without a
// cluster-announce-hostname, in RESP2 and RESP3.
func TestClusterEndpointTypesMatchRedis(t *testing.T) {
	for _, hostname := range []string{"", "node-a.example"} {
		t.Run("hostname="+hostname, func(t *testing.T) {
			var opts []string
			if hostname != "" {
				opts = []string{"--cluster-announce-hostname", hostname}
			}
			realAddr, realPort, realCPort := startRealClusterRedis(t, opts...)
			ours := startClusterTestServer(t, "", opts...)
			rc, oc := dialTestAddr(t, realAddr), dialTest(t, ours.srv)
			realID := bulkBody(t, rc.do("CLUSTER", "MYID"))
			ourID := bulkBody(t, oc.do("CLUSTER", "MYID"))
			realNorm := normalizer(realID, "<ID>", strconv.Itoa(realCPort), "<CPORT>", strconv.Itoa(realPort), "<PORT>")
			ourNorm := normalizer(ourID, "<ID>", strconv.Itoa(ours.cport), "<CPORT>", strconv.Itoa(ours.port), "<PORT>")
			for _, c := range []*testConn{rc, oc} {
				require.Equal(t, "+OK\r\n", c.do("CLUSTER", "ADDSLOTSRANGE", "0", "10", "100", "200"))
			}
			for _, proto := range []string{"2", "3"} {
				for _, kind := range []string{"ip", "hostname", "unknown-endpoint"} {
					for _, cmd := range [][]string{
						{"HELLO", proto}, {"CONFIG", "SET", "cluster-preferred-endpoint-type", kind},
						{"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "NODES"},
					} {
						want, got := rc.do(cmd...), oc.do(cmd...)
						if cmd[0] == "HELLO" {
							require.Equal(t, want[:1], got[:1])
							continue
						}
						require.Equal(t, renderReply(testharness.ParseReply(t, want), realNorm), renderReply(testharness.ParseReply(t, got), ourNorm),
							"%s %q\nredis: %q\nshoal: %q", kind, cmd, want, got)
					}
				}
			}
		})
	}
}

// pairScript is sent after a master (A, owning slots 0-100) and its replica
// (B) have formed a cluster; <a>/<b> are their ids. The first connection is
// to A, the second to B.
var pairScript = []struct {
	onB bool
	cmd []string
}{
	{false, []string{"CLUSTER", "REPLICAS", "<a>"}},
	{false, []string{"CLUSTER", "SLAVES", "<a>"}},
	{false, []string{"CLUSTER", "REPLICAS", "<b>"}},
	{false, []string{"CLUSTER", "COUNT-FAILURE-REPORTS", "<b>"}},
	{false, []string{"CLUSTER", "SETSLOT", "5", "MIGRATING", "<b>"}},
	{false, []string{"CLUSTER", "SETSLOT", "500", "IMPORTING", "<b>"}},
	{false, []string{"CLUSTER", "SETSLOT", "500", "NODE", "<b>"}},
	{false, []string{"CLUSTER", "REPLICATE", "<b>"}},
	{false, []string{"CLUSTER", "REPLICATE", "<a>"}},
	{false, []string{"CLUSTER", "SET-CONFIG-EPOCH", "9"}},
	{false, []string{"CLUSTER", "FLUSHSLOTS", "x"}},
	{true, []string{"CLUSTER", "SETSLOT", "5", "STABLE"}},
	{true, []string{"CLUSTER", "FORGET", "<a>"}},
	{true, []string{"CLUSTER", "FORGET", "<b>"}},
	{true, []string{"CLUSTER", "REPLICATE", "<b>"}},
	{true, []string{"CLUSTER", "REPLICAS", "<b>"}},
	{true, []string{"CLUSTER", "COUNT-FAILURE-REPORTS", "<a>"}},
	{true, []string{"CLUSTER", "ADDSLOTS", "5"}},
	{true, []string{"CLUSTER", "ADDSLOTS", "500"}},
	{true, []string{"CLUSTER", "DELSLOTS", "500"}},
	{true, []string{"CLUSTER", "BUMPEPOCH"}},
	{true, []string{"CLUSTER", "MYID"}},
}

// formPair makes b a replica of a (a owning 0-100): SET-CONFIG-EPOCH,
// ADDSLOTS, MEET, REPLICATE, and waits until both sides agree.
func formPair(t *testing.T, ac, bc *testConn, aPort, aCPort int, aID, bID string) {
	t.Helper()
	// Distinct config epochs, as redis-cli --cluster create sets them:
	// otherwise the epoch collision rule (the smaller id bumps) makes the
	// epochs depend on the random ids and on timing.
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SET-CONFIG-EPOCH", "1"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "SET-CONFIG-EPOCH", "2"))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "ADDSLOTSRANGE", "0", "100"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(aPort), strconv.Itoa(aCPort)))
	testharness.WaitFor(t, 10*time.Second, "the handshake", func() bool {
		an := bulkBody(t, ac.do("CLUSTER", "NODES"))
		bn := bulkBody(t, bc.do("CLUSTER", "NODES"))
		return strings.Contains(an, bID) && strings.Contains(bn, aID) &&
			!strings.Contains(an, "handshake") && !strings.Contains(bn, "handshake") &&
			strings.Contains(bn, "0-100")
	})
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "REPLICATE", aID))
	testharness.WaitFor(t, 10*time.Second, "the replica to show on the master", func() bool {
		return strings.Contains(bulkBody(t, ac.do("CLUSTER", "NODES")), "slave "+aID)
	})
}

func TestClusterPairMatchesRedis(t *testing.T) {
	type side struct {
		a, b   *testConn
		aID    string
		bID    string
		norm   func(string) string
		aNodes string
	}
	build := func(ac, bc *testConn, aPort, aCPort, bPort, bCPort int) *side {
		sd := &side{a: ac, b: bc}
		sd.aID = bulkBody(t, ac.do("CLUSTER", "MYID"))
		sd.bID = bulkBody(t, bc.do("CLUSTER", "MYID"))
		formPair(t, ac, bc, aPort, aCPort, sd.aID, sd.bID)
		sd.norm = normalizer(sd.aID, "<A>", sd.bID, "<B>", strconv.Itoa(aCPort), "<ACPORT>",
			strconv.Itoa(bCPort), "<BCPORT>", strconv.Itoa(aPort), "<APORT>", strconv.Itoa(bPort), "<BPORT>")
		return sd
	}
	r1, r1p, r1c := startRealClusterRedis(t)
	r2, r2p, r2c := startRealClusterRedis(t)
	o1 := startClusterTestServer(t, "")
	o2 := startClusterTestServer(t, "")
	real := build(dialTestAddr(t, r1), dialTestAddr(t, r2), r1p, r1c, r2p, r2c)
	ours := build(dialTest(t, o1.srv), dialTest(t, o2.srv), o1.port, o1.cport, o2.port, o2.cport)

	for _, step := range pairScript {
		run := func(sd *side) string {
			args := make([]string, len(step.cmd))
			for i, a := range step.cmd {
				args[i] = strings.NewReplacer("<a>", sd.aID, "<b>", sd.bID).Replace(a)
			}
			if step.onB {
				return sd.b.do(args...)
			}
			return sd.a.do(args...)
		}
		want, got := run(real), run(ours)
		require.Equal(t, renderReply(testharness.ParseReply(t, want), real.norm), renderReply(testharness.ParseReply(t, got), ours.norm),
			"%v %q\nredis: %q\nshoal: %q", step.onB, step.cmd, want, got)
	}

	// The topology as NODES shows it, line by line (order is not fixed).
	sortedLines := func(s string) []string {
		l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		slices.Sort(l)
		return l
	}
	for _, onB := range []bool{false, true} {
		pick := func(sd *side) *testConn {
			if onB {
				return sd.b
			}
			return sd.a
		}
		want := sortedLines(real.norm(bulkBody(t, pick(real).do("CLUSTER", "NODES"))))
		got := sortedLines(ours.norm(bulkBody(t, pick(ours).do("CLUSTER", "NODES"))))
		require.Equal(t, want, got)
	}

	// CLUSTER SHARDS: the same entries with the replication offsets masked
	// (Redis's replica really replicates; shoal's does not yet, so its
	// replica stays at offset 0, health "loading").
	maskOffsets := func(v testharness.Reply) string {
		s := renderReply(v, func(x string) string { return x })
		return regexp.MustCompile(`"replication-offset" :"\d+" \$"\w+"`).ReplaceAllString(s, `"replication-offset" :"<off>" $$"<health>"`)
	}
	for _, c := range [][2]*testConn{{real.a, ours.a}, {real.b, ours.b}} {
		want := testharness.ParseReply(t, c[0].do("CLUSTER", "SHARDS"))
		got := testharness.ParseReply(t, c[1].do("CLUSTER", "SHARDS"))
		require.Equal(t, real.norm(maskOffsets(want)), ours.norm(maskOffsets(got)))
	}

	// CLUSTER SLOTS lists a replica only once it has replicated something
	// (offset ≠ 0): shoal's replica has not.
	got := renderReply(testharness.ParseReply(t, ours.a.do("CLUSTER", "SLOTS")), ours.norm)
	require.Equal(t, `*1[*3[:"0" :"100" *4[$"127.0.0.1" :"<APORT>" $"<A>" *0[]]]]`, got)

	// CLUSTER LINKS: the same shape (two links per peer in Redis once both
	// sides have connected).
	for _, c := range []*testConn{ours.a, ours.b} {
		v := testharness.ParseReply(t, c.do("CLUSTER", "LINKS"))
		require.Equal(t, byte('*'), v.Kind)
		for _, l := range v.Elems {
			require.Len(t, l.Elems, 12)
			keys := []string{l.Elems[0].Str, l.Elems[2].Str, l.Elems[4].Str, l.Elems[6].Str, l.Elems[8].Str, l.Elems[10].Str}
			require.Equal(t, []string{"direction", "node", "create-time", "events", "send-buffer-allocated", "send-buffer-used"}, keys)
			require.Equal(t, byte(':'), l.Elems[5].Kind)
		}
	}
}

// TestClusterKeysInSlots covers what needs keys: COUNTKEYSINSLOT,
// GETKEYSINSLOT, the SETSLOT NODE key check, and the "must be empty"
// refusals of FLUSHSLOTS, REPLICATE and RESET.
func TestClusterKeysInSlots(t *testing.T) {
	a := startClusterTestServer(t, "")
	b := startClusterTestServer(t, "")
	ac, bc := dialTest(t, a.srv), dialTest(t, b.srv)
	aID := bulkBody(t, ac.do("CLUSTER", "MYID"))
	bID := bulkBody(t, bc.do("CLUSTER", "MYID"))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(a.port), strconv.Itoa(a.cport)))
	testharness.WaitFor(t, 10*time.Second, "the handshake", func() bool {
		an := bulkBody(t, ac.do("CLUSTER", "NODES"))
		return strings.Contains(an, bID) && !strings.Contains(an, "handshake")
	})

	// Three keys in one slot, one in another. Writes go straight to the
	// keyspace: the cluster state may not be ok yet (rejoin delay).
	slot := slots.KeySlot([]byte("{t}"))
	for _, k := range []string{"{t}a", "{t}b", "{t}c", "other"} {
		setKeyDirect(a.srv, k)
	}
	s := strconv.Itoa(int(slot))
	require.Equal(t, ":3\r\n", ac.do("CLUSTER", "COUNTKEYSINSLOT", s))
	require.Equal(t, ":0\r\n", ac.do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slot)+1)))
	for _, n := range []int{0, 2, 3, 100} {
		v := testharness.ParseReply(t, ac.do("CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(n)))
		require.Len(t, v.Elems, min(n, 3))
		for _, e := range v.Elems {
			require.True(t, strings.HasPrefix(e.Str, "{t}"), e.Str)
		}
	}
	require.Equal(t, "*0\r\n", ac.do("CLUSTER", "GETKEYSINSLOT", strconv.Itoa(int(slot)+1), "9223372036854775807"))

	require.Equal(t, fmt.Sprintf("-ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.\r\n", slot),
		ac.do("CLUSTER", "SETSLOT", s, "NODE", bID))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SETSLOT", s, "MIGRATING", bID))
	require.Contains(t, bulkBody(t, ac.do("CLUSTER", "NODES")), fmt.Sprintf("[%d->-%s]", slot, bID))
	require.Equal(t, "-ERR DB must be empty to perform CLUSTER FLUSHSLOTS.\r\n", ac.do("CLUSTER", "FLUSHSLOTS"))
	require.Equal(t, "-ERR CLUSTER RESET can't be called with master nodes containing keys\r\n", ac.do("CLUSTER", "RESET"))

	// A key-holding master without slots still cannot become a replica.
	setKeyDirect(b.srv, "x")
	require.Equal(t, "-ERR To set a master the node must be empty and without assigned slots.\r\n", bc.do("CLUSTER", "REPLICATE", aID))
	delKeyDirect(b.srv, "x")
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "REPLICATE", aID))
	testharness.WaitFor(t, 10*time.Second, "the replica to show on the master", func() bool {
		return strings.Contains(bulkBody(t, ac.do("CLUSTER", "NODES")), "slave "+aID)
	})

	// Once the slot is empty, SETSLOT NODE moves it and clears MIGRATING.
	for _, k := range []string{"{t}a", "{t}b", "{t}c"} {
		delKeyDirect(a.srv, k)
	}
	require.Equal(t, "-ERR Target node is not a master\r\n", ac.do("CLUSTER", "SETSLOT", s, "NODE", bID))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SETSLOT", s, "STABLE"))
	require.NotContains(t, bulkBody(t, ac.do("CLUSTER", "NODES")), "->-")
}

// setKeyDirect and delKeyDirect change db 0 without routing (a fresh
// cluster's state stays "fail" for a while after it is complete).
func setKeyDirect(s *Server, key string) {
	db, slot := s.ks.DB(0), slots.KeySlot([]byte(key))
	db.Lock(slot)
	db.SetString([]byte(key), []byte("v"), false)
	db.Unlock(slot)
}

func delKeyDirect(s *Server, key string) {
	db, slot := s.ks.DB(0), slots.KeySlot([]byte(key))
	db.Lock(slot)
	db.Delete([]byte(key))
	db.Unlock(slot)
}

// TestClusterSaveConfigPersists checks that SAVECONFIG writes nodes.conf in
// Redis's format and that a node restarted from it keeps id, epoch and
// slots.
func TestClusterSaveConfigPersists(t *testing.T) {
	dir := t.TempDir()
	n := startClusterTestServer(t, dir)
	tc := dialTest(t, n.srv)
	id := bulkBody(t, tc.do("CLUSTER", "MYID"))
	require.Equal(t, "+OK\r\n", tc.do("CLUSTER", "SET-CONFIG-EPOCH", "7"))
	require.Equal(t, "+OK\r\n", tc.do("CLUSTER", "ADDSLOTSRANGE", "0", "10", "20", "30"))
	require.Equal(t, "+OK\r\n", tc.do("CLUSTER", "SAVECONFIG"))
	conf, err := os.ReadFile(filepath.Join(dir, "nodes.conf"))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%s 127.0.0.1:%d@%d myself,master - 0 0 7 connected 0-10 20-30\nvars currentEpoch 7 lastVoteEpoch 0\n",
		id, n.port, n.cport), string(conf))
	n.srv.Shutdown()

	again := startClusterTestServer(t, dir)
	tc2 := dialTest(t, again.srv)
	require.Equal(t, id, bulkBody(t, tc2.do("CLUSTER", "MYID")))
	require.Equal(t, fmt.Sprintf("%s 127.0.0.1:%d@%d myself,master - 0 0 7 connected 0-10 20-30\n", id, again.port, again.cport),
		bulkBody(t, tc2.do("CLUSTER", "NODES")))
	require.Contains(t, bulkBody(t, tc2.do("CLUSTER", "INFO")), "cluster_current_epoch:7\r\ncluster_my_epoch:7\r\n")
	require.Contains(t, tc2.do("INFO", "cluster"), "# Cluster\r\ncluster_enabled:1\r\n")
}

// withExtensionHelp is Redis's CLUSTER HELP reply with shoal's extension
// lines where shoal puts them: after Redis's, before the closing HELP entry.
func withExtensionHelp(t *testing.T, redisHelp string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(redisHelp, "\r\n"), "\r\n")
	n, err := strconv.Atoi(strings.TrimPrefix(lines[0], "*"))
	require.NoError(t, err)
	require.Equal(t, n, len(lines)-1)
	items := lines[1:]
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", n+len(clusterExtensionHelpLines))
	for _, l := range items[:n-2] {
		b.WriteString(l + "\r\n")
	}
	for _, l := range clusterExtensionHelpLines {
		b.WriteString("+" + l + "\r\n")
	}
	for _, l := range items[n-2:] {
		b.WriteString(l + "\r\n")
	}
	return b.String()
}
