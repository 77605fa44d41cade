package gossip

import (
	"fmt"
	"net"
	"testing"

	"github.com/shoal-db/shoal/slots"
)

func testID(i int) string { return fmt.Sprintf("%040x", i+1) }

// freshView is n nodes that know each other, none serving slots.
func freshView(n int) []NodeInfo {
	out := make([]NodeInfo, n)
	for i := range out {
		out[i] = NodeInfo{ID: testID(i), Flags: FlagMaster, PongReceived: 1}
	}
	return out
}

func claim(v []NodeInfo, i, start, end int) {
	v[i].Slots.SetRange(start, end)
	v[i].NumSlots = end - start + 1
}

// formed gives the nodes at masters the plan's ranges, in order: a formed
// cluster's masters.
func formed(v []NodeInfo, masters ...int) {
	for r, i := range masters {
		start, end := planRange(r, len(masters))
		claim(v, i, start, end)
	}
}

func TestPlanRangeCoversEverySlotOnce(t *testing.T) {
	for n := 1; n <= 7; n++ {
		next := 0
		for i := range n {
			s, e := planRange(i, n)
			if s != next || e < s {
				t.Fatalf("n=%d range %d = %d-%d, want start %d", n, i, s, e, next)
			}
			next = e + 1
		}
		if next != slots.Count {
			t.Fatalf("n=%d ends at %d", n, next)
		}
	}
	if s, e := planRange(0, 3); s != 0 || e != 5461 {
		t.Fatalf("first of 3 = %d-%d (redis-cli gives 0-5461)", s, e)
	}
}

func TestFormationStepFreshCluster(t *testing.T) {
	// Too few nodes: everyone waits.
	v := freshView(5)
	for i := range v {
		if a := formationStep(testID(i), v, 3, 1); a.Kind != formWait {
			t.Fatalf("node %d with 5 of 6 nodes: %+v", i, a)
		}
	}
	// Six nodes (ids sorted = index order): 0-2 claim thirds, 3-5 replicate 0-2.
	v = freshView(6)
	v[5].Flags |= FlagMyself
	for i := range v {
		a := formationStep(testID(i), v, 3, 1)
		if i < 3 {
			s, e := planRange(i, 3)
			if a != (formationAction{Kind: formClaim, Start: s, End: e}) {
				t.Fatalf("node %d: %+v", i, a)
			}
		} else if a != (formationAction{Kind: formReplicate, Master: testID(i - 3)}) {
			t.Fatalf("node %d: %+v", i, a)
		}
	}
	// A node in handshake does not count.
	v[4].Flags |= FlagHandshake
	if a := formationStep(testID(0), v, 3, 1); a.Kind != formWait {
		t.Fatalf("with a handshake node: %+v", a)
	}
}

func TestFormationStepPartlyFormed(t *testing.T) {
	v := freshView(6)
	claim(v, 0, 0, 5461)
	// Master 1 has not acted yet: it claims its own range; replica 4
	// still waits for master 1 rather than joining master 0.
	if a := formationStep(testID(1), v, 3, 1); a != (formationAction{Kind: formClaim, Start: 5462, End: 10922}) {
		t.Fatalf("master 1: %+v", a)
	}
	if a := formationStep(testID(4), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(1)}) {
		t.Fatalf("replica 4: %+v", a)
	}
	// A node that serves slots or replicates is done (restarts change nothing).
	if a := formationStep(testID(0), v, 3, 1); a.Kind != formDone {
		t.Fatalf("master 0: %+v", a)
	}
	v[3].Master = testID(0)
	if a := formationStep(testID(3), v, 3, 1); a.Kind != formDone {
		t.Fatalf("replica 3: %+v", a)
	}
}

