package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// hostnameCluster is three masters with cluster-announce-hostname set,
// met and given a third of the slots each: real redis-server nodes or
// shoal ones.
type hostnameCluster struct {
	conns []*testConn
	norm  func(string) string
}

func formHostnameCluster(t *testing.T, conns []*testConn, ports, cports []int) *hostnameCluster {
	t.Helper()
	var pairs []string
	ids := make([]string, len(conns))
	ranges := [][2]string{{"0", "5460"}, {"5461", "10922"}, {"10923", "16383"}}
	for i, c := range conns {
		ids[i] = bulkBody(t, c.do("CLUSTER", "MYID"))
		pairs = append(pairs, ids[i], "<ID"+strconv.Itoa(i)+">")
		require.Equal(t, "+OK\r\n", c.do("CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)))
		require.Equal(t, "+OK\r\n", c.do("CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]))
	}
	// Bus ports first: a client port is a prefix of nothing longer.
	for i := range conns {
		pairs = append(pairs, strconv.Itoa(cports[i]), "<CPORT"+strconv.Itoa(i)+">")
	}
	for i := range conns {
		pairs = append(pairs, strconv.Itoa(ports[i]), "<PORT"+strconv.Itoa(i)+">")
	}
	for _, c := range conns[1:] {
		require.Equal(t, "+OK\r\n", c.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(ports[0]), strconv.Itoa(cports[0])))
	}
	testharness.WaitFor(t, 30*time.Second, "three nodes that know each other's hostnames", func() bool {
		for _, c := range conns {
			nodes := bulkBody(t, c.do("CLUSTER", "NODES"))
			if strings.Count(nodes, ",host-") != 3 || strings.Contains(nodes, "handshake") ||
				!strings.Contains(bulkBody(t, c.do("CLUSTER", "INFO")), "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return &hostnameCluster{conns: conns, norm: normalizer(pairs...)}
}

// compare checks that node i of both clusters answers CLUSTER SLOTS (RESP2
// and RESP3, each endpoint type) and CLUSTER NODES alike.
func compareHostnameClusters(t *testing.T, real, ours *hostnameCluster, i int) {
	t.Helper()
	rc, oc := real.conns[i], ours.conns[i]
	for _, proto := range []string{"2", "3"} {
		for _, kind := range []string{"ip", "hostname", "unknown-endpoint"} {
			for _, cmd := range [][]string{
				{"HELLO", proto}, {"CONFIG", "SET", "cluster-preferred-endpoint-type", kind}, {"CLUSTER", "SLOTS"},
			} {
				want, got := rc.do(cmd...), oc.do(cmd...)
				if cmd[0] == "HELLO" {
					continue
				}
				require.Equal(t, renderReply(testharness.ParseReply(t, want), real.norm), renderReply(testharness.ParseReply(t, got), ours.norm),
					"node %d %s %q\nredis: %q\nshoal: %q", i, kind, cmd, want, got)
			}
		}
	}
	lines := func(c *hostnameCluster, conn *testConn) []string {
		l := strings.Split(strings.TrimSuffix(c.norm(bulkBody(t, conn.do("CLUSTER", "NODES"))), "\n"), "\n")
		slices.Sort(l)
		return l
	}
	require.Equal(t, lines(real, rc), lines(ours, oc), "node %d CLUSTER NODES", i)
}

// TestClusterHostnamesMatchRedis: three nodes with cluster-announce-hostname
// show every node's hostname — gossiped, not only their own — in CLUSTER
// SLOTS (metadata, or the endpoint with cluster-preferred-endpoint-type
// hostname) and CLUSTER NODES (",hostname" after the bus port) exactly as
// redis-server 7.0 does, and CONFIG SET cluster-announce-hostname reaches
// the other nodes.
func TestClusterHostnamesMatchRedis(t *testing.T) {
	var rconns, oconns []*testConn
	var rports, rcports, oports, ocports []int
	for i := 0; i < 3; i++ {
		host := []string{"--cluster-announce-hostname", "host-" + strconv.Itoa(i) + ".example.com", "--cluster-node-timeout", "3000"}
		addr, p, cp := startRealClusterRedis(t, host...)
		rconns, rports, rcports = append(rconns, dialTestAddr(t, addr)), append(rports, p), append(rcports, cp)
		o := startClusterTestServer(t, "", host...)
		oconns, oports, ocports = append(oconns, dialTest(t, o.srv)), append(oports, o.port), append(ocports, o.cport)
	}
	real := formHostnameCluster(t, rconns, rports, rcports)
	ours := formHostnameCluster(t, oconns, oports, ocports)
	for i := 0; i < 3; i++ {
		compareHostnameClusters(t, real, ours, i)
	}

	// A new hostname at run time reaches the other nodes with the next pings.
	for _, c := range []*hostnameCluster{real, ours} {
		require.Equal(t, "+OK\r\n", c.conns[0].do("CONFIG", "SET", "cluster-announce-hostname", "host-renamed.example.com"))
		testharness.WaitFor(t, 30*time.Second, "the new hostname on node 2", func() bool {
			return strings.Contains(bulkBody(t, c.conns[2].do("CLUSTER", "NODES")), ",host-renamed.example.com ")
		})
	}
	compareHostnameClusters(t, real, ours, 2)
}
