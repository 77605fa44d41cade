package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A node first known without a role (found by the membership layer, so
// "noflags") that then talks as a replica must show as a replica: Redis
// never has such a node (gossip entries carry flags), and a replica left as
// "noflags" breaks CLUSTER NODES/SHARDS and redis-cli --cluster check.
func TestDiscoveredReplicaGetsTheSlaveFlag(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	s := NewState(DefaultOptions(), clock, 5, nil, "", "127.0.0.1", 7000, 17000, "")
	master := strings.Repeat("a", 40)
	replica := strings.Repeat("b", 40)
	s.Discovered(master, "127.0.0.1", 7001, 17001)
	s.Discovered(replica, "127.0.0.1", 7002, 17002)
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
