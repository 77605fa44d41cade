package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// fakeView is a hand-built cluster: myself plus nodes by id.
type fakeView struct {
	me        string
	nodes     map[string]*Node
	order     []string
	current   uint64
	lastVote  uint64
	size      int
	ok        bool
	slotEpoch map[int]uint64
}

func (v *fakeView) Myself() Node { return *v.nodes[v.me] }
func (v *fakeView) Node(id string) (Node, bool) {
	n, ok := v.nodes[id]
	if !ok {
		return Node{}, false
	}
	return *n, true
}
func (v *fakeView) AppendNodes(dst []Node) []Node {
	dst = dst[:0]
	for _, id := range v.order {
		dst = append(dst, *v.nodes[id])
	}
	return dst
}
func (v *fakeView) CurrentEpoch() uint64  { return v.current }
func (v *fakeView) LastVoteEpoch() uint64 { return v.lastVote }
func (v *fakeView) MaxConfigEpoch() uint64 {
	max := v.current
	for _, n := range v.nodes {
		if n.ConfigEpoch > max {
			max = n.ConfigEpoch
		}
	}
	return max
}
func (v *fakeView) Size() int     { return v.size }
func (v *fakeView) StateOK() bool { return v.ok }
func (v *fakeView) SlotOwnerEpoch(slot int) (uint64, bool) {
	e, ok := v.slotEpoch[slot]
	return e, ok
}

func (v *fakeView) add(n Node) *Node {
	v.nodes[n.ID] = &n
	v.order = append(v.order, n.ID)
	return v.nodes[n.ID]
}

func id(c byte) string { return strings.Repeat(string(c), 40) }

// threeShards: masters a, b, c (slots, epochs 1-3), replicas x (of a) and
// y (of a), z (of b). myself is chosen by the test.
func threeShards(me string, now time.Time) *fakeView {
	v := &fakeView{me: me, nodes: map[string]*Node{}, current: 3, size: 3, ok: true, slotEpoch: map[int]uint64{}}
	v.add(Node{ID: id('a'), IsMaster: true, NumSlots: 100, ConfigEpoch: 1, Replicas: []string{id('x'), id('y')}, MigrateTo: true, LastSeen: now})
	v.add(Node{ID: id('b'), IsMaster: true, NumSlots: 100, ConfigEpoch: 2, Replicas: []string{id('z')}, MigrateTo: true, LastSeen: now})
	v.add(Node{ID: id('c'), IsMaster: true, NumSlots: 100, ConfigEpoch: 3, LastSeen: now})
	v.add(Node{ID: id('x'), IsReplica: true, MasterID: id('a'), LastSeen: now})
	v.add(Node{ID: id('y'), IsReplica: true, MasterID: id('a'), LastSeen: now})
	v.add(Node{ID: id('z'), IsReplica: true, MasterID: id('b'), LastSeen: now})
	for j := 0; j < 100; j++ {
		v.slotEpoch[j] = 1
	}
	return v
}

func newTestMachine(clk clock.Clock) *Machine {
	cfg := DefaultConfig()
	cfg.NodeTimeout = time.Second
	return New(cfg, clk, 1, nil)
}

func kinds(acts []Action) []ActionKind {
	var k []ActionKind
	for _, a := range acts {
		k = append(k, a.Kind)
	}
	return k
}

func authRequest(from string, epoch, cfgEpoch uint64, force bool) Message {
	var bm slots.Bitmap
	bm.SetRange(0, 99)
	return Message{Kind: MsgAuthRequest, From: from, CurrentEpoch: epoch, ConfigEpoch: cfgEpoch, Slots: &bm, ForceAck: force}
}

