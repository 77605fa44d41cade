package gossip

import (
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

func pfailed(st *State) []string {
	var out []string
	for _, n := range st.Nodes() {
		if n.Flags&(FlagPFail|FlagFail) != 0 {
			out = append(out, n.ID)
		}
	}
	return out
}

// A stall of the whole machine (or of one node: a slow fsync, DEBUG SLEEP)
// longer than node-timeout must not make the first cron after it flag the
// peers PFAIL before what they sent is processed: Redis reads its sockets
// before its cron runs. Seen in tests/cluster 03 and 11 on a loaded host:
// every node flagged its peers at once and the cluster went down.
func TestStallIsNotPeersSilence(t *testing.T) {
	opts := testOpts()
	sm := newSim(t, 3, opts)
	sm.meetAll()
	sm.run(2 * time.Second)
	for _, st := range sm.nodes {
		require.Empty(t, pfailed(st))
	}

	// The crons run on without delivery until every node has a ping in
	// flight to every peer (as at any moment of a real cluster); then
	// nobody runs for twice node-timeout; then every cron runs before any
	// message is delivered (an order the Go scheduler may pick).
	for i := 0; i < 100 && !allPinging(sm); i++ {
		sm.clock.Advance(100 * time.Millisecond)
		for _, st := range sm.nodes {
			st.Tick()
		}
	}
	require.True(t, allPinging(sm))
	sm.clock.Advance(2 * opts.NodeTimeout)
	for _, st := range sm.nodes {
		// Both timers are overdue: the Bus may run Wake (the PFAIL
		// deadline) or Tick first, and either may come twice.
		st.Wake()
		st.Tick()
		st.Wake()
		require.Empty(t, pfailed(st), "%s flagged peers PFAIL right after a stall", st.MyID())
	}
	sm.deliver()
	sm.run(opts.NodeTimeout + time.Second)
	for _, st := range sm.nodes {
		require.Empty(t, pfailed(st))
	}

	// A peer that really stopped is still flagged, once node-timeout of
	// silence has been observed after the stall.
	a, dead := sm.nodes[0], sm.nodes[2]
	sm.drop = func(from, to *State) bool { return from == dead || to == dead }
	sm.clock.Advance(2 * opts.NodeTimeout)
	a.Wake()
	require.Empty(t, pfailed(a))
	sm.run(opts.NodeTimeout + time.Second)
	require.Equal(t, []string{dead.MyID()}, pfailed(a))
}

// allPinging reports whether every node waits for a PONG from every peer.
func allPinging(sm *sim) bool {
	for _, st := range sm.nodes {
		for _, n := range st.Nodes() {
			if n.ID != st.MyID() && n.PingSent == 0 {
				return false
			}
		}
	}
	return true
}

// The loop steps received messages in batches of at most maxBatch; a full
// batch must not lose the message taken after it (it once did: the next
// message was read from the inbox, then the loop ended without it).
func TestReceivedBatchesLoseNothing(t *testing.T) {
	b, err := New(Config{Options: testOpts(), IP: "127.0.0.1", Port: 7000, Seed: 1})
	require.NoError(t, err)
	peer := NewState(testOpts(), clock.NewFake(time.Unix(1_700_000_000, 0)), 2, nil, "", "127.0.0.1", 7001, 17001, "")
	const total = 2*maxBatch + 10
	for i := 0; i < total; i++ {
		m := peer.header(MsgPing)
		b.inbox.push(m.Encode())
	}
	for b.inbox.len() > 0 {
		buf, _ := b.inbox.pop()
		b.stepReceived(buf)
	}
	b.mu.Lock()
	got := b.st.statsRecv[MsgPing]
	b.mu.Unlock()
	require.Equal(t, uint64(total), got)
}
