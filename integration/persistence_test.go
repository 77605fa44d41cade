package integration

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Persistence across real restarts: what SIGTERM and SHUTDOWN save, as
// Redis decides (issue 14).

const persistKeys = 2000

// fillKeys writes n keys (pipelined).
func fillKeys(t *testing.T, s *Server, n int) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	pipe := c.Pipeline()
	for i := range n {
		pipe.Set(ctx, "key:"+strconv.Itoa(i), i, 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

func dbsize(t *testing.T, s *Server) int {
	t.Helper()
	out, err := Query(s.Addr, "DBSIZE")
	require.NoError(t, err)
	n, err := strconv.Atoi(out)
	require.NoError(t, err, out)
	return n
}

// shutdownAndWait sends SHUTDOWN args and waits (bounded) for the process
// to exit; the connection closes without a reply.
func shutdownAndWait(t *testing.T, s *Server, args ...string) {
	t.Helper()
	_, _ = Query(s.Addr, append([]string{"SHUTDOWN"}, args...)...)
	WaitFor(t, 15*time.Second, "the server to exit", func() string {
		if s.Running() {
			return "still running"
		}
		return ""
	})
}

func TestSigtermSavesWithDefaultSavePoints(t *testing.T) {
	s := StartServer(t)
	fillKeys(t, s, persistKeys)
	s.Restart() // SIGTERM, wait, start from the same directory
	require.Equal(t, persistKeys, dbsize(t, s))
	info, err := Query(s.Addr, "INFO", "persistence")
	require.NoError(t, err)
	require.Contains(t, info, "rdb_last_load_keys_loaded:"+strconv.Itoa(persistKeys)+"\r\n")
	require.Contains(t, info, "rdb_changes_since_last_save:0\r\n")
	log := s.Log()
	for _, line := range []string{"Received SIGTERM scheduling shutdown...", "User requested shutdown...",
		"Saving the final RDB snapshot before exiting.", "DB saved on disk"} {
		require.Contains(t, log, line)
	}
}

func TestShutdownNosaveDoesNotSave(t *testing.T) {
	s := StartServer(t)
	fillKeys(t, s, persistKeys)
	shutdownAndWait(t, s, "NOSAVE")
	s.Restart()
	require.Equal(t, 0, dbsize(t, s))
	require.NotContains(t, s.Log(), "Saving the final RDB snapshot")
}

func TestShutdownSaveWithoutSavePoints(t *testing.T) {
	s := StartServer(t, "--save", "")
	fillKeys(t, s, persistKeys)
	// With no save point a SIGTERM does not save ...
	s.Restart()
	require.Equal(t, 0, dbsize(t, s))
	// ... and SHUTDOWN SAVE does.
	fillKeys(t, s, persistKeys)
	shutdownAndWait(t, s, "SAVE")
	s.Restart()
	require.Equal(t, persistKeys, dbsize(t, s))
}

// TestFailedSaveAbortsShutdown: with the data directory gone, SHUTDOWN
// (default save points) and SIGTERM fail to save, the server says so as
// Redis does and keeps serving; SHUTDOWN SAVE FORCE exits anyway.
func TestFailedSaveAbortsShutdown(t *testing.T) {
	s := StartServer(t, "--enable-protected-configs", "yes")
	fillKeys(t, s, 10)
	gone := s.Dir + "/data"
	require.NoError(t, os.Mkdir(gone, 0o755))
	_, err := Query(s.Addr, "CONFIG", "SET", "dir", gone)
	require.NoError(t, err)
	require.NoError(t, os.Remove(gone))

	out, err := RedisCLI(t, s, "SHUTDOWN")
	require.NoError(t, err)
	require.Equal(t, "ERR Errors trying to SHUTDOWN. Check logs.", out)
	require.NoError(t, s.Cmd.Process.Signal(os.Interrupt)) // SIGINT: shutdown-on-sigint default
	WaitFor(t, 10*time.Second, "the signalled shutdown to fail", func() string {
		if strings.Count(s.Log(), "Error trying to save the DB, can't exit.") < 2 {
			return "not yet"
		}
		return ""
	})
	require.True(t, s.Running())
	require.Equal(t, 10, dbsize(t, s))
	require.Contains(t, s.Log(), "Errors trying to shut down the server. Check the logs for more information.")
	shutdownAndWait(t, s, "SAVE", "FORCE")
	require.Contains(t, s.Log(), "Error trying to save the DB. Exit anyway.")
}

// TestClusterNodeKeepsDataOverSigterm: a cluster node saves its keys on
// SIGTERM and serves them again after the restart (its slots come back
// from nodes.conf).
func TestClusterNodeKeepsDataOverSigterm(t *testing.T) {
	s := StartServer(t, "--cluster-enabled", "yes")
	_, err := Query(s.Addr, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	require.NoError(t, err)
	waitClusterOK(t, s)
	fillKeys(t, s, persistKeys)
	s.Restart()
	waitClusterOK(t, s) // the slots come back from nodes.conf
	require.Equal(t, persistKeys, dbsize(t, s))
}

func waitClusterOK(t *testing.T, s *Server) {
	t.Helper()
	WaitFor(t, 15*time.Second, "cluster_state:ok", func() string {
		info, err := Query(s.Addr, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return "not ok yet"
		}
		return ""
	})
}
