package gossip

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// linkDirs lists st's CLUSTER LINKS directions for the node id.
func linkDirs(st *State, id string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range st.Links() {
		if l.Node == id {
			out[l.Direction] = l.CreateTime
		}
	}
	return out
}

// metPair is two nodes that have met and talked for a second.
func metPair(t *testing.T) (sm *sim, a, b *State) {
	sm = newSim(t, 2, testOpts())
	sm.meetAll()
	sm.run(time.Second)
	return sm, sm.nodes[0], sm.nodes[1]
}

func TestDropFilterIgnoresOneMessageType(t *testing.T) {
	sm, a, b := metPair(t)
	pongsBefore := a.statsRecv[MsgPong]

	// b drops every PING: a's pings stay unanswered (b's own pings still
	// reach a, which is liveness enough to keep b from PFAIL, as in Redis).
	b.SetDropFilter(int64(MsgPing))
	pingsBefore := b.statsRecv[MsgPing]
	sm.run(testOpts().NodeTimeout)
	require.Greater(t, b.statsRecv[MsgPing], pingsBefore, "dropped packets still count as received")
	n, ok := a.Node(b.MyID())
	require.True(t, ok)
	require.NotZero(t, n.PingSent, "a's pings to b were answered")
	require.LessOrEqual(t, n.PingSent, sm.clock.Now().Add(-testOpts().NodeTimeout/2).UnixMilli())

	// Both drop PINGs (Redis's tests/cluster/27-endpoints does that to keep
	// two nodes apart): nothing flows between them and each flags the
	// other PFAIL.
	a.SetDropFilter(int64(MsgPing))
	sm.run(testOpts().NodeTimeout + time.Second)
	n, _ = a.Node(b.MyID())
	require.NotZero(t, n.Flags&FlagPFail, "%s", n.Flags)
	n, _ = b.Node(a.MyID())
	require.NotZero(t, n.Flags&FlagPFail, "%s", n.Flags)
	a.SetDropFilter(-1)

	// -1 drops nothing again: b answers and a clears PFAIL.
	b.SetDropFilter(-1)
	sm.run(time.Second)
	n, _ = a.Node(b.MyID())
	require.Zero(t, n.Flags&(FlagPFail|FlagFail), "%s", n.Flags)
	require.Greater(t, a.statsRecv[MsgPong], pongsBefore)

	// A number that is no message type drops nothing either.
	b.SetDropFilter(99)
	before := b.statsRecv[MsgPing]
	sm.run(time.Second)
	require.Greater(t, b.statsRecv[MsgPing], before)
	n, _ = a.Node(b.MyID())
	require.Zero(t, n.Flags&(FlagPFail|FlagFail), "%s", n.Flags)
}

func TestKillLinkTo(t *testing.T) {
	sm, a, b := metPair(t)
	before := linkDirs(a, b.MyID())
	require.Contains(t, before, "to")
	require.Contains(t, before, "from")

	require.EqualError(t, a.KillLink("to", "0123456789012345678901234567890123456789"),
		"ERR Unknown node 0123456789012345678901234567890123456789")
	require.EqualError(t, a.KillLink("sideways", b.MyID()), "ERR Unknown direction sideways")
	require.NoError(t, a.KillLink("to", a.MyID()), "killing a link with myself is a no-op")

	sm.clock.Advance(50 * time.Millisecond)
	require.NoError(t, a.KillLink("TO", b.MyID()))
	after := linkDirs(a, b.MyID())
	require.NotContains(t, after, "to")
	require.Equal(t, before["from"], after["from"], "the inbound link is not touched")

	// Until the next cron tick nothing reaches b: a broadcast (here a
	// PUBLISH) skips it, as Redis's skips a node without a link.
	a.broadcast(&Message{Type: MsgPublish, Channel: []byte("ch"), Payload: []byte("lost")}, false)
	for _, e := range a.Ready().Messages {
		require.NotEqual(t, b.MyID(), e.To, "%s sent to a killed link", e.Msg.Type)
	}

	// The next tick makes a new link and opens it with a PING.
	sm.clock.Advance(100 * time.Millisecond)
	a.Tick()
	var ping bool
	for _, e := range a.Ready().Messages {
		ping = ping || e.To == b.MyID() && e.Msg.Type == MsgPing
	}
	require.True(t, ping, "no PING on the new link")
	after = linkDirs(a, b.MyID())
	require.Contains(t, after, "to")
	require.Greater(t, after["to"], before["to"], "the new link has a new creation time")
}

func TestKillLinkFrom(t *testing.T) {
	sm, a, b := metPair(t)
	before := linkDirs(a, b.MyID())

	require.NoError(t, a.KillLink("from", b.MyID()))
	after := linkDirs(a, b.MyID())
	require.NotContains(t, after, "from")
	require.Equal(t, before["to"], after["to"])

	// b's next message opens a new inbound link.
	sm.run(time.Second)
	after = linkDirs(a, b.MyID())
	require.Contains(t, after, "from")
	require.Greater(t, after["from"], before["from"])

	require.NoError(t, a.KillLink("all", b.MyID()))
	require.Empty(t, linkDirs(a, b.MyID()))
	sm.run(time.Second)
	require.Len(t, linkDirs(a, b.MyID()), 2)
}
