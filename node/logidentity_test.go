package node

import (
	"path/filepath"
	"testing"

	"github.com/shoal-db/shoal/config"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Every line carries node_id: the run ID standalone; in cluster mode the
// cluster node ID and current_epoch, as they are when the line is written
// (the "node" field was the run ID's first 8 characters).
func TestLogLinesCarryNodeIdentity(t *testing.T) {
	newServer := func(args ...string) (*Server, *observer.ObservedLogs) {
		cfg, err := config.Load(append([]string{"--port", "0", "--bind", "127.0.0.1", "--save", ""}, args...))
		require.NoError(t, err)
		core, logs := observer.New(zapcore.DebugLevel)
		s, err := New(cfg, Options{Logger: zap.New(core)})
		require.NoError(t, err)
		t.Cleanup(s.Shutdown)
		return s, logs
	}
	last := func(logs *observer.ObservedLogs) map[string]any {
		all := logs.All()
		require.NotEmpty(t, all)
		return all[len(all)-1].ContextMap()
	}

	s, logs := newServer()
	s.Logger().Info("standalone line")
	f := last(logs)
	require.Equal(t, s.runID, f["node_id"])
	require.Len(t, s.runID, 40)
	require.NotContains(t, f, "current_epoch")

	dir := t.TempDir()
	c, clogs := newServer("--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	// Before nodes.conf is loaded the cluster id is not known yet: run_id.
	require.Equal(t, c.runID, (&logIdentity{runID: c.runID, cluster: true}).fields()[0].String)
	require.Equal(t, "run_id", (&logIdentity{runID: c.runID, cluster: true}).fields()[0].Key)
	require.NoError(t, c.cluster.SetConfigEpoch([]byte("5")))
	c.Logger().Named("any").Info("cluster line", zap.String("peer", "x"))
	f = last(clogs)
	require.Equal(t, c.cluster.MyID(), f["node_id"])
	require.NotEqual(t, c.runID, f["node_id"])
	require.Equal(t, uint64(5), f["current_epoch"])
	require.Equal(t, "x", f["peer"])
}
