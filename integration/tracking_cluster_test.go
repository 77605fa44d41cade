package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// rueidis is a RESP3 client whose defaults turn client-side caching on
// (CLIENT TRACKING ON OPTIN, CLIENT CACHING YES before each cached read);
// it serves a cached read from its own memory without asking the server,
// so only the server's invalidation keeps it fresh.

// cachedReader reads one key through rueidis's client-side cache while a
// go-redis ClusterClient writes it.
type cachedReader struct {
	t      *testing.T
	ctx    context.Context
	cache  rueidis.Client
	writer *redis.ClusterClient
	key    string
	// replicated makes each write wait (WAIT 1) until the master's replica
	// acknowledged it: after the failover the caching client's cache is on
	// the old master, now a replica, which invalidates the key only when
	// it applies the write from its replication stream. A master acknowledges
	// a write before its replicas apply it, in Redis as in shoal, so without
	// WAIT the next cached read races the stream.
	replicated bool
}

// requireFreshAfterWrite writes val with another client, then checks that
// one round trip of the caching client to the key's node is enough for its
// next cached read to miss and return val (the invalidation came first on
// its connection), and that the read after that is served from the cache.
func (r *cachedReader) requireFreshAfterWrite(val, when string) {
	r.t.Helper()
	if r.replicated {
		r.setAcknowledgedByReplica(val, when)
	} else {
		require.NoError(r.t, r.writer.Set(r.ctx, r.key, val, 0).Err(), when)
	}
	got, err := r.cache.Do(r.ctx, r.cache.B().Get().Key(r.key).Build()).ToString()
	require.NoError(r.t, err, when)
	require.Equal(r.t, val, got, when)
	res := r.cache.DoCache(r.ctx, r.cache.B().Get().Key(r.key).Cache(), time.Minute)
	got, err = res.ToString()
	require.NoError(r.t, err, when)
	require.Equal(r.t, val, got, "%s: the cached read after one round trip", when)
	require.False(r.t, res.IsCacheHit(), "%s: the write invalidated the cached value", when)
	res = r.cache.DoCache(r.ctx, r.cache.B().Get().Key(r.key).Cache(), time.Minute)
	got, err = res.ToString()
	require.NoError(r.t, err, when)
	require.Equal(r.t, val, got, when)
	require.True(r.t, res.IsCacheHit(), "%s: the value read again is cached", when)
}

// setAcknowledgedByReplica writes val on the key's master and WAITs on the
// same connection (WAIT counts the acknowledgements of that connection's
// last write) until one replica applied it. The writer's view of the slots
// may be stale right after the failover: a MOVED makes it reload and retry.
func (r *cachedReader) setAcknowledgedByReplica(val, when string) {
	r.t.Helper()
	var lastErr error
	for range 50 {
		master, err := r.writer.MasterForKey(r.ctx, r.key)
		require.NoError(r.t, err, when)
		var wait *redis.Cmd
		_, err = master.Pipelined(r.ctx, func(p redis.Pipeliner) error {
			p.Set(r.ctx, r.key, val, 0)
			wait = p.Do(r.ctx, "WAIT", 1, 10000)
			return nil
		})
		if err == nil {
			acked, err := wait.Int64()
			require.NoError(r.t, err, when)
			require.Equal(r.t, int64(1), acked, "%s: one replica acknowledged the write", when)
			return
		}
		lastErr = err
		r.writer.ReloadState(r.ctx)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(r.t, lastErr, "%s: the write and its WAIT", when)
}

// TestClientSideCachingAcrossMigrationAndFailover: rueidis with its default
// options (RESP3, client-side caching on) against a 3+3 cluster made by
// redis-cli. A cached read is invalidated within one round trip after
// another client's write; after the key's slot moved to another master
// (SETSLOT MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE: the source's MIGRATE
// deletes the key, which invalidates it) and after a manual failover of its
// new master (the old master, now a replica, applies the new master's
// write from the replication stream and invalidates it; the writer WAITs
// for that), the cached value
// is never served stale, and caching goes on against the new owner.
func TestClientSideCachingAcrossMigrationAndFailover(t *testing.T) {
	nodes := StartClusterNodes(t, 6)
	CreateCluster(t, nodes, 1, createTimeout)
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	ctx := context.Background()
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	cache, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
	require.NoError(t, err)
	t.Cleanup(cache.Close)
	writer := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16})
	t.Cleanup(func() { _ = writer.Close() })

	const key = "cached:{user1000}"
	r := &cachedReader{t: t, ctx: ctx, cache: cache, writer: writer, key: key}
	r.requireFreshAfterWrite("v1", "first write")
	r.requireFreshAfterWrite("v2", "second write")

	// Move the key's slot to another master.
	slot := int(slots.KeySlot([]byte(key)))
	src, _, err := slotOwner(nodes[0].Addr, slot)
	require.NoError(t, err)
	var srcID, dstID, dstAddr string
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	for _, l := range lines {
		addr := "127.0.0.1:" + strconv.Itoa(l.Port())
		switch {
		case !l.HasFlag("master"):
		case addr == src:
			srcID = l.ID
		case dstID == "":
			dstID, dstAddr = l.ID, addr
		}
	}
	require.NotEmpty(t, srcID)
	require.NotEmpty(t, dstID)
	moveSlot(t, nodes, slot, src, srcID, dstAddr, dstID)
	r.requireFreshAfterWrite("v3", "after the slot moved")
	r.requireFreshAfterWrite("v4", "a write on the new owner")

	// Fail the new owner over to its replica.
	var replicaNode *ClusterNode
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		if me.Master == dstID {
			replicaNode = n
		}
	}
	require.NotNil(t, replicaNode, "a replica of %s", dstID)
	out, err := Query(replicaNode.Addr, "CLUSTER", "FAILOVER")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	WaitFor(t, 20*time.Second, "the old master to become a replica", func() string {
		me, err := Myself(dstAddr)
		if err != nil {
			return err.Error()
		}
		if !me.HasFlag("slave") {
			return me.Flags
		}
		return ""
	})
	r.replicated = true
	r.requireFreshAfterWrite("v5", "after the failover")
	r.requireFreshAfterWrite("v6", "a write on the promoted replica")
}

// moveSlot moves slot from the master at src to the one at dst as
// redis-cli --cluster reshard does, then waits until every node agrees.
func moveSlot(t *testing.T, nodes []*ClusterNode, slot int, src, srcID, dst, dstID string) {
	t.Helper()
	s := strconv.Itoa(slot)
	mustOK := func(addr string, args ...string) {
		t.Helper()
		out, err := Query(addr, args...)
		require.NoError(t, err, "%s %v", addr, args)
		require.Equal(t, "OK", out, "%s %v", addr, args)
	}
	mustOK(dst, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
	mustOK(src, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID)
	host, port, _ := strings.Cut(dst, ":")
	c := redis.NewClient(&redis.Options{Addr: src})
	defer c.Close()
	ctx := context.Background()
	for range 100 {
		keys, err := c.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 10000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, c.Do(ctx, args...).Err())
	}
	mustOK(dst, "CLUSTER", "SETSLOT", s, "NODE", dstID)
	mustOK(src, "CLUSTER", "SETSLOT", s, "NODE", dstID)
	WaitFor(t, 20*time.Second, fmt.Sprintf("every node to see slot %d on %s", slot, dst), func() string {
		for _, n := range nodes {
			owner, _, err := slotOwner(n.Addr, slot)
			if err != nil {
				return err.Error()
			}
			if owner != dst {
				return n.Addr + " sees " + owner
			}
		}
		return ""
	})
}
