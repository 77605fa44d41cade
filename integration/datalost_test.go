package integration

import (
	"context"
	"fmt"
	"os"
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

// A master that restarts without its data must never wipe its replica
// (issue 18; failover/datalost.go). A 3+3 cluster without persistence
// (save "", appendonly no) under writes to one shard: each round kill -9s
// that shard's master and restarts it at once from the same nodes.conf.
// Redis lets it come back as the master, empty, and its replica resyncs
// to nothing (scripts/datalost-rounds.sh shows it); here the replica takes
// over and the restarted node rejoins as its replica. Checked every round:
// the replica's key count never drops below what it held before the kill,
// and every write acknowledged by WAIT 1 before the kill reads back
// afterwards; at the end redis-cli --cluster check passes.
//
// SHOAL_DATALOST_ROUNDS sets the number of rounds (default 3; the issue's
// figure is 10).

// dataLostTag is the hash tag of the keys written: one slot, one shard.
const dataLostTag = "{datalost}"

func dataLostKey(i int) string { return dataLostTag + ":" + strconv.Itoa(i) }

// shardWriter SETs keys dataLostKey(0), (1), ... to the master of their
// slot in batches of writerBatch followed by WAIT 1: a batch counts as
// replicated once the master acknowledged every SET and WAIT reported the
// replica has them, and only then is the next one written (a failed batch
// is written again, to the master found anew), so the replicated keys are
// always the prefix [0, replicated).
type shardWriter struct {
	find       func() (string, error) // the current master of the slot
	replicated atomic.Int64
	batches    atomic.Int64
	failures   atomic.Int64
	stop       chan struct{}
	stopOnce   sync.Once
	done       chan struct{}
}

const writerBatch = 20

func startShardWriter(find func() (string, error)) *shardWriter {
	w := &shardWriter{find: find, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *shardWriter) run() {
	defer close(w.done)
	var c *redis.Client
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	ctx := context.Background()
	for n := 0; n < 10_000_000; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if c == nil {
			addr, err := w.find()
			if err != nil {
				w.failures.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			c = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
				ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, PoolSize: 1})
		}
		from := int(w.replicated.Load())
		var wait *redis.IntCmd
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < from+writerBatch; i++ {
				p.Set(ctx, dataLostKey(i), i, 0)
			}
			wait = redis.NewIntCmd(ctx, "WAIT", 1, 1000)
			_ = p.Process(ctx, wait)
			return nil
		})
		if err == nil {
			for _, cmd := range cmds {
				if cmd.Err() != nil {
					err = cmd.Err()
					break
				}
			}
		}
		if err != nil || wait.Val() < 1 {
			// Not a master any more, refused, or not replicated: find
			// the master again.
			w.failures.Add(1)
			_ = c.Close()
			c = nil
			time.Sleep(20 * time.Millisecond)
			continue
		}
		w.replicated.Store(int64(from + writerBatch))
		w.batches.Add(1)
		time.Sleep(2 * time.Millisecond)
	}
}

func (w *shardWriter) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// slotOwner returns the address of the master serving slot according to
// the node at addr, and its replicas' addresses.
func slotOwner(addr string, slot int) (master string, replicas []string, err error) {
	lines, err := ClusterNodes(addr)
	if err != nil {
		return "", nil, err
	}
	var id string
	for _, l := range lines {
		if l.HasFlag("master") && !l.HasFlag("fail") && slotSet(l.Slots)(slot) {
			id, master = l.ID, "127.0.0.1:"+strconv.Itoa(l.Port())
		}
	}
	if id == "" {
		return "", nil, fmt.Errorf("%s: no master serves slot %d", addr, slot)
	}
	for _, l := range lines {
		if l.Master == id {
			replicas = append(replicas, "127.0.0.1:"+strconv.Itoa(l.Port()))
		}
	}
	return master, replicas, nil
}