func TestFormationStepLateJoinerTakesFewestReplicas(t *testing.T) {
	v := freshView(7)
	// Formed: masters 1, 2, 3 (ids 2..4); replicas 4 and 5 of masters 1
	// and 3; the new node is id 7 (index 6), and a node with the
	// smallest id (index 0) joins later too.
	formed(v, 1, 2, 3)
	v[4].Master, v[4].Flags = testID(1), FlagSlave
	v[5].Master, v[5].Flags = testID(3), FlagSlave
	for _, late := range []int{6, 0} {
		if a := formationStep(testID(late), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(2)}) {
			t.Fatalf("late node %d: %+v", late, a)
		}
	}
	// A failed master is never chosen.
	v[2].Flags |= FlagFail
	if a := formationStep(testID(6), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(1)}) {
		t.Fatalf("with master 2 failed: %+v", a)
	}
}

func TestPickSeedAddr(t *testing.T) {
	both := []string{"::1", "127.0.0.1"}
	if got := pickSeedAddr(both, net.ParseIP("127.0.0.1")); got != "127.0.0.1" {
		t.Errorf("v4 node: %s", got)
	}
	if got := pickSeedAddr(both, net.ParseIP("fd00::5")); got != "::1" {
		t.Errorf("v6 node: %s", got)
	}
	if got := pickSeedAddr([]string{"::1"}, net.ParseIP("127.0.0.1")); got != "::1" {
		t.Errorf("only v6: %s", got)
	}
}

func TestFormationStepSlowPlannedReplicaKeepsItsMaster(t *testing.T) {
	// All slots served; replica 3 attached to master 0; replica 4 is late
	// and its view does not show replica 5 attached to master 2 yet: it
	// still takes its planned master 1, not the "least replicated" 1 or 2
	// by a stale count.
	v := freshView(6)
	formed(v, 0, 1, 2)
	v[3].Master, v[3].Flags = testID(0), FlagSlave
	if a := formationStep(testID(4), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(1)}) {
		t.Fatalf("replica 4: %+v", a)
	}
	// A late node whose id shifts the plan onto a master that has its
	// replica takes the least replicated master instead.
	v = freshView(7)
	formed(v, 0, 1, 2)
	v[3].Master, v[3].Flags = testID(0), FlagSlave
	v[5].Master, v[5].Flags = testID(1), FlagSlave
	v[6].Master, v[6].Flags = testID(2), FlagSlave
	// Node 4 (planned replica of master 1, which has replica 5): fewest is
	// master 0 or 2 with one replica each... all have one: the smallest id.
	v[3].Master = testID(2) // now master 0 has none
	if a := formationStep(testID(4), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(0)}) {
		t.Fatalf("late node 4: %+v", a)
	}
}

func TestFormationStepWaitsForACompleteView(t *testing.T) {
	// Node 5 is known (from gossip) but never talked to us: its role is
	// unknown, so nobody decides yet; once it is failing it no longer
	// holds the others back.
	v := freshView(6)
	v[5].PongReceived = 0
	if a := formationStep(testID(0), v, 3, 1); a.Kind != formWait {
		t.Fatalf("with a silent node: %+v", a)
	}
	if a := formationStep(testID(5), v, 3, 1); a.Kind == formWait {
		t.Fatalf("the silent node itself waits for nobody: %+v", a)
	}
	v[5].Flags |= FlagPFail
	if a := formationStep(testID(0), v, 3, 1); a.Kind != formClaim {
		t.Fatalf("with the silent node failing: %+v", a)
	}

	// A formed cluster where a replica's master is not known yet (it was
	// learned from gossip, which carries its flag and a pong time): a late
	// node waits rather than take that master for one without replicas.
	v = freshView(7)
	formed(v, 1, 2, 3)
	v[0].Master, v[0].Flags = testID(1), FlagSlave
	v[4].Master, v[4].Flags = testID(2), FlagSlave
	v[5].Flags = FlagSlave // replica of node 3, master not known yet
	if a := formationStep(testID(6), v, 3, 1); a.Kind != formWait {
		t.Fatalf("late node with a replica's master unknown: %+v", a)
	}
	v[5].Master = testID(3)
	if a := formationStep(testID(6), v, 3, 1); a != (formationAction{Kind: formReplicate, Master: testID(1)}) {
		t.Fatalf("late node with the view complete: %+v", a)
	}
}
