package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOOMScoreAdj: oom-score-adj writes the master or replica value
// (relative to the score shoal found, or absolute, clamped), follows the
// role, and disabling it restores the original score. The file is a stand-in
// for /proc/self/oom_score_adj.
func TestOOMScoreAdj(t *testing.T) {
	s := startTestServer(t)
	file := filepath.Join(t.TempDir(), "oom_score_adj")
	require.NoError(t, os.WriteFile(file, []byte("100\n"), 0o644))
	s.oomScore.mu.Lock()
	s.oomScore.path = file
	s.oomScore.mu.Unlock()
	score := func() string {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	tc := dialTest(t, s)
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj-values", "10 20 30"))
	require.Equal(t, "100", score(), "untouched while off")
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj", "yes"))
	require.Equal(t, "110", score())
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj-values", "15 20 30"))
	require.Equal(t, "115", score())
	require.Equal(t, "+OK\r\n", tc.do("REPLICAOF", "127.0.0.1", "1"))
	require.Equal(t, "120", score(), "the replica's value")
	require.Equal(t, "+OK\r\n", tc.do("REPLICAOF", "NO", "ONE"))
	require.Equal(t, "115", score())
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj", "absolute"))
	require.Equal(t, "15", score())
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj-values", "2000 2000 2000", "oom-score-adj", "relative"))
	require.Equal(t, "1000", score(), "clamped")
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "oom-score-adj", "no"))
	require.Equal(t, "100", score(), "restored")
}
