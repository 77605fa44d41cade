package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

// A fresh master reports cluster_size:1 until its first state update after
// the writable delay, as Redis's clusterInit/clusterUpdateState do (checked
// against redis-server 7.0.15: a fresh node shows cluster_size:1, then 0).
func TestFreshNodeClusterSize(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := NewState(DefaultOptions(), clk, 3, nil, "", "127.0.0.1", 7391, 17391, "")
	s.Tick()
	require.True(t, strings.Contains(s.InfoText(), "\r\ncluster_size:1\r\n"), s.InfoText())
	clk.Advance(3 * time.Second)
	s.Tick()
	require.True(t, strings.Contains(s.InfoText(), "\r\ncluster_size:0\r\n"), s.InfoText())
}
