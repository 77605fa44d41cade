package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A whole cluster restarted (issue 18): a 3+3 cluster with appendonly yes
// and appendfsync always, its six processes killed at once with kill -9
// under pipelined writes through a cluster client and restarted from their
// directories (nodes.conf and the AOF) on the same ports. Each round: the
// cluster comes back to cluster_state:ok with the same masters, every
// replica catches up with its master to the same DEBUG DIGEST, every write
// acknowledged in this round or any before reads back (aofWriter.verify:
// what a lost reply leaves undecided may be either way), and redis-cli
// --cluster check passes. Odd rounds rewrite the AOFs first.
//
// SHOAL_CLUSTER_RESTART_ROUNDS sets the number of rounds (default 2).

// clusterRestartWait bounds every wait of the test.
const clusterRestartWait = 90 * time.Second

func TestClusterKill9AllNodesAOFAlwaysLosesNoAcknowledgedWrite(t *testing.T) {
	nodes, pairs, addrs := startAOFAlwaysCluster(t)
	var all []*aofWriter
	for round := range envRounds(t, "SHOAL_CLUSTER_RESTART_ROUNDS", 2) {
		load := startClusterAOFLoad(addrs, fmt.Sprintf("cr%d", round))
		// Rounds after the first rewrite every node's AOF while the
		// writers run: the nodes then load a base file (an RDB image with
		// replication aux fields) and the incr file after it.
		if round%2 == 1 {
			load.waitAcked(t, aofRoundOps/2, "writes before the rewrite")
			for _, n := range nodes {
				out, err := Query(n.Addr, "BGREWRITEAOF")
				require.NoError(t, err)
				require.Equal(t, "Background append only file rewriting started", out)
			}
		}
		load.waitAcked(t, aofRoundOps, "writes before the kill")

		killAll(nodes)
		all = append(all, load.end()...)
		restartedAt := time.Now()
		restartAll(t, nodes)
		ready := time.Since(restartedAt)
		WaitFor(t, clusterRestartWait, "cluster_state:ok on every node", func() string { return liveOK(nodes) })
		stateOK := time.Since(restartedAt)
		WaitClusterSettled(t, nodes, 3, clusterRestartWait)
		settled := time.Since(restartedAt)

		// Nothing failed over: each node kept its role and its data.
		require.Equal(t, pairs, masterReplicaPairs(t, nodes), "round %d: the masters and replicas after the restart", round)
		for m, r := range pairs {
			waitReplicaCaughtUp(t, m, r, clusterRestartWait)
			requireSameDigest(t, m, r)
		}

		checked := verifyWritersOnCluster(t, addrs, all)
		t.Logf("round %d: %d ops acked before kill -9 of all 6 nodes; %d acknowledged writes (all rounds) read back; "+
			"all 6 ready %v, cluster_state:ok %v, settled %v after the restart began",
			round, load.acked(), checked, ready.Round(time.Millisecond), stateOK.Round(time.Millisecond), settled.Round(time.Millisecond))

		// redis-cli is there: CreateCluster skips the test without it.
		out, code := RunTool(t, 30*time.Second, redisCLIPath(t), "--cluster", "check", nodes[0].Addr)
		require.Zero(t, code, out)
		require.Contains(t, out, "[OK] All 16384 slots covered.")
	}
}

// startAOFAlwaysCluster starts a 3+3 cluster with appendonly yes,
// appendfsync always and DEBUG enabled; it returns the nodes, the master
// → replica pairs and the nodes' addresses.
func startAOFAlwaysCluster(t *testing.T) ([]*ClusterNode, map[string]string, []string) {
	t.Helper()
	nodes, pairs, _ := startReplicatedCluster(t, "--appendonly", "yes", "--appendfsync", "always",
		"--enable-debug-command", "yes")
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	return nodes, pairs, addrs
}

// startClusterAOFLoad runs the aofWriters through a cluster client that
// does not retry (MaxRedirects -1): a batch sent again after a lost reply
// would be applied twice.
func startClusterAOFLoad(addrs []string, prefix string) *aofLoad {
	return startAOFLoadOn(redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: -1,
		PoolSize: aofWriters, ReadTimeout: 10 * time.Second}), prefix)
}

// killAll sends SIGKILL to every node at once and waits until all are gone.
func killAll(nodes []*ClusterNode) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Kill()
		}()
	}
	wg.Wait()
}

// restartAll starts every node again at once, on its port and in its
// directory, and waits until all are ready.
func restartAll(t *testing.T, nodes []*ClusterNode) {
	t.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 1; attempt <= startAttempts; attempt++ {
				busy, err := n.start()
				errs[i] = err
				if err == nil || !busy {
					return
				}
				time.Sleep(200 * time.Millisecond) // the old socket may linger briefly
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "restarting node %d (%s)", i, nodes[i].Addr)
	}
}

// verifyWritersOnCluster checks every writer's acknowledged ops through a
// fresh cluster client and returns how many writes it checked.
func verifyWritersOnCluster(t *testing.T, addrs []string, writers []*aofWriter) int {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 10 * time.Second})
	defer c.Close()
	checked := 0
	for _, w := range writers {
		checked += w.verify(t, context.Background(), c)
	}
	return checked
}

