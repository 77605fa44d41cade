package failover

import (
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

// restartedEmpty is threeShards seen by master a just after it restarted
// without its data: it has heard from nobody yet.
func restartedEmpty(clk *clock.Fake) (*fakeView, *Machine) {
	v := threeShards(id('a'), clk.Now())
	for _, n := range v.nodes {
		if n.ID != id('a') {
			n.LastSeen = time.Time{}
		}
	}
	m := newTestMachine(clk)
	m.Restarted()
	return v, m
}

// A master restarted without its data waits while a replica may hold it,
// and serves its slots as soon as none can: no replica at all, every
// replica announcing offset 0 (a fresh cluster), or unreachable.
func TestDataLostMasterServesWhenNoReplicaHoldsData(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))

	// No replica: it serves at once (master c).
	cv := threeShards(id('c'), clk.Now())
	cm := newTestMachine(clk)
	require.False(t, cm.RestartedWithoutData(cv))
	require.False(t, cm.DataLost())

	// Replicas x and y not heard from yet: it waits.
	v, m := restartedEmpty(clk)
	require.True(t, m.RestartedWithoutData(v))
	require.Empty(t, m.Tick(v))
	require.True(t, m.DataLost())

	// x answers with offset 0; y still unknown: still waiting.
	clk.Advance(10 * time.Millisecond)
	v.nodes[id('x')].LastSeen = clk.Now()
	require.Empty(t, m.Tick(v))
	// y answers with offset 0 too: no replica holds data, it serves.
	v.nodes[id('y')].LastSeen = clk.Now()
	require.Equal(t, []ActionKind{ActDataLostEnded}, kinds(m.Tick(v)))
	require.False(t, m.DataLost())
	require.Empty(t, m.Tick(v), "ended once")

	// Replicas that are PFAIL (unreachable) or may not fail over do not
	// hold it back either.
	v, m = restartedEmpty(clk)
	require.True(t, m.RestartedWithoutData(v))
	v.nodes[id('x')].PFail = true
	v.nodes[id('y')].NoFailover = true
	v.nodes[id('y')].LastSeen, v.nodes[id('y')].ReplOffset = clk.Now(), 900
	require.Equal(t, []ActionKind{ActDataLostEnded}, kinds(m.Tick(v)))
}

// A replica holding data keeps the master waiting until the replica took
// the slots over (the master is then a replica) or until dataLostWait.
func TestDataLostMasterWaitsForTakeover(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v, m := restartedEmpty(clk)
	require.True(t, m.RestartedWithoutData(v))
	clk.Advance(5 * time.Millisecond)
	v.nodes[id('x')].LastSeen, v.nodes[id('x')].ReplOffset = clk.Now(), 12345
	v.nodes[id('y')].LastSeen = clk.Now()
	require.Empty(t, m.Tick(v))

	// x took over: a's slots went to x and a follows it.
	a := v.nodes[id('a')]
	a.IsMaster, a.IsReplica, a.MasterID, a.NumSlots = false, true, id('x'), 0
	require.Equal(t, []ActionKind{ActDataLostEnded}, kinds(m.Tick(v)))
	require.False(t, m.DataLost())

	// Nobody takes over: the wait ends after 3 × max(2 × NT, 2 s) = 6 s.
	v, m = restartedEmpty(clk)
	require.True(t, m.RestartedWithoutData(v))
	v.nodes[id('x')].LastSeen, v.nodes[id('x')].ReplOffset = clk.Now(), 12345
	clk.Advance(6*time.Second - time.Millisecond)
	require.Empty(t, m.Tick(v))
	require.True(t, m.DataLost())
	clk.Advance(time.Millisecond)
	require.Equal(t, []ActionKind{ActDataLostEnded}, kinds(m.Tick(v)))
}

