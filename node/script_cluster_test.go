package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScriptsAndTransactionsInClusterMode: the cluster rules of scripts and
// transactions on one node serving part of the slots.
func TestScriptsAndTransactionsInClusterMode(t *testing.T) {
	s := startTestServer(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf", "--cluster-require-full-coverage", "no")
	tc := dialTest(t, s)
	// Serve every slot but the one of "b" (3300).
	serveSlots(t, tc, "0", "3299", "3301", "16383")
	// Declared keys in two slots: CROSSSLOT before the script runs.
	require.Equal(t, "-CROSSSLOT Keys in request don't hash to the same slot\r\n",
		tc.do("EVAL", "return 1", "2", "a", "c"))
	// A script with flags may touch undeclared keys only in its slot...
	require.Contains(t, tc.do("EVAL", "#!lua\nredis.call('SET', 'a', '1') return redis.call('SET', 'c', '1')", "0"),
		"Script attempted to access keys that do not hash to the same slot")
	require.Equal(t, "+OK\r\n", tc.do("EVAL", "#!lua flags=allow-cross-slot-keys\nredis.call('SET', 'a', '1') return redis.call('SET', 'c', '1')", "0"))
	// One call's keys in two slots are refused, with or without flags, as
	// Redis 7.0.15 does (getNodeByQuery finds no node: "non local key");
	// in one slot they run.
	require.Contains(t, tc.do("EVAL", "return redis.call('MSET', 'a', '1', 'c', '1')", "0"),
		"Script attempted to access a non local key in a cluster node")
	require.Contains(t, tc.do("EVAL", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('MSET', 'a', '1', 'c', '1')", "0"),
		"Script attempted to access a non local key in a cluster node")
	require.Equal(t, "+OK\r\n", tc.do("EVAL", "return redis.call('MSET', '{a}1', '1', '{a}2', '1')", "0"))
	// ... and never keys another node serves.
	require.Contains(t, tc.do("EVAL", "return redis.call('GET', 'b')", "0"),
		"Script attempted to access a non local key in a cluster node")
	// A script that declares its key runs under that slot's lock: with
	// flags, another slot is Redis's error even after a write (nothing
	// waits); without flags it reaches the other local slot as in Redis.
	r := tc.do("EVAL", "#!lua\nredis.call('SET', KEYS[1], '2') return redis.call('SET', 'c', '2')", "1", "a")
	require.Contains(t, r, "Script attempted to access keys that do not hash to the same slot")
	require.Equal(t, "$1\r\n2\r\n", tc.do("GET", "a"))
	require.Equal(t, "+OK\r\n", tc.do("EVAL", "redis.call('GET', KEYS[1]) return redis.call('SET', 'c', '3')", "1", "a"))
	require.Equal(t, "$1\r\n3\r\n", tc.do("GET", "c"))
	require.Contains(t, tc.do("EVAL", "redis.call('GET', KEYS[1]) return redis.call('GET', 'b')", "1", "a"),
		"Script attempted to access a non local key in a cluster node")
	require.Equal(t, "-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n",
		tc.do("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"))
	// Transactions: CROSSSLOT over the whole queue at EXEC.
	tc.do("MULTI")
	require.Equal(t, "+QUEUED\r\n", tc.do("SET", "a", "1"))
	require.Equal(t, "+QUEUED\r\n", tc.do("SET", "c", "1"))
	require.Equal(t, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", tc.do("EXEC"))
	tc.do("MULTI")
	tc.do("SET", "{a}1", "1")
	tc.do("GET", "{a}1")
	require.Equal(t, "*2\r\n+OK\r\n$1\r\n1\r\n", tc.do("EXEC"))
}