// The vote rules of clusterSendFailoverAuthIfNeeded, one refusal at a time.
func TestVoteRules(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('c'), clk.Now())
	m := newTestMachine(clk)

	// A node that just restarted from nodes.conf does not vote: its view
	// of who serves which slots may be stale.
	m.Restarted()
	v.nodes[id('a')].Fail = true
	v.current = 4
	require.Empty(t, m.Step(v, authRequest(id('x'), 4, 1, false)))
	clk.Advance(2 * time.Second)
	v.nodes[id('a')].Fail = false

	// Master a is up: no vote without FORCEACK.
	v.current = 4
	require.Empty(t, m.Step(v, authRequest(id('x'), 4, 1, false)))

	// a is FAIL: the vote is recorded (fsync) before the ACK is sent.
	v.nodes[id('a')].Fail = true
	acts := m.Step(v, authRequest(id('x'), 4, 1, false))
	require.Equal(t, []ActionKind{ActRecordVote, ActSendAuthAck}, kinds(acts))
	require.Equal(t, uint64(4), acts[0].Epoch)
	require.Equal(t, id('x'), acts[1].Node)
	v.lastVote = 4

	// One vote per epoch.
	require.Empty(t, m.Step(v, authRequest(id('y'), 4, 1, false)))
	// A later epoch, but the same master within 2 × node-timeout.
	v.current = 5
	require.Empty(t, m.Step(v, authRequest(id('y'), 5, 1, false)))
	// After 2 × node-timeout, y may have it.
	clk.Advance(2001 * time.Millisecond)
	require.Equal(t, []ActionKind{ActRecordVote, ActSendAuthAck}, kinds(m.Step(v, authRequest(id('y'), 5, 1, false))))
	v.lastVote = 5

	// A request from an older epoch.
	v.current = 6
	require.Empty(t, m.Step(v, authRequest(id('z'), 5, 2, true)))
	// A claimed slot whose owner has a newer configEpoch.
	clk.Advance(3 * time.Second)
	v.slotEpoch[50] = 9
	require.Empty(t, m.Step(v, authRequest(id('x'), 6, 1, true)))
	delete(v.slotEpoch, 50)
	// A master asking, or a replica whose master we do not know.
	require.Empty(t, m.Step(v, authRequest(id('b'), 6, 2, true)))
	v.nodes[id('z')].MasterID = id('q')
	require.Empty(t, m.Step(v, authRequest(id('z'), 6, 2, true)))
	v.nodes[id('z')].MasterID = id('b')
	// FORCEACK (manual failover) votes for a replica of a live master.
	require.Equal(t, []ActionKind{ActRecordVote, ActSendAuthAck}, kinds(m.Step(v, authRequest(id('z'), 6, 2, true))))

	// Replicas and slot-less masters never vote.
	rv := threeShards(id('z'), clk.Now())
	rv.nodes[id('a')].Fail = true
	rv.current = 7
	require.Empty(t, newTestMachine(clk).Step(rv, authRequest(id('x'), 7, 1, false)))
}

// A replica's election: it waits the delay for its rank, bumps the epoch,
// asks every master, and promotes itself with a majority of ACKs.
func TestElection(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('x'), clk.Now())
	v.nodes[id('x')].ReplOffset = 500
	v.nodes[id('y')].ReplOffset = 400
	m := newTestMachine(clk)
	require.Empty(t, m.Tick(v), "nothing while the master is fine")

	v.nodes[id('a')].Fail = true
	acts := m.Tick(v)
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(acts))
	el := m.Election()
	require.Equal(t, 0, el.Rank)
	d := el.Time.Sub(clk.Now())
	require.GreaterOrEqual(t, d, 50*time.Millisecond)
	require.Less(t, d, 100*time.Millisecond)
	require.Equal(t, el.Time, m.Wakeup())

	clk.Advance(100 * time.Millisecond)
	require.True(t, m.Wakeup().IsZero(), "a passed deadline is not reported (no wake loop)")
	acts = m.Tick(v)
	require.Equal(t, []ActionKind{ActSetCurrentEpoch, ActRequestVotes}, kinds(acts))
	require.Equal(t, uint64(4), acts[0].Epoch)
	require.False(t, acts[1].ForceAck)
	require.True(t, m.Wakeup().IsZero())
	v.current = 4

	// ACKs from a replica or from an older epoch do not count.
	require.Empty(t, m.Step(v, Message{Kind: MsgAuthAck, From: id('z'), CurrentEpoch: 4}))
	require.Empty(t, m.Step(v, Message{Kind: MsgAuthAck, From: id('b'), CurrentEpoch: 3}))
	require.Empty(t, m.Step(v, Message{Kind: MsgAuthAck, From: id('b'), CurrentEpoch: 4}))
	require.Empty(t, m.Step(v, Message{Kind: MsgAuthAck, From: id('b'), CurrentEpoch: 4}), "a duplicate ACK is one vote")
	acts = m.Step(v, Message{Kind: MsgAuthAck, From: id('c'), CurrentEpoch: 4})
	require.Equal(t, []ActionKind{ActPromote}, kinds(acts))
	require.Equal(t, uint64(4), acts[0].Epoch)
	require.Equal(t, id('a'), acts[0].Node)
}

