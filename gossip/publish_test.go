package gossip

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPublishReachesEveryNodeAndShardOnlyItsShard: a PUBLISH goes to every
// other node, a PUBLISHSHARD from a master or from one of its replicas to
// the rest of that shard only, and receivers hand them to the server as
// Inbound (through the wire codec, as memberlist carries them).
func TestPublishReachesEveryNodeAndShardOnlyItsShard(t *testing.T) {
	sm := newSim(t, 5, testOpts())
	sm.meetAll()
	sm.run(3 * time.Second)
	a, b, ra1, ra2, rb := sm.nodes[0], sm.nodes[1], sm.nodes[2], sm.nodes[3], sm.nodes[4]
	require.NoError(t, a.AddSlotsRange([][]byte{[]byte("0"), []byte("8191")}))
	require.NoError(t, b.AddSlotsRange([][]byte{[]byte("8192"), []byte("16383")}))
	sm.run(2 * time.Second)
	require.NoError(t, ra1.Replicate(a.MyID(), true))
	require.NoError(t, ra2.Replicate(a.MyID(), true))
	require.NoError(t, rb.Replicate(b.MyID(), true))
	sm.run(3 * time.Second)
	for _, st := range sm.nodes {
		_ = st.Ready() // nothing pending before the publish under test
	}

	// send runs one publish on from and returns who received it.
	send := func(from *State, publish func()) []string {
		publish()
		var got []string
		for _, e := range from.Ready().Messages {
			to := sm.byAddr[e.Addr]
			require.NotNil(t, to, e.Addr)
			m, err := Decode(e.Msg.Encode())
			require.NoError(t, err)
			to.Step(m)
			for _, in := range to.Ready().Inbound {
				require.Equal(t, "news", string(in.Channel))
				require.Equal(t, "hello", string(in.Payload))
				require.Equal(t, from.MyID(), in.Sender)
				got = append(got, to.MyID())
			}
		}
		sort.Strings(got)
		return got
	}
	ids := func(sts ...*State) []string {
		var out []string
		for _, st := range sts {
			out = append(out, st.MyID())
		}
		sort.Strings(out)
		return out
	}
	body := func() ([]byte, []byte) { return []byte("news"), []byte("hello") }

	require.Equal(t, ids(b, ra1, ra2, rb), send(a, func() {
		ch, p := body()
		a.Broadcast(&Message{Type: MsgPublish, Channel: ch, Payload: p}, false)
	}), "PUBLISH reaches every other node")
	require.Equal(t, ids(ra1, ra2), send(a, func() { a.publishShard(body()) }), "SPUBLISH on a master")
	require.Equal(t, ids(a, ra2), send(ra1, func() { ra1.publishShard(body()) }), "SPUBLISH on a replica")
	require.Equal(t, ids(b), send(rb, func() { rb.publishShard(body()) }), "SPUBLISH in the other shard")
}
