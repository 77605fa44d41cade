package node

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CLUSTER FAILOVER's replies, byte for byte against redis-server 7.0: on a
// master (every variant), bad arguments, a standalone server; then on a
// replica of a live master the failover starts (+OK) and completes.
func TestClusterFailoverRepliesMatchRedis(t *testing.T) {
	shoal := startClusterTestServer(t, "")
	redisAddr, _, _ := startRealClusterRedis(t)
	sc, rc := dialTest(t, shoal.srv), dialTestAddr(t, redisAddr)
	for _, cmd := range [][]string{
		{"CLUSTER", "FAILOVER"},
		{"cluster", "failover", "force"},
		{"CLUSTER", "FAILOVER", "TAKEOVER"},
		{"CLUSTER", "FAILOVER", "bogus"},
		{"CLUSTER", "FAILOVER", "FORCE", "extra"},
		{"CLUSTER", "failover", "takeover", "now", "please"},
	} {
		require.Equal(t, rc.do(cmd...), sc.do(cmd...), "%q", cmd)
	}

	standalone := startTestServer(t)
	require.Equal(t, "-ERR This instance has cluster support disabled\r\n", dialTest(t, standalone).do("CLUSTER", "FAILOVER"))

	// A replica of a live master: +OK, and the manual failover completes
	// (the master pauses, the replica catches up and takes over).
	replica := startClusterTestServer(t, "")
	masterID := shoal.srv.cluster.MyID()
	require.Equal(t, "+OK\r\n", sc.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"))
	rcon := dialTest(t, replica.srv)
	require.Equal(t, "+OK\r\n", rcon.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(shoal.port), strconv.Itoa(shoal.cport)))
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := replica.srv.cluster.Node(masterID); ok {
			if rcon.do("CLUSTER", "REPLICATE", masterID) == "+OK\r\n" {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, masterID, replica.srv.cluster.Myself().Master)
	var reply string
	for time.Now().Before(deadline) {
		if n, ok := shoal.srv.cluster.Node(replica.srv.cluster.MyID()); ok && n.IsReplica() && shoal.srv.cluster.StateOK() {
			if reply = rcon.do("CLUSTER", "FAILOVER"); reply == "+OK\r\n" {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, "+OK\r\n", reply)
	for time.Now().Before(deadline) && !replica.srv.cluster.Myself().IsMaster() {
		time.Sleep(50 * time.Millisecond)
	}
	require.True(t, replica.srv.cluster.Myself().IsMaster(), "the replica took over")
	for time.Now().Before(deadline) && shoal.srv.cluster.Myself().Master != replica.srv.cluster.MyID() {
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, replica.srv.cluster.MyID(), shoal.srv.cluster.Myself().Master, "the old master follows it")
	require.Equal(t, "-ERR You should send CLUSTER FAILOVER to a replica\r\n", rcon.do("CLUSTER", "FAILOVER"))
}