// Rank: the replica with less data waits PerRank more, and is re-ranked
// when a sibling's fresher offset arrives before its request.
func TestRankAndReRank(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('y'), clk.Now())
	v.nodes[id('x')].ReplOffset = 500
	v.nodes[id('y')].ReplOffset = 500
	v.nodes[id('a')].Fail = true
	m := newTestMachine(clk)
	m.Tick(v)
	// Equal offsets: x has the smaller id, so y is rank 1.
	require.Equal(t, 1, m.Election().Rank)
	v.nodes[id('y')].ReplOffset = 600
	m2 := newTestMachine(clk)
	m2.Tick(v)
	require.Equal(t, 0, m2.Election().Rank)
	before := m2.Election().Time
	// x announces more data before y's request: y moves back a rank.
	v.nodes[id('x')].ReplOffset = 700
	clk.Advance(10 * time.Millisecond)
	require.Empty(t, m2.Tick(v))
	require.Equal(t, 1, m2.Election().Rank)
	require.Equal(t, before.Add(200*time.Millisecond), m2.Election().Time)
	// A nofailover sibling does not count.
	v.nodes[id('x')].NoFailover = true
	m3 := newTestMachine(clk)
	m3.Tick(v)
	require.Equal(t, 0, m3.Election().Rank)
}

// No election with cluster-replica-no-failover, or with data older than
// the validity factor allows; an expired election is retried after twice
// the auth timeout.
func TestElectionEligibility(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('z'), clk.Now())
	v.nodes[id('b')].Fail = true
	cfg := DefaultConfig()
	cfg.NodeTimeout = time.Second
	cfg.NoFailover = true
	m := New(cfg, clk, 1, nil)
	require.Empty(t, m.Tick(v))
	require.False(t, m.Election().Scheduled)

	// Data age: last heard 1 s (NT) + 10 s (ping period) + 10 × 1 s + 1 ms ago.
	cfg.NoFailover = false
	m.SetConfig(cfg)
	v.nodes[id('b')].LastSeen = clk.Now().Add(-21*time.Second - time.Millisecond)
	require.Empty(t, m.Tick(v))
	require.False(t, m.Election().Scheduled)
	// The replication link's data age, when known, is what counts: fresh
	// data by the link makes it eligible though the bus was silent...
	v.nodes[id('z')].ReplDataAge, v.nodes[id('z')].ReplDataAgeKnown = 3*time.Second, true
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(m.Tick(v)))
	// ... and a link down for too long makes it ineligible though the bus
	// heard the master a moment ago.
	m = New(cfg, clk, 1, nil)
	v.nodes[id('b')].LastSeen = clk.Now()
	v.nodes[id('z')].ReplDataAge = 21*time.Second + time.Millisecond
	require.Empty(t, m.Tick(v))
	require.False(t, m.Election().Scheduled)
	cfg.ValidityFactor = 0 // always eligible
	m.SetConfig(cfg)
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(m.Tick(v)))

	// Request, no answers: expired after 2 s, retried after 4 s.
	clk.Advance(200 * time.Millisecond)
	require.Equal(t, []ActionKind{ActSetCurrentEpoch, ActRequestVotes}, kinds(m.Tick(v)))
	v.current = 4
	clk.Advance(3 * time.Second)
	require.Empty(t, m.Tick(v))
	clk.Advance(1100 * time.Millisecond)
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(m.Tick(v)), "a new election is scheduled")
}

