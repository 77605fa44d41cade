package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// The cluster "must show" checks with real processes and the real tools:
// six shoal-server nodes joined by `redis-cli --cluster create` (3 masters,
// 3 replicas), then redis-cli --cluster check, redis-cli -c, redis-benchmark
// --cluster, a go-redis ClusterClient, and restarts from nodes.conf (kill -9
// of a master; a node moved to new ports). Replicas receive no data yet
// (replication is a later issue): the topology is what is checked.

const (
	createTimeout = 60 * time.Second // redis-cli --cluster create + settling
	settleTimeout = 30 * time.Second
)

// slotOwners maps every slot to the client port of its master, from one
// node's CLUSTER NODES.
func slotOwners(t *testing.T, addr string) map[int]int {
	t.Helper()
	lines, err := ClusterNodes(addr)
	require.NoError(t, err)
	owners := map[int]int{}
	for _, l := range lines {
		for _, r := range l.Slots {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			for s := a; s <= b; s++ {
				owners[s] = l.Port()
			}
		}
	}
	return owners
}

// keyOwnedBy returns a key whose slot's master listens on port.
func keyOwnedBy(t *testing.T, owners map[int]int, port int, prefix string) string {
	t.Helper()
	for i := range 100000 {
		k := prefix + strconv.Itoa(i)
		if owners[int(slots.KeySlot([]byte(k)))] == port {
			return k
		}
	}
	t.Fatalf("no key found for port %d", port)
	return ""
}

func TestClusterWithRealTools(t *testing.T) {
	cli := redisCLIPath(t)
	nodes := StartClusterNodes(t, 6)
	start := time.Now()
	out := CreateCluster(t, nodes, 1, createTimeout)
	t.Logf("redis-cli --cluster create + settled in %v", time.Since(start).Round(time.Millisecond))
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")

	// redis-cli --cluster check exits 0 (it exits 1 on any inconsistency).
	out, code := RunTool(t, 30*time.Second, cli, "--cluster", "check", nodes[0].Addr)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "[OK] All 16384 slots covered.")

	// Topology: 3 masters with 5461/5462/5461 slots, each with one replica,
	// seen the same way by every node.
	owners := slotOwners(t, nodes[0].Addr)
	require.Len(t, owners, slots.Count)
	var masters []NodeLine
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	byID := map[string]NodeLine{}
	for _, l := range lines {
		byID[l.ID] = l
		if l.HasFlag("master") {
			masters = append(masters, l)
		}
	}
	require.Len(t, masters, 3)
	for _, m := range masters {
		reps := 0
		for _, l := range lines {
			if l.HasFlag("slave") && l.Master == m.ID {
				reps++
				require.Equal(t, m.Epoch, l.Epoch, "a replica shows its master's epoch")
			}
		}
		require.Equal(t, 1, reps, "replicas of %s", m.ID)
	}
	for _, n := range nodes[1:] {
		other := slotOwners(t, n.Addr)
		require.Equal(t, owners, other, "slot table seen by %s", n.Addr)
	}

	// CLUSTER SHARDS lists 3 shards of master + replica; CLUSTER SLOTS 3
	// ranges (a replica is listed only after it replicated something).
	shards, err := Query(nodes[0].Addr, "CLUSTER", "SHARDS")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(shards, "*3\r\n"), shards)
	require.Equal(t, 3, strings.Count(shards, "$4\r\nrole\r\n$6\r\nmaster\r\n"))
	require.Equal(t, 3, strings.Count(shards, "$4\r\nrole\r\n$7\r\nreplica\r\n"))

	// redis-cli -c follows MOVED: keys in every master's slots, set and read
	// through node 0; without -c the redirect is visible.
	for _, m := range masters {
		key := keyOwnedBy(t, owners, m.Port(), "tools:")
		out, code := RunTool(t, 10*time.Second, cli, "-c", "-p", strconv.Itoa(nodes[0].Port), "SET", key, "v-"+key)
		require.Equal(t, 0, code, out)
		require.Equal(t, "OK\n", out)
		out, _ = RunTool(t, 10*time.Second, cli, "-c", "-p", strconv.Itoa(nodes[0].Port), "GET", key)
		require.Equal(t, "v-"+key+"\n", out)
		if m.Port() != nodes[0].Port {
			moved, err := Query(nodes[0].Addr, "GET", key)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d", slots.KeySlot([]byte(key)), m.Port()), moved)
		}
	}

	// redis-benchmark --cluster: no errors.
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Log("redis-benchmark not installed; skipping the benchmark step")
	} else {
		out, code := RunTool(t, 60*time.Second, bench, "--cluster", "-h", "127.0.0.1", "-p", strconv.Itoa(nodes[0].Port),
			"-t", "set,get", "-n", "20000", "-q")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "SET: ")
		require.Contains(t, out, "GET: ")
		lower := strings.ToLower(out)
		require.NotContains(t, lower, "error", out)
		require.NotContains(t, lower, "moved", out)
	}

	t.Run("go-redis ClusterClient 10k keys", func(t *testing.T) { goRedisClusterKeys(t, nodes[0].Addr) })
	t.Run("kill -9 master and restart", func(t *testing.T) { killMasterAndRestart(t, nodes, masters) })
	t.Run("node on new ports keeps its id", func(t *testing.T) { moveNodeToNewPorts(t, nodes, masters) })
}

