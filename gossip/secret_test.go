package gossip

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

const (
	secretA = "secret-A-0123456789abcdef"
	secretB = "secret-B-0123456789abcdef"
)

// memBus starts a bus on the in-memory network with the given secrets.
func memBus(t *testing.T, network *MemNetwork, seed uint64, secrets ...string) *Bus {
	t.Helper()
	tr := network.NewTransport()
	opts := DefaultOptions()
	opts.NodeTimeout = 2 * time.Second
	b, err := New(Config{Options: opts, IP: "127.0.0.1", Port: 7000 + int(seed), ClusterPort: tr.Port(),
		Transport: tr, Seed: seed, Secrets: secrets})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	return b
}

func meet(t *testing.T, from, to *Bus) {
	t.Helper()
	me := to.Myself()
	require.NoError(t, from.Meet([]byte(me.IP), []byte(strconv.Itoa(me.Port)), []byte(strconv.Itoa(me.CPort))))
}

// fullMesh reports whether every bus knows exactly the others, all linked.
func fullMesh(buses []*Bus) bool {
	for _, b := range buses {
		nodes := b.Nodes()
		if len(nodes) != len(buses) {
			return false
		}
		for _, n := range nodes {
			if !n.Connected || n.Flags&(FlagHandshake|FlagNoAddr|FlagPFail|FlagFail) != 0 {
				return false
			}
		}
	}
	return true
}

// mentions reports whether b's CLUSTER NODES names the outsider's id or
// bus port.
func mentions(b, outsider *Bus) bool {
	o := outsider.Myself()
	text := b.NodesText()
	return strings.Contains(text, o.ID) || strings.Contains(text, "@"+strconv.Itoa(o.CPort))
}

// formSecretCluster gives the first bus every slot, distinct config
// epochs to all, meets them and waits for the full mesh.
func formSecretCluster(t *testing.T, buses []*Bus) {
	t.Helper()
	require.NoError(t, buses[0].AddSlotsRange(args("0 16383")))
	for i, b := range buses {
		require.NoError(t, b.SetConfigEpoch([]byte(strconv.Itoa(i+1))))
	}
	meet(t, buses[1], buses[0])
	meet(t, buses[2], buses[0])
	testharness.WaitFor(t, 20*time.Second, "the 3 members to mesh", func() bool { return fullMesh(buses) })
}

func TestSecretKeyDerivation(t *testing.T) {
	k := SecretKey(secretA)
	require.Len(t, k, 32, "AES-256")
	require.Equal(t, k, SecretKey(secretA))
	require.NotEqual(t, k, SecretKey(secretB))
	require.NoError(t, memberlist.ValidateKey(k))
}

