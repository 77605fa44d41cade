package integration

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// Automatic failover with real processes: a 3+3 cluster at
// cluster-node-timeout 1000 ms built by redis-cli --cluster create, masters
// killed with SIGKILL under go-redis load, replicas taking over, old
// masters restarted as replicas. Data is checked when replication is there
// (the replicas report master_link_status:up); otherwise only the topology
// and the writes made after each failover are.

const failoverNodeTimeout = "1000"

// startFailoverCluster starts six nodes at node-timeout 1 s and joins them
// as 3 masters + 3 replicas.
func startFailoverCluster(t *testing.T) []*ClusterNode {
	t.Helper()
	nodes := StartClusterNodes(t, 6, "--cluster-node-timeout", failoverNodeTimeout)
	CreateCluster(t, nodes, 1, createTimeout)
	return nodes
}

// replicationUp reports whether every replica among the live nodes has its
// replication link up (the replication layer is present and synced).
func replicationUp(nodes []*ClusterNode) bool {
	seen := false
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		info, err := Query(n.Addr, "INFO", "replication")
		if err != nil || !strings.Contains(info, "role:slave") {
			continue
		}
		seen = true
		if !strings.Contains(info, "master_link_status:up") {
			return false
		}
	}
	return seen
}

// roleOf returns a node's own CLUSTER NODES line, or an error text.
func roleOf(n *ClusterNode) (NodeLine, string) {
	me, err := Myself(n.Addr)
	if err != nil {
		return NodeLine{}, err.Error()
	}
	return me, ""
}

// liveOK reports why the live nodes do not all agree the cluster is ok
// with wantMasters masters serving every slot ("" when they do).
func liveOK(nodes []*ClusterNode) string {
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		info, err := Query(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return n.Addr + " is not ok"
		}
	}
	return ""
}

func infoField(t *testing.T, addr, section, field string) string {
	t.Helper()
	var text string
	var err error
	if section == "cluster" {
		text, err = Query(addr, "CLUSTER", "INFO")
	} else {
		text, err = Query(addr, "INFO", section)
	}
	require.NoError(t, err)
	for _, l := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

func clusterClient(nodes []*ClusterNode) *redis.ClusterClient {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 0})
}

// ackedWrite is one acknowledged SET.
type ackedWrite struct {
	key, val string
	at       time.Time
}

// loadWriters runs writers SETting unique keys through c until stop; on an
// error they reload the slot map (go-redis does not on connection errors)
// and go on. Every acknowledged write is recorded.
type loadWriters struct {
	mu    sync.Mutex
	acked []ackedWrite
	fails atomic.Int64
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startLoad(c *redis.ClusterClient, workers int, prefix string) *loadWriters {
	lw := &loadWriters{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		lw.wg.Add(1)
		go func(w int) {
			defer lw.wg.Done()
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-lw.stop:
					return
				default:
				}
				key := fmt.Sprintf("%s:w%d:%d", prefix, w, i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := c.Set(ctx, key, key, 0).Err()
				cancel()
				if err != nil {
					lw.fails.Add(1)
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					c.ReloadState(ctx)
					cancel()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				lw.mu.Lock()
				lw.acked = append(lw.acked, ackedWrite{key: key, val: key, at: time.Now()})
				lw.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}(w)
	}
	return lw
}

func (lw *loadWriters) halt() []ackedWrite {
	close(lw.stop)
	lw.wg.Wait()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]ackedWrite(nil), lw.acked...)
}

