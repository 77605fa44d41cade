package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cluster-bus-secret with real processes: six nodes sharing a secret and
// joined by redis-cli --cluster create (client ports: the secret changes
// nothing there); outsiders with no secret or another one, told to CLUSTER
// MEET the cluster, never appear in its CLUSTER NODES; a rotation A ->
// "A B" -> "B A" -> "B" by CONFIG SET under go-redis writes causes no
// failover and loses no acknowledged write.

const (
	busSecretA = "integration-secret-A-5f1c9e2d"
	busSecretB = "integration-secret-B-0a7b3c44"
)

// topology is every node's view of the roles (id → "master"/"slave
// <master>") and its currentEpoch, for "nothing changed" checks.
func topology(t *testing.T, nodes []*ClusterNode) (roles map[string]string, epochs []string) {
	t.Helper()
	roles = map[string]string{}
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		role := "master"
		if me.HasFlag("slave") {
			role = "slave " + me.Master
		}
		roles[me.ID] = role
		epochs = append(epochs, infoField(t, n.Addr, "cluster", "cluster_current_epoch"))
	}
	return roles, epochs
}

// outsiderSeen returns the first member whose CLUSTER NODES names the
// outsider's id or bus port ("" when none does).
func outsiderSeen(t *testing.T, members []*ClusterNode, outsider *ClusterNode) string {
	t.Helper()
	me, err := Myself(outsider.Addr)
	require.NoError(t, err)
	for _, m := range members {
		text, err := Query(m.Addr, "CLUSTER", "NODES")
		require.NoError(t, err)
		if strings.Contains(text, me.ID) || strings.Contains(text, "@"+strconv.Itoa(outsider.CPort)) {
			return m.Addr + ":\n" + text
		}
	}
	return ""
}

func TestClusterBusSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 server processes")
	}
	nodes := StartClusterNodes(t, 6, "--cluster-bus-secret", busSecretA)
	CreateCluster(t, nodes, 1, createTimeout)

	// The directive as a client sees it.
	got, err := Query(nodes[0].Addr, "CONFIG", "GET", "cluster-bus-secret")
	require.NoError(t, err)
	require.Contains(t, got, busSecretA)
	off, err := Query(nodes[0].Addr, "CONFIG", "SET", "cluster-bus-secret", "")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(off, "-ERR CONFIG SET failed (possibly related to argument 'cluster-bus-secret') - "+
		"cluster-bus-secret can't be turned on or off while the cluster bus runs"), off)

	// Outsiders told to meet the cluster never get in.
	plain := StartClusterNode(t, "")
	wrong := StartClusterNode(t, "", "--cluster-bus-secret", busSecretB)
	for _, o := range []*ClusterNode{plain, wrong} {
		for _, m := range []*ClusterNode{nodes[0], nodes[3]} {
			r, err := Query(o.Addr, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(m.Port), strconv.Itoa(m.CPort))
			require.NoError(t, err)
			require.Equal(t, "OK", r)
		}
	}
	// Two node-timeouts: a handshake would have completed long before.
	deadline := time.Now().Add(2 * ClusterNodeTimeout * time.Millisecond)
	for time.Now().Before(deadline) {
		for _, o := range []*ClusterNode{plain, wrong} {
			require.Empty(t, outsiderSeen(t, nodes, o), "an outsider got into the cluster")
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, o := range []*ClusterNode{plain, wrong} {
		lines, err := ClusterNodes(o.Addr)
		require.NoError(t, err)
		for _, l := range lines {
			require.True(t, l.HasFlag("myself") || l.HasFlag("handshake"), "the outsider learned a member: %v", l)
		}
	}
	WaitClusterSettled(t, nodes, 3, settleTimeout)

	// Rotation under write load.
	roles, epochs := topology(t, nodes)
	c := clusterClient(nodes)
	defer c.Close()
	lw := startLoad(c, 4, "rotate")
	time.Sleep(time.Second)
	for _, step := range []string{busSecretA + " " + busSecretB, busSecretB + " " + busSecretA, busSecretB} {
		for _, n := range nodes {
			r, err := Query(n.Addr, "CONFIG", "SET", "cluster-bus-secret", step)
			require.NoError(t, err)
			require.Equal(t, "OK", r, "CONFIG SET on %s", n.Addr)
		}
		time.Sleep(time.Second)
	}
	// Longer than node-timeout on the final key alone: a node cut off by the
	// rotation would be PFAIL by now.
	time.Sleep(ClusterNodeTimeout*time.Millisecond + time.Second)
	acked := lw.halt()
	WaitClusterSettled(t, nodes, 3, settleTimeout)
	roles2, epochs2 := topology(t, nodes)
	require.Equal(t, roles, roles2, "a role changed during the rotation")
	require.Equal(t, epochs, epochs2, "an epoch changed during the rotation")
	for _, n := range nodes {
		r, err := Query(n.Addr, "CONFIG", "GET", "cluster-bus-secret")
		require.NoError(t, err)
		require.Contains(t, r, busSecretB)
		require.NotContains(t, r, busSecretA)
	}

	ctx := context.Background()
	lost := 0
	for _, a := range acked {
		if v, err := c.Get(ctx, a.key).Result(); err != nil || v != a.val {
			lost++
		}
	}
	t.Logf("rotation under load: %d acknowledged writes, %d lost, %d failed attempts", len(acked), lost, lw.fails.Load())
	require.NotEmpty(t, acked)
	require.Zero(t, lost, "acknowledged writes lost")

	// A node still on the retired secret can't join either.
	stale := StartClusterNode(t, "", "--cluster-bus-secret", busSecretA)
	r, err := Query(stale.Addr, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(nodes[1].Port), strconv.Itoa(nodes[1].CPort))
	require.NoError(t, err)
	require.Equal(t, "OK", r)
	deadline = time.Now().Add(ClusterNodeTimeout * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Empty(t, outsiderSeen(t, nodes, stale), "a node with the retired secret got in")
		time.Sleep(500 * time.Millisecond)
	}
	require.Empty(t, fmt.Sprint(liveOK(nodes)))
}

// TestClusterResetHardThenMeetChain is issue 23 item 5 with real processes:
// CLUSTER RESET HARD on every node of a running cluster, then a new MEET
// chain, must end with exactly the six new ids everywhere (old ids used to
// come back as noaddr entries and one node listed 12 nodes).
func TestClusterResetHardThenMeetChain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 server processes")
	}
	nodes := StartClusterNodes(t, 6)
	CreateCluster(t, nodes, 1, createTimeout)
	old := map[string]bool{}
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		old[me.ID] = true
	}
	for _, n := range nodes {
		r, err := Query(n.Addr, "CLUSTER", "RESET", "HARD")
		require.NoError(t, err)
		require.Equal(t, "OK", r)
	}
	for i := 1; i < len(nodes); i++ {
		r, err := Query(nodes[i].Addr, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(nodes[i-1].Port), strconv.Itoa(nodes[i-1].CPort))
		require.NoError(t, err)
		require.Equal(t, "OK", r)
	}
	meshed := func() string {
		for _, n := range nodes {
			lines, err := ClusterNodes(n.Addr)
			if err != nil {
				return err.Error()
			}
			if len(lines) != len(nodes) {
				return fmt.Sprintf("%s lists %d nodes", n.Addr, len(lines))
			}
			for _, l := range lines {
				if old[l.ID] {
					return fmt.Sprintf("%s still lists the old id %s", n.Addr, l.ID)
				}
				if l.HasFlag("handshake") || l.HasFlag("noaddr") || l.HasFlag("fail?") || l.HasFlag("fail") {
					return fmt.Sprintf("%s lists %s as %s", n.Addr, l.ID, l.Flags)
				}
			}
		}
		return ""
	}
	WaitFor(t, settleTimeout, "a full mesh of the new ids", meshed)
	// Gossip goes on: nothing old may come back (several rejoin periods).
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) {
		require.Empty(t, meshed())
		time.Sleep(time.Second)
	}
}
