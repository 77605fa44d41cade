package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// TestClusterPubSub: on a 3+3 cluster made by redis-cli, a PUBLISH on one
// node reaches subscribers on every other node (the cluster bus), an
// SPUBLISH reaches the shard only, SSUBSCRIBE on a node of another shard
// is redirected with -MOVED, go-redis's ClusterClient shard Pub/Sub works,
// and subscribers of a shard channel whose slot leaves the node get
// sunsubscribe.
func TestClusterPubSub(t *testing.T) {
	nodes := StartClusterNodes(t, 6)
	CreateCluster(t, nodes, 1, createTimeout)
	ctx := context.Background()

	// A classic subscriber on every node; PUBLISH on node 0.
	var subs []*redis.PubSub
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		t.Cleanup(func() { _ = c.Close() })
		p := c.Subscribe(ctx, "bcast")
		_, err := p.Receive(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		subs = append(subs, p)
	}
	pub := redis.NewClient(&redis.Options{Addr: nodes[0].Addr})
	t.Cleanup(func() { _ = pub.Close() })
	n, err := pub.Publish(ctx, "bcast", "hello").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "PUBLISH counts this node's receivers only")
	for i, p := range subs {
		m, err := receiveMessage(ctx, p, 10*time.Second)
		require.NoError(t, err, "node %d", i)
		require.Equal(t, "bcast", m.Channel)
		require.Equal(t, "hello", m.Payload)
	}

	// Shard channels: find the owner of the channel's slot and its replica.
	const channel = "orders{42}"
	slot := int(slots.KeySlot([]byte(channel)))
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	var owner NodeLine
	for _, l := range lines {
		if l.HasFlag("master") && ownsSlot(l, slot) {
			owner = l
		}
	}
	require.NotEmpty(t, owner.ID, "owner of slot %d", slot)
	var ownerNode, otherNode *ClusterNode
	var replicaNodes []*ClusterNode
	for _, nd := range nodes {
		me, err := Myself(nd.Addr)
		require.NoError(t, err)
		switch {
		case me.ID == owner.ID:
			ownerNode = nd
		case me.Master == owner.ID:
			replicaNodes = append(replicaNodes, nd)
		case otherNode == nil && me.HasFlag("master"):
			otherNode = nd
		}
	}
	require.NotNil(t, ownerNode)
	require.NotNil(t, otherNode)

	// Another shard's node redirects SSUBSCRIBE and SPUBLISH.
	moved := fmt.Sprintf("-MOVED %d 127.0.0.1:%d", slot, ownerNode.Port)
	out, err := Query(otherNode.Addr, "SSUBSCRIBE", channel)
	require.NoError(t, err)
	require.Equal(t, moved, out)
	out, err = Query(otherNode.Addr, "SPUBLISH", channel, "x")
	require.NoError(t, err)
	require.Equal(t, moved, out)

	// go-redis's ClusterClient: SSUBSCRIBE and SPUBLISH through the slot map.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	t.Cleanup(func() { _ = cc.Close() })
	sp := cc.SSubscribe(ctx, channel)
	t.Cleanup(func() { _ = sp.Close() })
	_, err = sp.Receive(ctx)
	require.NoError(t, err)
	// SPUBLISH stays in the shard: a classic subscriber of the same name
	// on another shard's node hears nothing.
	other := redis.NewClient(&redis.Options{Addr: otherNode.Addr})
	t.Cleanup(func() { _ = other.Close() })
	op := other.Subscribe(ctx, channel)
	t.Cleanup(func() { _ = op.Close() })
	_, err = op.Receive(ctx)
	require.NoError(t, err)

	// The owner's replica serves shard channels too, READONLY or not
	// (Redis's is_pubsubshard), and hears the master's SPUBLISH over the bus.
	require.NotEmpty(t, replicaNodes)
	rc := redis.NewClient(&redis.Options{Addr: replicaNodes[0].Addr})
	t.Cleanup(func() { _ = rc.Close() })
	rsp := rc.SSubscribe(ctx, channel)
	t.Cleanup(func() { _ = rsp.Close() })
	_, err = rsp.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err)

	n, err = cc.SPublish(ctx, channel, "s1").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	m, err := receiveMessage(ctx, sp, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "s1", m.Payload)
	m, err = receiveMessage(ctx, rsp, 10*time.Second)
	require.NoError(t, err, "the replica's shard subscriber")
	require.Equal(t, "s1", m.Payload)
	_, err = receiveMessage(ctx, op, 500*time.Millisecond)
	require.Error(t, err, "SPUBLISH must not reach another shard's classic subscribers")

	// The slot leaves the owner (CLUSTER DELSLOTS): its shard subscribers
	// are told with sunsubscribe, as Redis's removeChannelsInSlot.
	raw := redis.NewClient(&redis.Options{Addr: ownerNode.Addr})
	t.Cleanup(func() { _ = raw.Close() })
	rp := raw.SSubscribe(ctx, channel)
	t.Cleanup(func() { _ = rp.Close() })
	_, err = rp.Receive(ctx)
	require.NoError(t, err)
	out, err = Query(ownerNode.Addr, "CLUSTER", "DELSLOTS", fmt.Sprint(slot))
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	msg, err := rp.ReceiveTimeout(ctx, 10*time.Second)
	require.NoError(t, err)
	sub, ok := msg.(*redis.Subscription)
	require.True(t, ok, "got %T %v", msg, msg)
	require.Equal(t, "sunsubscribe", sub.Kind)
	require.Equal(t, channel, sub.Channel)
	require.Equal(t, 0, sub.Count)
	left, err := cc.PubSubShardChannels(ctx, "*").Result()
	require.NoError(t, err)
	require.NotContains(t, left, channel)
	out, err = Query(ownerNode.Addr, "CLUSTER", "ADDSLOTS", fmt.Sprint(slot))
	require.NoError(t, err)
	require.Equal(t, "OK", out)
}

// ownsSlot reports whether a CLUSTER NODES line lists slot.
func ownsSlot(l NodeLine, slot int) bool {
	for _, r := range l.Slots {
		lo, hi := r, r
		if i := strings.IndexByte(r, '-'); i > 0 {
			lo, hi = r[:i], r[i+1:]
		}
		var a, b int
		if _, err := fmt.Sscan(lo, &a); err != nil {
			continue
		}
		if _, err := fmt.Sscan(hi, &b); err != nil {
			continue
		}
		if slot >= a && slot <= b {
			return true
		}
	}
	return false
}

// receiveMessage waits at most d for the next message (go-redis's
// ReceiveMessage does not bound its read by the context's deadline).
func receiveMessage(ctx context.Context, p *redis.PubSub, d time.Duration) (*redis.Message, error) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		msg, err := p.ReceiveTimeout(ctx, left)
		if err != nil {
			return nil, err
		}
		if m, ok := msg.(*redis.Message); ok {
			return m, nil
		}
	}
}
