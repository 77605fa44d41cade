package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

// A node first known without a role ("noflags": a gossip entry without
// role flags, or a nodes.conf line) that then talks as a replica must show
// as a replica: a replica left as "noflags" breaks CLUSTER NODES/SHARDS and
// redis-cli --cluster check.
func TestNoflagsReplicaGetsTheSlaveFlag(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := NewState(DefaultOptions(), clk, 5, nil, "", "127.0.0.1", 7000, 17000, "")
	master := strings.Repeat("a", 40)
	replica := strings.Repeat("b", 40)
	for i, id := range []string{master, replica} {
		n := s.newNode(id, 0)
		n.ip, n.port, n.cport = "127.0.0.1", 7001+i, 17001+i
		s.addNode(n)
	}
	require.Equal(t, Flags(0), mustNode(t, s, replica).Flags)

	s.Step(&Message{Type: MsgPing, Sender: master, To: s.MyID(), IP: "127.0.0.1", Port: 7001, CPort: 17001})
	s.Step(&Message{Type: MsgPing, Sender: replica, To: s.MyID(), Master: master, IP: "127.0.0.1", Port: 7002, CPort: 17002})
	m, r := mustNode(t, s, master), mustNode(t, s, replica)
	require.True(t, m.IsMaster())
	require.True(t, r.IsReplica(), "flags %v", r.Flags)
	require.False(t, r.IsMaster())
	require.Equal(t, master, r.Master)
	require.Equal(t, []string{replica}, m.Replicas)
	require.Contains(t, s.NodesText(), replica+" 127.0.0.1:7002@17002 slave "+master+" ")
}

func mustNode(t *testing.T, s *State, id string) NodeInfo {
	t.Helper()
	n, ok := s.Node(id)
	require.True(t, ok, id)
	return n
}