// keysInSlot is CLUSTER COUNTKEYSINSLOT on one node (-1 when it does not
// answer).
func keysInSlot(addr string, slot int) int {
	v, err := Query(addr, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// missingKeys counts the keys of [0, upTo) that addr (a master, or a
// replica read with READONLY) does not hold.
func missingKeys(t *testing.T, addr string, upTo int) int {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, ReadTimeout: 10 * time.Second,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer c.Close()
	missing := 0
	for from := 0; from < upTo; from += 500 {
		var keys []string
		for i := from; i < from+500 && i < upTo; i++ {
			keys = append(keys, dataLostKey(i))
		}
		n, err := c.Exists(ctx, keys...).Result()
		require.NoError(t, err)
		missing += len(keys) - int(n)
	}
	return missing
}

func TestMasterRestartedWithoutDataKeepsReplicaData(t *testing.T) {
	rounds := 3
	if v := os.Getenv("SHOAL_DATALOST_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		rounds = n
	}
	// node-timeout 2 s: a voter gives one vote per master per 2 ×
	// node-timeout (Redis's rule), and the shard's two nodes take turns
	// as its master, so a round starts 2 × node-timeout after the one two
	// rounds before it rather than wait for a failed election's retry.
	const nodeTimeout = 2 * time.Second
	nodes, pairs, _ := startReplicatedCluster(t, "--cluster-node-timeout", strconv.Itoa(int(nodeTimeout/time.Millisecond)))
	slot := int(slots.KeySlot([]byte(dataLostTag)))

	// A node outside the shard answers who serves the slot.
	first, replicas, err := slotOwner(nodes[0].Addr, slot)
	require.NoError(t, err)
	require.Len(t, replicas, 1)
	require.Equal(t, pairs[first], replicas[0])
	var observer *ClusterNode
	for _, n := range nodes {
		if n.Addr != first && n.Addr != replicas[0] {
			observer = n
			break
		}
	}
	find := func() (string, error) {
		m, _, err := slotOwner(observer.Addr, slot)
		return m, err
	}
	// shard waits until the slot's master has one replica, caught up.
	shard := func() (master, replica string) {
		t.Helper()
		WaitFor(t, 60*time.Second, "the shard has a master and a replica", func() string {
			m, r, err := slotOwner(observer.Addr, slot)
			if err != nil {
				return err.Error()
			}
			if len(r) != 1 {
				return fmt.Sprintf("%s has replicas %v", m, r)
			}
			master, replica = m, r[0]
			return ""
		})
		waitReplicaCaughtUp(t, master, replica, 60*time.Second)
		return master, replica
	}
	w := startShardWriter(find)
	defer w.halt()
	WaitFor(t, 30*time.Second, "writes replicated", func() string {
		if w.replicated.Load() < 2000 {
			return fmt.Sprintf("%d keys replicated", w.replicated.Load())
		}
		return ""
	})

	var kills []time.Time
	for round := 1; round <= rounds; round++ {
		if k := len(kills); k >= 2 {
			time.Sleep(time.Until(kills[k-2].Add(2*nodeTimeout + 500*time.Millisecond)))
		}
		master, replica := shard()
		acked := int(w.replicated.Load()) // first: the replica has these
		held := keysInSlot(replica, slot)
		require.GreaterOrEqual(t, held, acked, "the replica holds every key WAIT acknowledged")

		victim := nodeByAddr(nodes, master)
		require.NotNil(t, victim)
		killedAt := time.Now()
		kills = append(kills, killedAt)
		victim.Kill()
		victim.Restart() // same port, directory and nodes.conf; no data file

		// Until the shard serves writes again, the replica never holds
		// fewer keys than before the kill.
		lowest := held
		var resumed time.Duration
		WaitFor(t, 60*time.Second, "writes resume on the shard", func() string {
			if n := keysInSlot(replica, slot); n >= 0 && n < lowest {
				lowest = n
			}
			if int(w.replicated.Load()) < acked+10*writerBatch {
				return fmt.Sprintf("replicated %d, %d before the kill", w.replicated.Load(), acked)
			}
			resumed = time.Since(killedAt)
			return ""
		})
		require.GreaterOrEqual(t, lowest, held, "round %d: the replica lost data (it held %d keys, %d at its lowest)", round, held, lowest)
		newMaster, _, err := slotOwner(observer.Addr, slot)
		require.NoError(t, err)
		require.Zero(t, missingKeys(t, newMaster, acked), "round %d: keys acknowledged by WAIT before the kill are missing", round)
		t.Logf("round %d: killed master %s (its replica %s held %d keys, %d acknowledged by WAIT); lowest count on the replica %d; "+
			"the slot is now served by %s; writes replicated again %v after the kill",
			round, master, replica, held, acked, lowest, newMaster, resumed.Round(time.Millisecond))
	}

	w.halt()
	final := int(w.replicated.Load())
	m, r := shard()
	require.Zero(t, missingKeys(t, m, final))
	require.Zero(t, missingKeys(t, r, final))
	t.Logf("%d rounds: %d keys acknowledged by WAIT, all present on the master and the replica; %d batches, %d failed attempts",
		rounds, final, w.batches.Load(), w.failures.Load())
	WaitClusterSettled(t, nodes, 3, 60*time.Second)
	out, code := RunTool(t, 30*time.Second, redisCLIPath(t), "--cluster", "check", nodes[0].Addr)
	require.Zero(t, code, out)
	require.True(t, strings.Contains(out, "[OK] All 16384 slots covered."), out)
}

// A whole shard killed at once: the replica kept its data (an RDB file
// from SAVE), the master has none. The replica, restarted with offset 0
// but holding keys, says so on the bus; the master waits for it and it
// takes the slots over with its keys.
func TestShardRestartedReplicaWithDataTakesOver(t *testing.T) {
	nodes, _, _ := startReplicatedCluster(t, "--cluster-node-timeout", "2000")
	slot := int(slots.KeySlot([]byte(dataLostTag)))
	master, replicas, err := slotOwner(nodes[0].Addr, slot)
	require.NoError(t, err)
	require.Len(t, replicas, 1)
	replica := replicas[0]
	var observer string
	for _, n := range nodes {
		if n.Addr != master && n.Addr != replica {
			observer = n.Addr
			break
		}
	}

	const keys = 2000
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: master, PoolSize: 1})
	defer mc.Close()
	_, err = mc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < keys; i++ {
			p.Set(ctx, dataLostKey(i), i, 0)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), mc.Wait(ctx, 1, 5000).Val())
	v, err := Query(replica, "SAVE")
	require.NoError(t, err)
	require.Equal(t, "OK", v)

	mn, rn := nodeByAddr(nodes, master), nodeByAddr(nodes, replica)
	mn.Kill()
	rn.Kill()
	rn.Restart() // loads its RDB
	mn.Restart() // nothing to load

	WaitFor(t, 60*time.Second, "the replica serves the slot and the old master follows it", func() string {
		m, r, err := slotOwner(observer, slot)
		if err != nil {
			return err.Error()
		}
		if m != replica || len(r) != 1 || r[0] != master {
			return fmt.Sprintf("slot served by %s, replicas %v", m, r)
		}
		return ""
	})
	waitReplicaCaughtUp(t, replica, master, 60*time.Second)
	require.Zero(t, missingKeys(t, replica, keys))
	require.Zero(t, missingKeys(t, master, keys))
	WaitClusterSettled(t, nodes, 3, 60*time.Second)
}