// With the secret on every member, a node without it or with another one
// never enters the cluster, whoever MEETs whom, and a message it forges
// naming a real member is dropped before shoal sees it.
func TestBusSecretKeepsOutsidersOut(t *testing.T) {
	network := &MemNetwork{}
	buses := []*Bus{memBus(t, network, 1, secretA), memBus(t, network, 2, secretA), memBus(t, network, 3, secretA)}
	plain := memBus(t, network, 4)
	wrong := memBus(t, network, 5, secretB)
	all := append(append([]*Bus{}, buses...), plain, wrong)
	defer func() { stopAll(all) }()
	formSecretCluster(t, buses)

	for _, o := range []*Bus{plain, wrong} {
		meet(t, o, buses[0]) // the outsiders told to meet the cluster
		meet(t, o, buses[2])
	}
	// Forged by the outsiders: a FAIL of member 0 and an UPDATE giving
	// slots 0-100 away, both naming member 1 as their sender.
	fail := &Message{Type: MsgFail, Sender: buses[1].MyID(), About: buses[0].MyID(), CurrentEpoch: 99, IP: "127.0.0.1"}
	upd := &Message{Type: MsgUpdate, Sender: buses[1].MyID(), CurrentEpoch: 99, IP: "127.0.0.1",
		Update: &Update{ID: buses[1].MyID(), ConfigEpoch: 99}}
	for j := 0; j <= 100; j++ {
		upd.Update.Slots.Set(j)
	}
	to := buses[2].Myself()
	dst := &memberlist.Node{Addr: net.ParseIP(to.IP), Port: uint16(to.CPort)}
	deadline := time.Now().Add(4 * time.Second) // two node-timeouts: a handshake would have completed
	for time.Now().Before(deadline) {
		for _, o := range []*Bus{plain, wrong} {
			ml := o.ml.Load()
			_ = ml.SendBestEffort(dst, fail.Encode())
			_ = ml.SendReliable(dst, upd.Encode())
		}
		for _, b := range buses {
			require.False(t, mentions(b, plain), "a node without the secret got in:\n%s", b.NodesText())
			require.False(t, mentions(b, wrong), "a node with a wrong secret got in:\n%s", b.NodesText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.True(t, fullMesh(buses), "the members stay a healthy full mesh")

	// A member told to meet an outsider shows a handshake entry (as Redis
	// does for an address that never answers) that never completes and
	// expires after the handshake timeout (node-timeout).
	for _, o := range []*Bus{plain, wrong} {
		meet(t, buses[1], o)
	}
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, o := range []*Bus{plain, wrong} {
			require.NotContains(t, buses[1].NodesText(), o.MyID(), "the handshake completed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, o := range []*Bus{plain, wrong} {
		require.False(t, mentions(buses[1], o), "the handshake entry did not expire:\n%s", buses[1].NodesText())
	}
	n, _ := buses[2].Node(buses[0].MyID())
	require.Zero(t, n.Flags&FlagFail, "forged FAIL believed")
	require.Equal(t, buses[0].MyID(), buses[2].Slots().Load().OwnerID(0), "forged UPDATE believed")
	cur, _ := buses[2].Epochs()
	require.Less(t, cur, uint64(99), "forged epoch taken")
	require.True(t, buses[2].StateOK())
	// The members' traffic is sealed: the outsiders received (and could
	// read) nothing of it.
	require.True(t, buses[0].Encrypted())
	require.False(t, plain.Encrypted())
}

// Rotation A -> "A B" -> "B A" -> "B" on a running cluster keeps every
// link up; afterwards a node with only A can't join, one with B can.
// Turning the secret on or off at runtime is refused.
func TestBusSecretRotation(t *testing.T) {
	network := &MemNetwork{}
	buses := []*Bus{memBus(t, network, 1, secretA), memBus(t, network, 2, secretA), memBus(t, network, 3, secretA)}
	var late []*Bus
	defer func() { stopAll(append(buses, late...)) }()
	formSecretCluster(t, buses)
	epoch, _ := buses[0].Epochs()

	for _, step := range [][]string{{secretA, secretB}, {secretB, secretA}, {secretB}} {
		for _, b := range buses {
			require.NoError(t, b.SetSecrets(step))
			time.Sleep(100 * time.Millisecond) // nodes on two steps at once must still talk
			require.True(t, fullMesh(buses), "after %d secrets on %s", len(step), b.MyID())
		}
	}
	keys := buses[0].keyring.GetKeys()
	require.Len(t, keys, 1)
	require.Equal(t, SecretKey(secretB), keys[0])
	time.Sleep(3 * time.Second) // past node-timeout: a broken link would show as PFAIL
	require.True(t, fullMesh(buses))
	now, _ := buses[0].Epochs()
	require.Equal(t, epoch, now, "no failover, no epoch change")

	require.ErrorIs(t, buses[0].SetSecrets(nil), ErrSecretOnOff)
	plain := memBus(t, network, 9)
	late = append(late, plain)
	require.ErrorIs(t, plain.SetSecrets([]string{secretA}), ErrSecretOnOff)

	old := memBus(t, network, 4, secretA)
	fresh := memBus(t, network, 5, secretB)
	late = append(late, old, fresh)
	meet(t, old, buses[0])
	meet(t, fresh, buses[0])
	testharness.WaitFor(t, 20*time.Second, "the node with the new secret to join", func() bool {
		return fullMesh(append(append([]*Bus{}, buses...), fresh))
	})
	for _, b := range buses {
		require.False(t, mentions(b, old), "a node with the retired secret got in")
	}
}

// memberlist's membership never adds a node to the cluster (regression,
// issue 23 item 5 and issue 15's ghost nodes): a member announced by
// memberlist — an uninvited joiner, or a stale id handed over by a peer
// that has not run CLUSTER RESET yet — stays unknown until a MEET
// handshake or gossip from a known node introduces it.
func TestBusMembershipEventsAddNoNode(t *testing.T) {
	network := &MemNetwork{}
	b := memBus(t, network, 1)
	defer func() { stopAll([]*Bus{b}) }()
	ghost := strings.Repeat("c", 40)
	(*busEvents)(b).NotifyJoin(&memberlist.Node{Name: "intruder", Addr: net.ParseIP("127.0.0.1"), Port: 29999,
		Meta: []byte(ghost + " 9999"), State: memberlist.StateAlive})
	time.Sleep(500 * time.Millisecond) // several loop iterations
	_, known := b.Node(ghost)
	require.False(t, known, "a memberlist member became a cluster node:\n%s", b.NodesText())
	alive, hinted := b.MemberlistAlive(ghost)
	require.True(t, alive && hinted, "the liveness hint is still recorded")
}

// CLUSTER RESET HARD on every node, then a new MEET chain, converges to
// exactly the N nodes with their new ids (regression, issue 23 item 5:
// old ids kept coming back as noaddr entries). Real loopback sockets:
// memberlist is restarted by RESET, and peers not yet reset re-join the
// reset nodes (RejoinInterval is 1 s here) while the resets go on.
func TestBusResetHardThenMeetChainConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("real loopback sockets")
	}
	const n = 4
	buses := make([]*Bus, n)
	for i := range buses {
		buses[i] = loopbackBus(t, "", uint64(i+1), testharness.BusPort(t))
	}
	defer func() { stopAll(buses) }()
	chain := func() {
		for i := 1; i < n; i++ {
			meet(t, buses[i], buses[i-1])
		}
	}
	chain()
	testharness.WaitFor(t, 30*time.Second, "the first mesh", func() bool { return fullMesh(buses) })
	old := map[string]bool{}
	for _, b := range buses {
		old[b.MyID()] = true
	}
	for i, b := range buses {
		require.NoError(t, b.Reset(true, true))
		// The peers not reset yet still know b and re-join its restarted
		// memberlist, which then lists them under their old ids. Deliver
		// those membership events now, as memberlist does when such a
		// re-join wins the race with the next reset.
		for _, p := range buses[i+1:] {
			me := p.Myself()
			(*busEvents)(b).NotifyJoin(&memberlist.Node{Name: "peer", Addr: net.ParseIP(me.IP), Port: uint16(me.CPort),
				Meta: []byte(me.ID + " " + strconv.Itoa(me.Port)), State: memberlist.StateAlive})
		}
		time.Sleep(1500 * time.Millisecond) // pings and re-joins go on meanwhile
	}
	chain()
	testharness.WaitFor(t, 30*time.Second, "the new mesh", func() bool { return fullMesh(buses) })
	time.Sleep(3 * time.Second) // gossip goes on: nothing old may come back
	for _, b := range buses {
		require.Len(t, b.Nodes(), n, "%s", b.NodesText())
		for _, nd := range b.Nodes() {
			require.False(t, old[nd.ID], "old id %s is back:\n%s", nd.ID, b.NodesText())
		}
	}
	require.True(t, fullMesh(buses))
}
