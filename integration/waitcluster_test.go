package integration

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWaitClusterWaitsForWrites: `shoal-server --wait-cluster` (the compose
// files' ready probe) fails while the node serves no slot and succeeds once
// its master accepts a write.
func TestWaitClusterWaitsForWrites(t *testing.T) {
	n := StartClusterNode(t, "")
	code, out := runBinary(t, t.TempDir(), "--wait-cluster", n.Addr, "1")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "not writable after 1s")

	reply, err := RedisCLI(t, n.Server, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	require.NoError(t, err)
	require.Equal(t, "OK", reply)
	code, out = runBinary(t, t.TempDir(), "--wait-cluster", n.Addr, "20")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "every master accepted a write")
	keys, err := RedisCLI(t, n.Server, "DBSIZE")
	require.NoError(t, err)
	require.Equal(t, "0", keys, "the probe's key is deleted")
}
