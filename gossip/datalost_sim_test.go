package gossip

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// killedWithData builds a 3+3 cluster with the server's data-lost guards,
// writes n to master m until its replica r has them, then kills m.
func killedWithData(t *testing.T, seed uint64, m, r int, n int64) *fsim {
	fs := newCluster(t, seed, scenarioOpts(), 3, 1)
	fs.dataGuards = true
	require.True(t, fs.write(m, int(n)))
	fs.run(500 * time.Millisecond)
	require.Equal(t, n, fs.nodes[r].offset)
	fs.kill(m)
	fs.run(50 * time.Millisecond)
	return fs
}

// A master killed and restarted at once without its data (issue 18): it
// says so on the bus, its replica, which holds the data, takes its slots
// over before anyone flags the master FAIL, and the old master rejoins as
// the new master's replica and gets the data back. At no point does the
// replica take the empty data set.
func TestDataLostMasterIsTakenOverByItsReplica(t *testing.T) {
	fs := killedWithData(t, 18, 0, 3, 1000)
	require.True(t, fs.restartEmpty(0), "its replica was not heard from yet: the master waits")
	took := fs.waitFor(5*time.Second, "#3 takes over and #0 follows it", func() bool {
		require.Equal(t, int64(1000), fs.nodes[3].offset, "the replica kept its data")
		return fs.isMaster(3) && fs.masterOf(0) == fs.id(3)
	})
	require.Less(t, took, scenarioOpts().NodeTimeout, "no need to wait for FAIL")
	for _, i := range []int{1, 2, 4, 5} {
		require.Zero(t, fs.flagsSeenBy(i, 0)&FlagFail, "node %d never flagged #0 FAIL", i)
	}
	fs.waitFor(5*time.Second, "#0 has the data back, the cluster is up", func() bool {
		return fs.nodes[0].offset == 1000 && fs.allOK(true)
	})
	require.False(t, fs.nodes[0].st.fo.DataLost())
	fs.noViolation()
}

// A fresh cluster holds no data: a master restarted without any serves as
// soon as its replica announces offset 0, and stays the master.
func TestDataLostMasterServesWhenItsReplicaIsEmpty(t *testing.T) {
	fs := newCluster(t, 19, scenarioOpts(), 3, 1)
	fs.dataGuards = true
	fs.kill(1)
	fs.run(50 * time.Millisecond)
	require.True(t, fs.restartEmpty(1))
	took := fs.waitFor(2*time.Second, "#1 serves again", func() bool { return !fs.nodes[1].st.fo.DataLost() })
	require.Less(t, took, time.Second)
	fs.run(5 * time.Second)
	require.True(t, fs.isMaster(1))
	require.Equal(t, fs.id(1), fs.masterOf(4))
	require.True(t, fs.allOK(true))
	fs.noViolation()
}

// The race the replica guards against: a master that restarted empty and
// does not say so (the flag never reached its replica, or it stopped
// waiting). The replica refuses the empty history and takes over.
func TestReplicaRefusesEmptyHistoryAndTakesOver(t *testing.T) {
	fs := killedWithData(t, 20, 2, 5, 500)
	fs.restart(2) // no RestartedWithoutData: the master serves at once
	fs.waitFor(5*time.Second, "#5 takes over and #2 follows it", func() bool {
		require.Equal(t, int64(500), fs.nodes[5].offset, "the replica kept its data")
		return fs.isMaster(5) && fs.masterOf(2) == fs.id(5)
	})
	fs.waitFor(5*time.Second, "#2 has the data back", func() bool { return fs.nodes[2].offset == 500 })
	fs.noViolation()
}