// firstAckAfter returns the first acknowledged write to one of the given
// slots at or after t.
func (lw *loadWriters) firstAckAfter(t time.Time, in func(slot int) bool) (time.Time, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, a := range lw.acked {
		if !a.at.Before(t) && in(int(slots.KeySlot([]byte(a.key)))) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// slotSet parses a CLUSTER NODES slot list ("0-5460", "7").
func slotSet(ranges []string) func(int) bool {
	var bm slots.Bitmap
	for _, r := range ranges {
		if strings.HasPrefix(r, "[") {
			continue
		}
		a, b, found := strings.Cut(r, "-")
		lo, _ := strconv.Atoi(a)
		hi := lo
		if found {
			hi, _ = strconv.Atoi(b)
		}
		bm.SetRange(lo, hi)
	}
	return func(s int) bool { return bm.Has(s) }
}

// TestFailoverKillMasterUnderLoad: kill -9 a master while go-redis writes
// to every slot; its replica takes over (epoch up, slots moved, cluster ok),
// writes to its slots resume, and the old master restarted from its
// nodes.conf rejoins as the new master's replica.
func TestFailoverKillMasterUnderLoad(t *testing.T) {
	nodes := startFailoverCluster(t)
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	var victimLine NodeLine
	for _, l := range lines {
		if l.HasFlag("master") && len(l.Slots) > 0 {
			victimLine = l
			break
		}
	}
	victim := nodeByPort(t, nodes, victimLine.Port())
	var replica *ClusterNode
	for _, l := range lines {
		if l.Master == victimLine.ID {
			replica = nodeByPort(t, nodes, l.Port())
		}
	}
	require.NotNil(t, replica, "the victim has a replica")
	inVictim := slotSet(victimLine.Slots)
	epochBefore, _ := strconv.Atoi(currentEpoch(t, replica.Addr))

	c := clusterClient(nodes)
	defer c.Close()
	lw := startLoad(c, 6, "fo")
	time.Sleep(1500 * time.Millisecond) // warm up; replication (if any) catches up
	withRepl := replicationUp(nodes)

	killed := time.Now()
	victim.Kill()
	WaitFor(t, 15*time.Second, "the replica to be promoted", func() string {
		me, why := roleOf(replica)
		if why != "" {
			return why
		}
		if !me.HasFlag("master") || len(me.Slots) == 0 {
			return "replica is " + me.Flags
		}
		return ""
	})
	promoted := time.Since(killed)
	WaitFor(t, 15*time.Second, "writes to the victim's slots to resume", func() string {
		if _, ok := lw.firstAckAfter(killed.Add(time.Millisecond), inVictim); !ok {
			return "no acknowledged write to the victim's slots yet"
		}
		return ""
	})
	resumed, _ := lw.firstAckAfter(killed.Add(time.Millisecond), inVictim)
	t.Logf("kill -> promotion observed %s, kill -> first acked write to the victim's slots %s (replication %v)",
		promoted.Round(time.Millisecond), resumed.Sub(killed).Round(time.Millisecond), withRepl)
	WaitFor(t, 15*time.Second, "the survivors to agree the cluster is ok", func() string { return liveOK(nodes) })
	epochAfter, _ := strconv.Atoi(currentEpoch(t, replica.Addr))
	require.Greater(t, epochAfter, epochBefore, "the election bumped the epoch")
	newMaster, _ := roleOf(replica)
	for _, n := range nodes {
		if n == victim {
			continue
		}
		ls, err := ClusterNodes(n.Addr)
		require.NoError(t, err)
		for _, l := range ls {
			if l.ID == newMaster.ID {
				require.True(t, l.HasFlag("master"), "%s sees the new master as %s", n.Addr, l.Flags)
				require.Equal(t, victimLine.Slots, l.Slots)
			}
		}
	}

	// The old master comes back from its nodes.conf: it learns about the
	// newer configuration and becomes a replica of the new master.
	victim.Restart()
	WaitFor(t, 20*time.Second, "the old master to rejoin as a replica", func() string {
		me, why := roleOf(victim)
		if why != "" {
			return why
		}
		if !me.HasFlag("slave") || me.Master != newMaster.ID {
			return fmt.Sprintf("old master is %s of %s", me.Flags, me.Master)
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond)
	acked := lw.halt()
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	require.NotEmpty(t, acked)

	// Every write acknowledged after the failover is readable; with
	// replication, so is every write acknowledged before the kill (minus
	// the last 500 ms, which asynchronous replication may not have shipped).
	ctx := context.Background()
	lost, lostBefore, lostRecent, checked := 0, 0, 0, 0
	for _, a := range acked {
		after := a.at.After(killed)
		before := a.at.Before(killed.Add(-500 * time.Millisecond))
		if !after && !(withRepl && before) && inVictim(int(slots.KeySlot([]byte(a.key)))) {
			if withRepl {
				if v, err := c.Get(ctx, a.key).Result(); err != nil || v != a.val {
					lostRecent++
				}
			}
			continue
		}
		checked++
		if v, err := c.Get(ctx, a.key).Result(); err != nil || v != a.val {
			lost++
			if before {
				lostBefore++
			}
		}
	}
	t.Logf("%d acknowledged writes, %d checked, %d lost (%d acked > 500 ms before the kill); %d of the last 500 ms before the kill missing; %d failed attempts",
		len(acked), checked, lost, lostBefore, lostRecent, lw.fails.Load())
	require.Zero(t, lost, "acknowledged writes lost")
	require.NotEmpty(t, infoField(t, replica.Addr, "cluster", "cluster_stats_messages_auth-req_sent"))
	require.NotEmpty(t, infoField(t, nodes[0].Addr, "cluster", "cluster_stats_messages_auth-ack_sent")+
		infoField(t, replica.Addr, "cluster", "cluster_stats_messages_auth-ack_received"))
}

// TestFailoverLoop is a shortened 03-failover-loop: rounds of killing a
// random node; each round writes 100 keys (WAIT 1 on the master when the
// victim is a master and replication is there), kills the victim, waits
// for its replica to take over when it was a master, writes 100 more keys,
// restarts the victim, which rejoins as a replica, and reads every value
// back (every one with replication; the ones written after the failover
// without it).
func TestFailoverLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("failover loop")
	}
	const rounds = 8
	nodes := startFailoverCluster(t)
	c := clusterClient(nodes)
	defer c.Close()
	rng := rand.New(rand.NewPCG(3, 19))
	ctx := context.Background()
	start := time.Now()
	write := func(prefix string, n int) []string {
		var keys []string
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("%s:%d", prefix, i)
			var err error
			for try := 0; try < 50; try++ {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				err = c.Set(cctx, key, key, 0).Err()
				cancel()
				if err == nil {
					break
				}
				c.ReloadState(ctx)
				time.Sleep(50 * time.Millisecond)
			}
			require.NoError(t, err, "SET %s", key)
			keys = append(keys, key)
		}
		return keys
	}
	for round := 0; round < rounds; round++ {
		// Odd rounds kill any node, as Redis's loop; even rounds a master
		// (a random choice kills replicas half the time).
		victim := nodes[rng.IntN(len(nodes))]
		if round%2 == 0 {
			for _, i := range rng.Perm(len(nodes)) {
				if me, why := roleOf(nodes[i]); why == "" && me.HasFlag("master") {
					victim = nodes[i]
					break
				}
			}
		}
		me, why := roleOf(victim)
		require.Empty(t, why)
		wasMaster := me.HasFlag("master")
		withRepl := replicationUp(nodes)
		before := write(fmt.Sprintf("loop:%d:a", round), 100)
		if wasMaster && withRepl {
			r := redis.NewClient(&redis.Options{Addr: victim.Addr})
			n, err := r.Do(ctx, "WAIT", 1, 2000).Int()
			_ = r.Close()
			require.NoError(t, err)
			require.Equal(t, 1, n, "WAIT 1 on the victim master")
		}
		epoch0, _ := strconv.Atoi(currentEpoch(t, nodes[(indexOf(nodes, victim)+1)%len(nodes)].Addr))
		victim.Kill()
		takeoverEpoch := 0 // the highest epoch seen once a replica took over
		if wasMaster {
			WaitFor(t, 15*time.Second, "a replica to take over", func() string {
				for _, n := range nodes {
					if n == victim {
						continue
					}
					e, _ := strconv.Atoi(currentEpoch(t, n.Addr))
					if e > epoch0 {
						takeoverEpoch = max(takeoverEpoch, e)
						return liveOK(nodes)
					}
				}
				return "no epoch rise yet"
			})
		}
		WaitFor(t, 15*time.Second, "the cluster to be ok", func() string { return liveOK(nodes) })
		after := write(fmt.Sprintf("loop:%d:b", round), 100)
		victim.Restart()
		WaitClusterSettled(t, nodes, 3, settleTimeout)
		if wasMaster {
			me, why := roleOf(victim)
			require.Empty(t, why)
			if !me.HasFlag("slave") {
				// On a loaded machine the new master can itself look silent
				// for node-timeout, and its replica (the restarted victim)
				// rightly wins a later election: then it is a master under a
				// newer epoch than the takeover's.
				myEpoch, _ := strconv.Atoi(infoField(t, victim.Addr, "cluster", "cluster_my_epoch"))
				require.Greater(t, myEpoch, takeoverEpoch,
					"the restarted master is a replica, or a master by a later election, not %s at epoch %d", me.Flags, myEpoch)
			}
		}
		check := after
		if withRepl {
			check = append(before, after...)
		}
		for _, k := range check {
			v, err := c.Get(ctx, k).Result()
			require.NoError(t, err, "GET %s (round %d)", k, round)
			require.Equal(t, k, v)
		}
		t.Logf("round %d: killed %s (%s), %d values read back, replication %v, %s elapsed", round, victim.Addr,
			me.Flags, len(check), withRepl, time.Since(start).Round(time.Millisecond))
	}
	// current_epoch >= my_epoch everywhere.
	for _, n := range nodes {
		cur, _ := strconv.Atoi(infoField(t, n.Addr, "cluster", "cluster_current_epoch"))
		my, _ := strconv.Atoi(infoField(t, n.Addr, "cluster", "cluster_my_epoch"))
		require.GreaterOrEqual(t, cur, my, n.Addr)
	}
}

func indexOf(nodes []*ClusterNode, n *ClusterNode) int {
	for i, x := range nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// TestManualFailoverUnderWrites: CLUSTER FAILOVER on a replica while
// go-redis writes to every slot: the master pauses its writers, the
// replica catches up to the master's final offset and takes over, the old
// master becomes its replica, and — with replication — no acknowledged
// write is lost (10-manual-failover).
// aReplicaAndItsMaster picks a replica from CLUSTER NODES and returns its
// line and its master's, and their nodes.
func aReplicaAndItsMaster(t *testing.T, nodes []*ClusterNode) (replica, master NodeLine, rnode, mnode *ClusterNode) {
	t.Helper()
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	for _, l := range lines {
		if l.HasFlag("slave") {
			replica = l
			break
		}
	}
	for _, l := range lines {
		if l.ID == replica.Master {
			master = l
		}
	}
	require.NotEmpty(t, master.ID, "no replica with a known master in CLUSTER NODES")
	return replica, master, nodeByPort(t, nodes, replica.Port()), nodeByPort(t, nodes, master.Port())
}

func TestManualFailoverUnderWrites(t *testing.T) {
	nodes := startFailoverCluster(t)
	replica, master, rnode, mnode := aReplicaAndItsMaster(t, nodes)
	c := clusterClient(nodes)
	defer c.Close()
	lw := startLoad(c, 6, "mf")
	time.Sleep(time.Second)
	withRepl := replicationUp(nodes)

	reply, err := Query(rnode.Addr, "CLUSTER", "FAILOVER")
	require.NoError(t, err)
	require.Equal(t, "OK", reply)
	started := time.Now()
	WaitFor(t, 10*time.Second, "the replica to take over", func() string {
		me, why := roleOf(rnode)
		if why != "" {
			return why
		}
		if !me.HasFlag("master") {
			return "still " + me.Flags
		}
		return ""
	})
	took := time.Since(started)
	WaitFor(t, 10*time.Second, "the old master to become its replica", func() string {
		me, why := roleOf(mnode)
		if why != "" {
			return why
		}
		if me.Master != replica.ID {
			return me.Flags + " of " + me.Master
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond)
	acked := lw.halt()
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	reply, err = Query(mnode.Addr, "CLUSTER", "FAILOVER", "TAKEOVER", "NOW")
	require.NoError(t, err)
	require.Equal(t, "-ERR unknown subcommand or wrong number of arguments for 'FAILOVER'. Try CLUSTER HELP.", reply)
	reply, err = Query(rnode.Addr, "CLUSTER", "FAILOVER")
	require.NoError(t, err)
	require.Equal(t, "-ERR You should send CLUSTER FAILOVER to a replica", reply)

	ctx := context.Background()
	lost := 0
	inShard := slotSet(master.Slots)
	checked := 0
	for _, a := range acked {
		if !withRepl && inShard(int(slots.KeySlot([]byte(a.key)))) && a.at.Before(started.Add(took)) {
			continue // without replication the new master has none of the old data
		}
		checked++
		if v, err := c.Get(ctx, a.key).Result(); err != nil || v != a.val {
			lost++
		}
	}
	t.Logf("manual failover took %s; %d acknowledged writes, %d checked, %d lost (replication %v)",
		took.Round(time.Millisecond), len(acked), checked, lost, withRepl)
	require.Zero(t, lost, "acknowledged writes lost in a manual failover")
}

// A write the old master holds during a manual failover's pause is judged
// again once the node became a replica, in processCommand's order: the new
// slot table redirects it (-MOVED to the new master), never -READONLY
// (Redis's tests/cluster 10-manual-failover; shoal answered READONLY).
func TestManualFailoverPausedWriteGetsMoved(t *testing.T) {
	nodes := startFailoverCluster(t)
	_, _, rnode, mnode := aReplicaAndItsMaster(t, nodes)
	// A key of the master's slots.
	key := ""
	for i := 0; i < 1000 && key == ""; i++ {
		k := fmt.Sprintf("mf-paused:%d", i)
		if r, err := Query(mnode.Addr, "SET", k, "0"); err == nil && r == "OK" {
			key = k
		}
	}
	require.NotEmpty(t, key, "no key of the master's slots found")

	conn, err := net.DialTimeout("tcp", mnode.Addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	rd := bufio.NewReader(conn)
	var replies []string
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; i < 100_000 && time.Now().Before(deadline); i++ {
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			v := strconv.Itoa(i)
			if _, err := fmt.Fprintf(conn, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(v), v); err != nil {
				done <- err
				return
			}
			line, err := rd.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			replies = append(replies, strings.TrimRight(line, "\r\n"))
			if strings.HasPrefix(line, "-") {
				done <- nil // the role changed: the first refusal is the one judged
				return
			}
		}
		done <- fmt.Errorf("the writes were never refused in %d tries", len(replies))
	}()
	time.Sleep(200 * time.Millisecond) // the writer is under way
	reply, err := Query(rnode.Addr, "CLUSTER", "FAILOVER")
	require.NoError(t, err)
	require.Equal(t, "OK", reply)
	require.NoError(t, <-done)
	last := replies[len(replies)-1]
	require.True(t, strings.HasPrefix(last, "-MOVED "), "the old master answered %q to a write after the failover (want -MOVED)", last)
	t.Logf("%d writes acknowledged before the failover, then %q", len(replies)-1, last)
}
