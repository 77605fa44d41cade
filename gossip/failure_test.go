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
