package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

const (
	lostMasterID  = "1111111111111111111111111111111111111111"
	lostReplicaID = "2222222222222222222222222222222222222222"
)

// restartLostMaster starts a cluster node from a nodes.conf that names it
// the master of every slot with one replica (unreachable: 127.0.0.1:1),
// after writing rdb (nil: none) as its dump.rdb.
func restartLostMaster(t *testing.T, rdb []byte) *Server {
	dir := t.TempDir()
	conf := lostMasterID + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n" +
		lostReplicaID + " 127.0.0.1:1@2 slave " + lostMasterID + " 0 0 1 connected\n" +
		"vars currentEpoch 1 lastVoteEpoch 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte(conf), 0o644))
	if rdb != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb, 0o644))
	}
	return startTestServer(t, "--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "500")
}

// A master restarted from nodes.conf without any data file, whose replica
// may hold the data, serves none of its slots and lets no replica sync:
// CLUSTERDOWN for keyed commands, LOADING for PSYNC. Once the replica
// turns out unreachable (PFAIL after node-timeout), it serves them.
func TestMasterRestartedWithoutDataWaitsForItsReplica(t *testing.T) {
	s := restartLostMaster(t, nil)
	c := dialTest(t, s)
	require.Equal(t, "-"+msgDataLostSlot+"\r\n", c.do("SET", "k", "v"))
	require.Equal(t, "-"+msgDataLostSlot+"\r\n", c.do("GET", "k"))
	require.Equal(t, "-"+msgDataLostSync+"\r\n", c.do("PSYNC", "?", "-1"))
	require.Contains(t, c.do("CLUSTER", "MYID"), lostMasterID, "cluster commands are served")

	require.True(t, s.dataLost.Load())
	ready, why := s.readiness()
	require.False(t, ready)
	require.Contains(t, why, "restarted without its data")
	testharness.WaitFor(t, 15*time.Second, "the slots served once the replica is unreachable", func() bool {
		return c.do("SET", "k", "v") == "+OK\r\n"
	})
	require.Equal(t, "$1\r\nv\r\n", c.do("GET", "k"))
	c.send("PSYNC", "?", "-1")
	_ = c.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	full, err := lineAfterKeepAlives(c.r)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(full, "+FULLRESYNC"), full)
	ready, why = s.readiness()
	require.True(t, ready, why)
}

// An RDB file that holds no keys is an empty data set, not a lost one: the
// master serves at once.
func TestMasterRestartedWithEmptyRDBServes(t *testing.T) {
	s := restartLostMaster(t, emptyRDBFile(t))
	require.False(t, s.dataLost.Load())
	c := dialTest(t, s)
	// A restarted master is writable 2 s after start (Redis's
	// CLUSTER_WRITABLE_DELAY), then serves.
	testharness.WaitFor(t, 15*time.Second, "the slots served", func() bool {
		return c.do("SET", "k", "v") == "+OK\r\n"
	})
}