// A replica holding data whose master says it lost its data starts an
// election at once (no FAIL needed), with FORCEACK; a replica without data
// does not, nor one configured not to fail over.
func TestReplicaTakesOverFromDataLostMaster(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('x'), clk.Now())
	v.nodes[id('x')].ReplOffset = 500
	v.nodes[id('y')].ReplOffset = 400
	m := newTestMachine(clk)
	require.Empty(t, m.Tick(v))

	v.nodes[id('a')].DataLost = true
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(m.Tick(v)))
	require.Equal(t, 0, m.Election().Rank)
	clk.Advance(100 * time.Millisecond)
	acts := m.Tick(v)
	require.Equal(t, []ActionKind{ActSetCurrentEpoch, ActRequestVotes}, kinds(acts))
	require.True(t, acts[1].ForceAck, "the master is up: the voters need FORCEACK")
	v.current = 4
	require.Empty(t, m.Step(v, Message{Kind: MsgAuthAck, From: id('b'), CurrentEpoch: 4}))
	acts = m.Step(v, Message{Kind: MsgAuthAck, From: id('c'), CurrentEpoch: 4})
	require.Equal(t, []ActionKind{ActPromote}, kinds(acts))
	require.Equal(t, id('a'), acts[0].Node)

	// No data: no takeover.
	v = threeShards(id('x'), clk.Now())
	v.nodes[id('a')].DataLost = true
	m = newTestMachine(clk)
	require.Empty(t, m.Tick(v))
	clk.Advance(time.Second)
	require.Empty(t, m.Tick(v))

	// cluster-replica-no-failover: no takeover either.
	v.nodes[id('x')].ReplOffset = 500
	cfg := m.Config()
	cfg.NoFailover = true
	m.SetConfig(cfg)
	require.Empty(t, m.Tick(v))
}

// The replica's guard: once its master offered it an empty history, it
// refuses that full sync and takes over, for dataLostWait; then it accepts.
func TestReplicaRefusesEmptySyncWhileItCanTakeOver(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v := threeShards(id('x'), clk.Now())
	v.nodes[id('x')].ReplOffset = 500
	m := newTestMachine(clk)
	require.False(t, m.RefuseEmptySync(v, id('a')), "nothing seen yet")

	m.MasterRestartedEmpty(id('a'))
	require.True(t, m.RefuseEmptySync(v, id('a')))
	require.False(t, m.RefuseEmptySync(v, id('b')), "not my master")
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(m.Tick(v)), "the takeover is scheduled")

	clk.Advance(3 * time.Second)
	m.MasterRestartedEmpty(id('a')) // seen again: the window does not restart
	require.True(t, m.RefuseEmptySync(v, id('a')))
	clk.Advance(3 * time.Second)
	require.False(t, m.RefuseEmptySync(v, id('a')), "after 3 × max(2 × NT, 2 s) the sync is accepted")

	// A replica without data has nothing to protect.
	v = threeShards(id('y'), clk.Now())
	m = newTestMachine(clk)
	m.MasterRestartedEmpty(id('a'))
	require.False(t, m.RefuseEmptySync(v, id('a')))
	// The master announcing DataLost is enough on its own.
	v.nodes[id('y')].ReplOffset = 7
	m = newTestMachine(clk)
	v.nodes[id('a')].DataLost = true
	require.True(t, m.RefuseEmptySync(v, id('a')))
}

// A replica that restarted from its own data set file (offset 0, keys
// loaded) holds data too: its master waits for it and it takes over.
func TestReplicaRestartedWithItsDataCountsAsHoldingData(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	v, m := restartedEmpty(clk)
	require.True(t, m.RestartedWithoutData(v))
	clk.Advance(5 * time.Millisecond)
	for _, r := range []byte{'x', 'y'} {
		v.nodes[id(r)].LastSeen = clk.Now()
	}
	v.nodes[id('x')].LoadedData = true
	require.Empty(t, m.Tick(v), "x holds data: the master waits")
	v.nodes[id('x')].LoadedData = false
	require.Equal(t, []ActionKind{ActDataLostEnded}, kinds(m.Tick(v)))

	rv := threeShards(id('x'), clk.Now())
	rv.nodes[id('x')].LoadedData = true
	rv.nodes[id('a')].DataLost = true
	rm := newTestMachine(clk)
	require.Equal(t, []ActionKind{ActPongSiblings}, kinds(rm.Tick(rv)))
	clk.Advance(200 * time.Millisecond)
	acts := rm.Tick(rv)
	require.Equal(t, []ActionKind{ActSetCurrentEpoch, ActRequestVotes}, kinds(acts))
	require.True(t, acts[1].ForceAck)
}
