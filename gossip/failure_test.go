package gossip

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPFailThenFail: a master that stops answering is PFAIL after
// node-timeout, FAIL once a majority of masters reported it, and the
// cluster goes down while its slots are served by a FAIL node.
func TestPFailThenFail(t *testing.T) {
	sm := newSim(t, 3, testOpts())
	sm.meetAll()
	sm.run(3 * time.Second)
	a, b, c := sm.nodes[0], sm.nodes[1], sm.nodes[2]
	require.NoError(t, a.AddSlotsRange(args("0 5460")))
	require.NoError(t, b.AddSlotsRange(args("5461 10922")))
	require.NoError(t, c.AddSlotsRange(args("10923 16383")))
	sm.run(5 * time.Second)
	require.True(t, a.StateOK())

	sm.drop = func(from, to *State) bool { return from == c || to == c }
	sm.run(3200 * time.Millisecond) // PFAIL within node-timeout + node-timeout/2 + a tick
	for _, st := range []*State{a, b} {
		n, _ := st.Node(c.MyID())
		require.NotZero(t, n.Flags&(FlagPFail|FlagFail), "%s sees c as %s", st.MyID(), n.Flags)
	}
	sm.run(3 * time.Second)
	for _, st := range []*State{a, b} {
		n, _ := st.Node(c.MyID())
		require.NotZero(t, n.Flags&FlagFail, "%s sees c as %s", st.MyID(), n.Flags)
		require.False(t, st.StateOK())
		require.Contains(t, st.InfoText(), "cluster_slots_fail:5461\r\n")
		line, _ := st.NodeLine(c.MyID())
		require.Contains(t, line, " master,fail - ")
	}
	// The failure reports are visible, as COUNT-FAILURE-REPORTS shows them.
	nr, err := a.CountFailureReports(c.MyID())
	require.NoError(t, err)
	require.LessOrEqual(t, nr, 1)

	// Back online: a master that still serves its slots gets its FAIL
	// cleared after 2 × node-timeout with nobody having taken them over.
	sm.drop = nil
	sm.run(6 * time.Second)
	for _, st := range []*State{a, b} {
		n, _ := st.Node(c.MyID())
		require.Zero(t, n.Flags&(FlagPFail|FlagFail), "%s sees c as %s", st.MyID(), n.Flags)
	}
	sm.run(6 * time.Second)
	require.True(t, a.StateOK())
}

// PFAIL counts a node's silence from its last message, not from our next
// PING: with Redis's sparse pings a crashed node is still flagged about
// node-timeout after it last spoke (not up to a ping interval later), and
// a node silent for less than node-timeout minus one ping interval is
// never flagged.
func TestPFailCountsSilenceFromLastMessage(t *testing.T) {
	sm := newSim(t, 3, testOpts())
	nt := testOpts().NodeTimeout
	sm.meetAll()
	sm.run(3 * time.Second)
	a, b, c := sm.nodes[0], sm.nodes[1], sm.nodes[2]
	require.NoError(t, a.AddSlotsRange(args("0 5460")))
	require.NoError(t, b.AddSlotsRange(args("5461 10922")))
	require.NoError(t, c.AddSlotsRange(args("10923 16383")))
	sm.run(5 * time.Second)
	flagged := func(st *State) bool {
		n, _ := st.Node(c.MyID())
		return n.Flags&(FlagPFail|FlagFail) != 0
	}

	// A pause shorter than node-timeout minus a ping interval: no flag.
	pause := nt - pingInterval(nt) - 200*time.Millisecond
	sm.drop = func(from, to *State) bool { return from == c || to == c }
	for el := time.Duration(0); el < pause; el += 100 * time.Millisecond {
		sm.run(100 * time.Millisecond)
		require.False(t, flagged(a) || flagged(b), "flagged after a pause of %v", el)
	}
	sm.drop = nil
	sm.run(3 * time.Second)
	require.False(t, flagged(a) || flagged(b))

	// A crash: flagged by both masters within node-timeout (and a tick of
	// the simulation) of its last message, which came before the crash.
	sm.drop = func(from, to *State) bool { return from == c || to == c }
	var el time.Duration
	for el = 0; !(flagged(a) && flagged(b)) && el <= 2*nt; el += 100 * time.Millisecond {
		sm.run(100 * time.Millisecond)
	}
	require.LessOrEqual(t, el, nt+100*time.Millisecond, "flagged %v after the crash", el)
	require.GreaterOrEqual(t, el, nt-pingInterval(nt), "flagged %v after the crash", el)
}
