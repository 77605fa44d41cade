package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The rules below are Redis's (clusterProcessPacket) plus one of shoal's:
// FAIL and UPDATE only from a node we are linked with. Each test drives
// three converged State machines and hands one of them a forged message,
// as an attacker on the bus network without the secret could.

// strictCluster is three masters serving 0-5460, 5461-10922, 10923-16383.
func strictCluster(t *testing.T) *sim {
	sm := newSim(t, 3, testOpts())
	for i, r := range []string{"0 5460", "5461 10922", "10923 16383"} {
		require.NoError(t, sm.nodes[i].AddSlotsRange(args(r)))
		require.NoError(t, sm.nodes[i].SetConfigEpoch(args(string(rune('1' + i)))[0]))
	}
	sm.meetAll()
	sm.run(6 * time.Second)
	for _, st := range sm.nodes {
		require.True(t, st.StateOK())
		require.Len(t, knownIDs(st), 3)
	}
	return sm
}

var attackerID = strings.Repeat("e", 40)

func forged(t MsgType, sender string) *Message {
	return &Message{Type: t, Sender: sender, CurrentEpoch: 1000, ConfigEpoch: 1000, IP: "127.0.0.1", Port: 6666, CPort: 16666}
}

func TestForgedFailFromUnknownSenderIgnored(t *testing.T) {
	sm := strictCluster(t)
	a, b := sm.nodes[0], sm.nodes[1]
	m := forged(MsgFail, attackerID)
	m.About = b.MyID()
	a.Step(m)
	sm.deliver()
	n, _ := a.Node(b.MyID())
	require.Zero(t, n.Flags&FlagFail, "a believed a FAIL from an unknown sender")
	cur, _ := a.Epochs()
	require.Less(t, cur, uint64(1000), "an unknown sender's epoch was taken")
	require.True(t, a.StateOK())
}

// A known id is not enough: the sender must be a node we are linked with
// (something arrived from it within node-timeout before this message).
func TestFailAndUpdateOnlyFromLinkedNodes(t *testing.T) {
	sm := strictCluster(t)
	a, b, c := sm.nodes[0], sm.nodes[1], sm.nodes[2]
	// c goes silent for longer than node-timeout (it left, say); then a
	// "FAIL about b" and an "UPDATE giving c slots 0-100" arrive naming c.
	sm.drop = func(from, to *State) bool { return from == c || to == c }
	sm.run(testOpts().NodeTimeout + 500*time.Millisecond)
	sm.drop = func(from, to *State) bool { return true } // freeze the others' traffic
	m := forged(MsgFail, c.MyID())
	m.About = b.MyID()
	a.Step(m)
	n, _ := a.Node(b.MyID())
	require.Zero(t, n.Flags&FlagFail, "FAIL from a node silent for node-timeout was believed")

	u := forged(MsgUpdate, c.MyID())
	u.Update = &Update{ID: c.MyID(), ConfigEpoch: 1000}
	u.Update.Slots.Set(0)
	a.Step(u)
	require.Equal(t, a.MyID(), ownerOf(a, 0), "UPDATE from a node silent for node-timeout moved slot 0")

	// The same FAIL from a linked node is believed (Redis's rule).
	m = forged(MsgFail, b.MyID())
	m.About = c.MyID()
	a.Step(m)
	n, _ = a.Node(c.MyID())
	require.NotZero(t, n.Flags&FlagFail, "FAIL from a linked master must be believed")
}

func TestUpdateFromHandshakeNodeIgnored(t *testing.T) {
	sm := strictCluster(t)
	a := sm.nodes[0]
	// An attacker MEETs a: it is added in handshake state under a made-up
	// id and stays there, since it never answers a's PING.
	meet := forged(MsgMeet, attackerID)
	a.Step(meet)
	var hs string
	for _, n := range a.Nodes() {
		if n.Flags&FlagHandshake != 0 {
			hs = n.ID
		}
	}
	require.NotEmpty(t, hs, "MEET starts a handshake")
	for _, sender := range []string{hs, attackerID} {
		u := forged(MsgUpdate, sender)
		u.Update = &Update{ID: sender, ConfigEpoch: 1000}
		for j := 0; j <= 100; j++ {
			u.Update.Slots.Set(j)
		}
		a.Step(u)
		require.Equal(t, a.MyID(), ownerOf(a, 0), "UPDATE from %s moved slots", sender)
	}
	// A PING claiming slots 0-100 from the handshake node changes nothing either.
	p := forged(MsgPing, hs)
	for j := 0; j <= 100; j++ {
		p.Slots.Set(j)
	}
	a.Step(p)
	require.Equal(t, a.MyID(), ownerOf(a, 0))
	require.True(t, a.StateOK())
}

func TestGossipAboutUnknownNodesFromUnknownSenderIgnored(t *testing.T) {
	sm := strictCluster(t)
	a := sm.nodes[0]
	before := len(a.Nodes())
	for _, typ := range []MsgType{MsgPing, MsgPong, MsgMeet} {
		m := forged(typ, attackerID)
		m.To = a.MyID()
		m.Gossip = []GossipEntry{{ID: strings.Repeat("d", 40), IP: "127.0.0.1", Port: 7777, CPort: 17777, Flags: FlagMaster}}
		a.Step(m)
	}
	_, ok := a.Node(strings.Repeat("d", 40))
	require.False(t, ok, "a gossip entry from an unknown sender added a node")
	// The MEET added one handshake node (Redis does the same), nothing else.
	require.Len(t, a.Nodes(), before+1)
}

// A node that MEETs us and never completes the handshake is dropped after
// Redis's handshake timeout (node-timeout, at least 1 s).
func TestGhostHandshakeNodeExpires(t *testing.T) {
	sm := strictCluster(t)
	a := sm.nodes[0]
	a.Step(forged(MsgMeet, attackerID))
	require.Len(t, a.Nodes(), 4)
	sm.run(testOpts().NodeTimeout + 300*time.Millisecond)
	require.Len(t, a.Nodes(), 3, "the handshake node outlived the handshake timeout:\n%s", a.NodesText())
	require.True(t, a.StateOK())
}

// The node that receives a MEET completes its side of the handshake by
// pinging back; a ping (or its PONG) lost must be retried within the
// handshake timeout, or the node never learns the peer: the peer has
// finished its side and sends no MEET again, and memberlist's membership
// no longer adds nodes. (Seen under load: one node of a fresh 6-node
// cluster knew nobody after redis-cli --cluster create.)
func TestHandshakeSurvivesALostPing(t *testing.T) {
	sm := newSim(t, 2, testOpts())
	a, b := sm.nodes[0], sm.nodes[1]
	// a's first three handshake PINGs to b are lost; its PONG to b's MEET is not,
	// so b completes its side at once and sends no MEET again.
	lost := 0
	sm.dropMsg = func(from *State, m *Message) bool {
		if from == a && m.Type == MsgPing && lost < 3 {
			lost++
			return true
		}
		return false
	}
	me := a.Myself()
	require.NoError(t, b.Meet([]byte(me.IP), []byte("7000"), nil))
	sm.run(5 * time.Second)
	require.Len(t, knownIDs(a), 2, "a:\n%s", a.NodesText())
	require.Len(t, knownIDs(b), 2, "b:\n%s", b.NodesText())
}