// goRedisClusterKeys writes 10,000 keys through a go-redis v9 ClusterClient
// (plain commands from several goroutines, then pipelines) and reads them
// back.
func goRedisClusterKeys(t *testing.T, seed string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        []string{seed},
		DialTimeout:  5 * time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		MaxRedirects: 3,
	})
	defer cc.Close()
	require.NoError(t, cc.Ping(ctx).Err())
	const total, workers = 10000, 8
	key := func(i int) string { return "gr:" + strconv.Itoa(i) }
	val := func(i int) string { return "value-" + strconv.Itoa(i*7) }

	// The first half as single SETs from several goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total/2; i += workers {
				if err := cc.Set(ctx, key(i), val(i), 0).Err(); err != nil {
					errs <- fmt.Errorf("SET %s: %w", key(i), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The second half through pipelines (split per node by go-redis).
	for lo := total / 2; lo < total; lo += 500 {
		_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+500; i++ {
				p.Set(ctx, key(i), val(i), 0)
			}
			return nil
		})
		require.NoError(t, err)
	}
	// Read everything back, pipelined, and a sample with single GETs.
	for lo := 0; lo < total; lo += 1000 {
		cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+1000; i++ {
				p.Get(ctx, key(i))
			}
			return nil
		})
		require.NoError(t, err)
		for j, c := range cmds {
			require.Equal(t, val(lo+j), c.(*redis.StringCmd).Val(), key(lo+j))
		}
	}
	for i := 0; i < total; i += 97 {
		v, err := cc.Get(ctx, key(i)).Result()
		require.NoError(t, err)
		require.Equal(t, val(i), v)
	}
	// The keys are spread over the three masters: DBSIZE sums to 10,000 plus
	// whatever the other steps wrote.
	var sum int64
	var mu sync.Mutex
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("master %s holds no key", m.Options().Addr)
		}
		mu.Lock()
		sum += n
		mu.Unlock()
		return nil
	}))
	require.GreaterOrEqual(t, sum, int64(total))
}

// killMasterAndRestart kill -9s a master and restarts it at once from the
// same directory: it comes back with the same id but without its data (no
// persistence), so its replica, which holds the data, takes its slots over
// and the restarted node rejoins as that replica's replica
// (failover/datalost.go); a key written before the kill still reads back.
func killMasterAndRestart(t *testing.T, nodes []*ClusterNode, masters []NodeLine) {
	victim := nodeByPort(t, nodes, masters[1].Port())
	before, err := Myself(victim.Addr)
	require.NoError(t, err)
	lines, err := ClusterNodes(victim.Addr)
	require.NoError(t, err)
	var replica NodeLine
	for _, l := range lines {
		if l.Master == before.ID {
			replica = l
		}
	}
	require.NotEmpty(t, replica.ID, "the master has a replica")
	key := keyOwnedBy(t, slotOwners(t, nodes[0].Addr), victim.Port, "kill:")
	v, err := Query(victim.Addr, "SET", key, "kept")
	require.NoError(t, err)
	require.Equal(t, "OK", v)
	v, err = Query(victim.Addr, "WAIT", "1", "5000")
	require.NoError(t, err)
	require.Equal(t, "1", v, "the replica has the key")
	victim.Kill() // SIGKILL, and waits until it is reaped
	victim.Restart()
	after, err := Myself(victim.Addr)
	require.NoError(t, err)
	require.Equal(t, before.ID, after.ID)
	WaitFor(t, settleTimeout, "the replica to serve the slots and the restarted node to follow it", func() string {
		for _, n := range nodes {
			lines, err := ClusterNodes(n.Addr)
			if err != nil {
				return err.Error()
			}
			for _, l := range lines {
				switch l.ID {
				case replica.ID:
					if !l.HasFlag("master") || strings.Join(l.Slots, " ") != strings.Join(before.Slots, " ") {
						return fmt.Sprintf("%s sees %s as %s serving %v", n.Addr, l.ID, l.Flags, l.Slots)
					}
				case before.ID:
					if !l.HasFlag("slave") || l.Master != replica.ID {
						return fmt.Sprintf("%s sees %s as %s of %s", n.Addr, l.ID, l.Flags, l.Master)
					}
				}
			}
		}
		return ""
	})
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	// The key survived, and the slots take writes again.
	out, code := RunTool(t, 10*time.Second, redisCLIPath(t), "-c", "-p", strconv.Itoa(nodes[0].Port), "GET", key)
	require.Equal(t, 0, code, out)
	require.Equal(t, "kept\n", out)
	out, code = RunTool(t, 10*time.Second, redisCLIPath(t), "-c", "-p", strconv.Itoa(nodes[0].Port), "SET", key, "again")
	require.Equal(t, 0, code, out)
	require.Equal(t, "OK\n", out)
}