// CLUSTER FAILOVER: errors, the MFSTART handshake, FORCE and TAKEOVER.
func TestManualFailover(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	master := threeShards(id('a'), clk.Now())
	_, err := newTestMachine(clk).ManualFailover(master, ModeDefault)
	require.Equal(t, ErrFailoverOnMaster, err)

	v := threeShards(id('x'), clk.Now())
	v.nodes[id('x')].MasterID = id('q')
	_, err = newTestMachine(clk).ManualFailover(v, ModeDefault)
	require.Equal(t, ErrFailoverNoMaster, err)
	v.nodes[id('x')].MasterID = id('a')
	v.nodes[id('a')].Fail = true
	_, err = newTestMachine(clk).ManualFailover(v, ModeDefault)
	require.Equal(t, ErrFailoverMasterFailed, err)
	v.nodes[id('a')].Fail = false

	// The handshake: replica → MFSTART; master pauses, then flags PAUSED.
	rep := newTestMachine(clk)
	acts, err := rep.ManualFailover(v, ModeDefault)
	require.NoError(t, err)
	require.Equal(t, []ActionKind{ActSendMFStart}, kinds(acts))
	mst := newTestMachine(clk)
	acts = mst.Step(master, Message{Kind: MsgMFStart, From: id('x')})
	require.Equal(t, []ActionKind{ActPauseWrites}, kinds(acts))
	require.Equal(t, 10*time.Second, acts[0].Duration)
	require.False(t, mst.MasterPaused(), "the offset is not final until the pause took effect")
	clk.Advance(200 * time.Millisecond)
	require.True(t, mst.MasterPaused())
	require.Equal(t, []ActionKind{ActPingPaused}, kinds(mst.Tick(master)))

	// The replica waits until it has the master's final offset.
	v.nodes[id('x')].ReplOffset = 90
	require.Empty(t, rep.Step(v, Message{Kind: MsgMasterPaused, From: id('a'), Offset: 100}))
	require.Empty(t, rep.Tick(v))
	v.nodes[id('x')].ReplOffset = 100
	acts = rep.Tick(v)
	require.Equal(t, []ActionKind{ActPongSiblings, ActSetCurrentEpoch, ActRequestVotes}, kinds(acts))
	require.True(t, acts[2].ForceAck)

	// The master resumes its writers when it becomes a replica.
	master.nodes[id('a')].IsMaster, master.nodes[id('a')].IsReplica = false, true
	master.nodes[id('a')].MasterID = id('x')
	require.Equal(t, []ActionKind{ActResumeWrites}, kinds(mst.Tick(master)))

	// FORCE: an election at once, without the master.
	v2 := threeShards(id('x'), clk.Now())
	acts, err = newTestMachine(clk).ManualFailover(v2, ModeForce)
	require.NoError(t, err)
	require.Equal(t, []ActionKind{ActPongSiblings, ActSetCurrentEpoch, ActRequestVotes}, kinds(acts))

	// TAKEOVER: a new configEpoch without votes, then promotion.
	acts, err = newTestMachine(clk).ManualFailover(v2, ModeTakeover)
	require.NoError(t, err)
	require.Equal(t, []ActionKind{ActSetCurrentEpoch, ActPromote}, kinds(acts))
	require.Equal(t, uint64(4), acts[0].Epoch)
	require.Equal(t, uint64(4), acts[1].Epoch)

	// A manual failover that does not complete is reset after 5 s.
	rep2 := newTestMachine(clk)
	_, err = rep2.ManualFailover(threeShards(id('x'), clk.Now()), ModeDefault)
	require.NoError(t, err)
	require.True(t, rep2.ManualFailoverInProgress())
	clk.Advance(5100 * time.Millisecond)
	rep2.Tick(threeShards(id('x'), clk.Now()))
	require.False(t, rep2.ManualFailoverInProgress())
}

// Replica migration: the replica with the smallest id among those of the
// masters with the most working replicas moves to a master orphaned for
// more than 5 s, and only if its own master keeps more than the barrier.
func TestReplicaMigration(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	for _, tc := range []struct {
		me      byte
		barrier int
		moves   bool
	}{
		{'x', 1, true},  // smallest id of a's replicas
		{'y', 1, false}, // not the candidate
		{'x', 2, false}, // a would keep only one replica
	} {
		v := threeShards(id(tc.me), clk.Now())
		v.nodes[id('z')].Fail = true // b is orphaned
		cfg := DefaultConfig()
		cfg.NodeTimeout = time.Second
		cfg.MigrationBarrier = tc.barrier
		m := New(cfg, clk, 1, nil)
		require.Empty(t, m.Tick(v))
		clk.Advance(5100 * time.Millisecond)
		acts := m.Tick(v)
		if tc.moves {
			require.Equal(t, []Action{{Kind: ActReplicate, Node: id('b')}}, acts)
		} else {
			require.Empty(t, acts, "me=%c barrier=%d", tc.me, tc.barrier)
		}
	}
}
