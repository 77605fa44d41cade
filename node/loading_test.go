package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// TestLoadingRefusesAndReports: while a dataset loads (slowed by
// key-load-delay, serving clients every 1 KB), commands without the loading flag get Redis's -LOADING
// (PING and GET; EXEC of a queued GET is aborted with it, as rejectCommand), INFO answers with loading:1 and
// the loading_* progress fields, and both end with the load.
func TestLoadingRefusesAndReports(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	var cmds [][]string
	val := strings.Repeat("v", 100)
	for i := 0; i < 1000; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), val})
	}
	require.Empty(t, pipelineDo(t, tc, cmds))
	require.Equal(t, "+OK\r\n", tc.doDisk("SAVE"))
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "key-load-delay", "3000")) // 3 s in all
	// Clients are served every 1 KB of the file (~9 keys), as Redis's own
	// tests configure it to observe the loading state.
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "loading-process-events-interval-bytes", "1024"))
	require.Equal(t, "+OK\r\n", tc.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", tc.do("GET", "k1"))

	loaded := make(chan error, 1)
	go func() { loaded <- s.loadRDB(true, false) }()
	other := dialTest(t, s)
	testharness.WaitFor(t, 10*time.Second, "the load to start", func() bool {
		return strings.Contains(other.do("INFO", "persistence"), "loading:1")
	})
	info := other.do("INFO", "persistence")
	for _, f := range []string{"loading_start_time:", "loading_total_bytes:", "loading_loaded_bytes:", "loading_loaded_perc:", "loading_eta_seconds:"} {
		require.Contains(t, info, f)
	}
	const loading = "-LOADING Redis is loading the dataset in memory\r\n"
	require.Equal(t, loading, other.do("PING"))
	require.Equal(t, loading, other.do("GET", "k1"))
	require.Equal(t, "-EXECABORT Transaction discarded because of: LOADING Redis is loading the dataset in memory\r\n", tc.do("EXEC"))
	require.NoError(t, <-loaded)
	require.NotContains(t, other.do("INFO", "persistence"), "loading_start_time")
	require.Equal(t, "$100\r\n"+val+"\r\n", other.do("GET", "k1"))
	require.Equal(t, "+PONG\r\n", other.do("PING"))
}

// TestLoadShorterThanAnIntervalIsNotSeen: with the default
// loading-process-events-interval-bytes (2 MB), a load of a smaller file
// never serves clients before its end, as in Redis: a PING sent during it
// is answered PONG once the load is over, never -LOADING (Redis's
// tests/cluster query a replica right after CLUSTER REPLICATE).
func TestLoadShorterThanAnIntervalIsNotSeen(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	var cmds [][]string
	for i := 0; i < 50; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), "v"})
	}
	require.Empty(t, pipelineDo(t, tc, cmds))
	require.Equal(t, "+OK\r\n", tc.doDisk("SAVE"))
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "key-load-delay", "20000")) // 1 s in all
	loaded := make(chan error, 1)
	go func() { loaded <- s.loadRDB(true, false) }()
	testharness.WaitFor(t, 10*time.Second, "the load to start", s.loading.active.Load)
	require.Equal(t, "+PONG\r\n", tc.do("PING"))
	require.False(t, s.loading.active.Load(), "PING was answered before the load ended")
	require.Equal(t, "$1\r\nv\r\n", tc.do("GET", "k49"))
	require.NoError(t, <-loaded)
}

// TestStartupLoadServesClients: as redis-server, the start-up load serves
// the clients that connect meanwhile (they used to wait in the listen
// queue until it ended): INFO says loading:1, commands without the loading
// flag get -LOADING, CONFIG SET refuses dir/appendonly (deny-loading) and
// takes the others; once loaded, all commands run.
func TestStartupLoadServesClients(t *testing.T) {
	dir := t.TempDir()
	seed := startTestServer(t, "--dir", dir, "--rdbcompression", "no")
	sc := dialTest(t, seed)
	var cmds [][]string
	val := strings.Repeat("v", 100)
	for i := 0; i < 200; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), val})
	}
	require.Empty(t, pipelineDo(t, sc, cmds))
	require.Equal(t, "+OK\r\n", sc.doDisk("SAVE"))
	seed.Shutdown()

	// Clients are served every 1 KB of the file (~9 keys), and after the
	// load once Listen has started everything.
	cfg, err := config.Load([]string{"--port", "0", "--bind", "127.0.0.1", "--save", "", "--dir", dir,
		"--key-load-delay", "30000", "--enable-protected-configs", "yes",
		"--loading-process-events-interval-bytes", "1024"}) // 200 keys: about 6 s
	require.NoError(t, err)
	s, err := New(cfg, Options{LoadLater: true})
	require.NoError(t, err)
	t.Cleanup(s.Shutdown)
	require.NoError(t, s.Bind())
	loaded := make(chan error, 1)
	go func() { loaded <- s.LoadData() }()
	c := dialTest(t, s)
	testharness.WaitFor(t, 10*time.Second, "the start-up load to be reported", func() bool {
		return strings.Contains(c.do("INFO", "persistence"), "loading:1")
	})
	require.Equal(t, "-LOADING Redis is loading the dataset in memory\r\n", c.do("GET", "k1"))
	require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "loglevel", "debug"))
	require.True(t, strings.HasPrefix(c.do("CONFIG", "SET", "dir", "/tmp"), "-LOADING"))
	require.NoError(t, <-loaded)
	require.NoError(t, s.Listen())
	require.Equal(t, "$100\r\n"+val+"\r\n", c.do("GET", "k1"))
	require.Equal(t, ":200\r\n", c.do("DBSIZE"))
}

// key-load-delay is owed key by key and slept a millisecond or more at a
// time: 50 µs a key sleeps once every 20 keys, 30 ms every key.
func TestKeyLoadDelayIsSleptInSteps(t *testing.T) {
	var l loadingState
	for i := 1; i < 20; i++ {
		require.Zero(t, l.keyLoadDelay(50), "key %d", i)
	}
	require.Equal(t, time.Millisecond, l.keyLoadDelay(50))
	require.Zero(t, l.keyLoadDelay(50))
	var big loadingState
	require.Equal(t, 30*time.Millisecond, big.keyLoadDelay(30000))
	require.Equal(t, 30*time.Millisecond, big.keyLoadDelay(30000))
}