// One cluster master restarted from nodes.conf and its AOF, twice: killed
// with kill -9 under writes and restarted before its replica could take
// over, it is the master of its slots again with every acknowledged
// write, and its replica resyncs to its dataset; killed once its replica
// holds all it acknowledged and restarted after the replica took over, it
// rejoins as that replica's replica (its AOF's dataset replaced by the new
// master's, under writes) and no acknowledged write is lost.
func TestClusterNodeRestartsFromNodesConfAndAOF(t *testing.T) {
	nodes, pairs, addrs := startAOFAlwaysCluster(t)
	var masters []string
	for m := range pairs {
		masters = append(masters, m)
	}

	// 1. Restarted at once: still the master, with its data.
	load := startClusterAOFLoad(addrs, "alone")
	load.waitAcked(t, aofRoundOps, "writes before the kill")
	victim := nodeByAddr(nodes, masters[0])
	victim.Kill()
	restartedAt := time.Now()
	victim.Restart()
	all := load.end()
	WaitClusterSettled(t, nodes, 3, clusterRestartWait)
	require.Equal(t, pairs, masterReplicaPairs(t, nodes), "the restarted master kept its slots")
	checked := verifyWritersOnCluster(t, addrs, all)
	waitReplicaCaughtUp(t, masters[0], pairs[masters[0]], clusterRestartWait)
	requireSameDigest(t, masters[0], pairs[masters[0]])
	t.Logf("master restarted at once: %d acknowledged writes read back; settled %v after the restart began",
		checked, time.Since(restartedAt).Round(time.Millisecond))

	// 2. Restarted after its replica took over: it follows the new master.
	load = startClusterAOFLoad(addrs, "promoted")
	load.waitAcked(t, aofRoundOps, "writes before the failover")
	all = append(all, load.end()...)
	old, promoted := masters[1], pairs[masters[1]]
	waitReplicaCaughtUp(t, old, promoted, clusterRestartWait) // it holds every acknowledged write
	victim = nodeByAddr(nodes, old)
	slot := firstSlot(t, old)
	victim.Kill()
	// Every live node knows of the takeover before the writers start: a
	// writer stops at its first error (it does not retry).
	WaitFor(t, clusterRestartWait, promoted+" takes over from "+old, func() string {
		for _, n := range nodes {
			if n == victim {
				continue
			}
			m, _, err := slotOwner(n.Addr, slot)
			if err != nil {
				return err.Error()
			}
			if m != promoted {
				return fmt.Sprintf("%s: the slots are served by %s", n.Addr, m)
			}
		}
		return liveOK(nodes)
	})
	load = startClusterAOFLoad(addrs, "rejoin") // writes go on while the old master rejoins
	victim.Restart()
	load.waitAcked(t, aofRoundOps, "writes while the old master rejoins")
	all = append(all, load.end()...)
	WaitClusterSettled(t, nodes, 3, clusterRestartWait)
	now := masterReplicaPairs(t, nodes)
	require.Equal(t, old, now[promoted], "the old master follows the replica that took over")
	waitReplicaCaughtUp(t, promoted, old, clusterRestartWait)
	requireSameDigest(t, promoted, old)
	checked = verifyWritersOnCluster(t, addrs, all)
	t.Logf("master restarted after the failover: rejoined as a replica; %d acknowledged writes read back", checked)
	out, code := RunTool(t, 30*time.Second, redisCLIPath(t), "--cluster", "check", nodes[0].Addr)
	require.Zero(t, code, out)
	require.Contains(t, out, "[OK] All 16384 slots covered.")
}

// requireSameDigest checks that a master and its replica hold the same
// dataset (DEBUG DIGEST).
func requireSameDigest(t *testing.T, master, replica string) {
	t.Helper()
	md, err := Query(master, "DEBUG", "DIGEST")
	require.NoError(t, err)
	rd, err := Query(replica, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, md, rd, "replica %s has its master %s's dataset", replica, master)
}

// Keys moved by a reshard (MIGRATE to the new owner, DEL on the old) are
// where the AOFs say after the whole cluster is killed and restarted: on
// the node that owns their slot in its nodes.conf, nowhere else.
func TestClusterKill9AllNodesAfterReshard(t *testing.T) {
	nodes, pairs, addrs := startAOFAlwaysCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	ctx := context.Background()
	const keys = 3000
	key := func(i int) string { return "moved:" + strconv.Itoa(i) }
	_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range keys {
			p.Set(ctx, key(i), "v"+strconv.Itoa(i), 0)
		}
		return nil
	})
	require.NoError(t, err)
	var masters []string
	for m := range pairs {
		masters = append(masters, m)
	}
	cli(t, "--cluster", "reshard", masters[0], "--cluster-from", myID(t, masters[0]), "--cluster-to", myID(t, masters[1]),
		"--cluster-slots", "2000", "--cluster-yes")
	clusterCheck(t, masters[0])
	for m, r := range pairs {
		waitReplicaCaughtUp(t, m, r, clusterRestartWait)
	}

	killAll(nodes)
	restartAll(t, nodes)
	WaitClusterSettled(t, nodes, 3, clusterRestartWait)
	require.Equal(t, pairs, masterReplicaPairs(t, nodes))
	total := 0
	for m, r := range pairs {
		waitReplicaCaughtUp(t, m, r, clusterRestartWait)
		requireSameDigest(t, m, r)
		n, err := strconv.Atoi(mustQuery(t, m, "DBSIZE"))
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, keys, total, "each key on one master only")
	cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) // no connection from before the kill
	defer cc.Close()
	for i := range keys {
		v, err := cc.Get(ctx, key(i)).Result()
		require.NoError(t, err, key(i))
		require.Equal(t, "v"+strconv.Itoa(i), v, key(i))
	}
	clusterCheck(t, masters[0])
}

// firstSlot returns the first slot a master serves.
func firstSlot(t *testing.T, master string) int {
	t.Helper()
	me, err := Myself(master)
	require.NoError(t, err)
	require.NotEmpty(t, me.Slots, master)
	lo, _, _ := strings.Cut(me.Slots[0], "-")
	n, err := strconv.Atoi(lo)
	require.NoError(t, err)
	return n
}