// moveNodeToNewPorts restarts a master from its nodes.conf and its RDB on
// other client and bus ports: every other node must update the address of the same id
// (no new node, no handshake), and clients are redirected to the new port.
func moveNodeToNewPorts(t *testing.T, nodes []*ClusterNode, masters []NodeLine) {
	victim := nodeByPort(t, nodes, masters[2].Port())
	before, err := Myself(victim.Addr)
	require.NoError(t, err)
	oldPort := victim.Port
	// With its data (a SAVE first): a master that comes back without it
	// hands its slots to its replica instead (killMasterAndRestart).
	v, err := Query(victim.Addr, "SAVE")
	require.NoError(t, err)
	require.Equal(t, "OK", v)
	victim.RestartOnNewPorts()
	require.NotEqual(t, oldPort, victim.Port)
	after, err := Myself(victim.Addr)
	require.NoError(t, err)
	require.Equal(t, before.ID, after.ID)
	require.Equal(t, before.Slots, after.Slots)
	require.Equal(t, before.Epoch, after.Epoch)
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d@%d", victim.Port, victim.CPort), after.Addr)

	WaitFor(t, settleTimeout, "every node to learn the new address", func() string {
		for _, n := range nodes {
			lines, err := ClusterNodes(n.Addr)
			if err != nil {
				return err.Error()
			}
			if len(lines) != len(nodes) {
				return fmt.Sprintf("%s knows %d nodes", n.Addr, len(lines))
			}
			for _, l := range lines {
				if l.ID == before.ID && l.Addr != after.Addr {
					return fmt.Sprintf("%s still has %s at %s", n.Addr, l.ID, l.Addr)
				}
			}
		}
		return ""
	})
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	key := keyOwnedBy(t, slotOwners(t, nodes[0].Addr), victim.Port, "moved:")
	moved, err := Query(nodes[0].Addr, "SET", key, "x")
	require.NoError(t, err)
	if victim != nodes[0] {
		require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d", slots.KeySlot([]byte(key)), victim.Port), moved)
	}
	out, code := RunTool(t, 30*time.Second, redisCLIPath(t), "--cluster", "check", nodes[0].Addr)
	require.Equal(t, 0, code, out)
}

func nodeByPort(t *testing.T, nodes []*ClusterNode, port int) *ClusterNode {
	t.Helper()
	for _, n := range nodes {
		if n.Port == port {
			return n
		}
	}
	t.Fatalf("no node on port %d", port)
	return nil
}

func currentEpoch(t *testing.T, addr string) string {
	t.Helper()
	info, err := Query(addr, "CLUSTER", "INFO")
	require.NoError(t, err)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "cluster_current_epoch:"); ok {
			return v
		}
	}
	t.Fatalf("no cluster_current_epoch in %q", info)
	return ""
}

// TestClusterWithoutBindAdvertisesMetAddress: nodes listening on every
// interface (no bind, no cluster-announce-ip) and created with redis-cli
// --cluster create on 127.0.0.1 show each other — and send clients — to
// 127.0.0.1, the address they were met on, never another interface of the
// host (an IPv6 ULA made redis-cli -c loop on redirections); redis-cli -c
// reaches every master's keys through node 0.
func TestClusterWithoutBindAdvertisesMetAddress(t *testing.T) {
	cli := redisCLIPath(t)
	nodes := make([]*ClusterNode, 3)
	for i := range nodes {
		nodes[i] = StartClusterNode(t, "", "--bind", "* -::*")
	}
	out := CreateCluster(t, nodes, 0, createTimeout)
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	for _, n := range nodes {
		lines, err := ClusterNodes(n.Addr)
		require.NoError(t, err)
		require.Len(t, lines, 3)
		for _, l := range lines {
			require.True(t, strings.HasPrefix(l.Addr, "127.0.0.1:"), "%s shows %s at %s", n.Addr, l.ID, l.Addr)
		}
	}
	owners := slotOwners(t, nodes[0].Addr)
	for _, m := range nodes {
		key := keyOwnedBy(t, owners, m.Port, "nobind:")
		out, code := RunTool(t, 10*time.Second, cli, "-c", "-p", strconv.Itoa(nodes[0].Port), "SET", key, "v")
		require.Equal(t, 0, code, out)
		require.Equal(t, "OK\n", out)
		if m != nodes[0] {
			moved, err := Query(nodes[0].Addr, "GET", key)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d", slots.KeySlot([]byte(key)), m.Port), moved)
		}
	}
}
