package node

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/rdb"
	"github.com/stretchr/testify/require"
)

// TestSaveLoadInteropWithRedis: an RDB file written by shoal's SAVE and
// BGSAVE loads into a real redis-server with the same DEBUG DIGEST (whole
// dataset, expiries included), and a file written by Redis's SAVE loads
// into shoal at start-up with the same digest.
func TestSaveLoadInteropWithRedis(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	s := startTestServer(t, "--dir", dirA, "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	for _, f := range dumpFixtures() {
		if strings.HasSuffix(f.name, "-big") || f.name == "list-big" {
			continue // the small ones cover every encoding; keep the test fast
		}
		var cmds [][]string
		for _, c := range f.cmds {
			c = append([]string(nil), c...)
			for i, a := range c {
				if a == "k" {
					c[i] = f.name
				}
			}
			cmds = append(cmds, c)
		}
		require.Empty(t, pipelineDo(t, tc, cmds), f.name)
	}
	lib := "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 'hello' end)"
	require.Equal(t, "$5\r\nmylib\r\n", tc.do("FUNCTION", "LOAD", lib))
	setAt := time.Now()
	tc.do("SET", "ttl", "v", "PX", "100000")
	tc.do("SELECT", "3")
	tc.do("HSET", "in-db3", "f", "v")
	tc.do("SELECT", "0")
	digest := tc.do("DEBUG", "DIGEST")
	require.NotEqual(t, "+"+strings.Repeat("0", 40)+"\r\n", digest)

	before := tc.do("LASTSAVE")
	require.Equal(t, "+OK\r\n", tc.doDisk("SAVE"))
	require.Equal(t, "+Background saving started\r\n", tc.do("BGSAVE"))
	testharness.WaitFor(t, 10*time.Second, "BGSAVE to finish", func() bool {
		return strings.Contains(tc.do("INFO", "persistence"), "rdb_bgsave_in_progress:0")
	})
	require.Contains(t, tc.do("INFO", "persistence"), "rdb_last_bgsave_status:ok")
	require.GreaterOrEqual(t, tc.do("LASTSAVE"), before)

	// Redis loads shoal's file.
	redis := dialTestAddr(t, startRealRedis(t, "--dir", dirA, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes"))
	require.Equal(t, digest, redis.do("DEBUG", "DIGEST"))
	require.Equal(t, "$5\r\nhello\r\n", redis.do("FCALL", "myfunc", "0"))
	redis.do("SELECT", "3")
	require.Equal(t, "$1\r\nv\r\n", redis.do("HGET", "in-db3", "f"))

	// shoal loads Redis's file at start-up (Redis rewrites dirA/dump.rdb;
	// dir is a protected config, so the file is copied over).
	require.Equal(t, "+OK\r\n", redis.doDisk("SAVE"))
	file, err := os.ReadFile(filepath.Join(dirA, "dump.rdb"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dirB, "dump.rdb"), file, 0o644))
	s2 := startTestServer(t, "--dir", dirB, "--enable-debug-command", "yes")
	tc2 := dialTest(t, s2)
	require.Equal(t, digest, tc2.do("DEBUG", "DIGEST"))
	require.Equal(t, "$5\r\nhello\r\n", tc2.do("FCALL", "myfunc", "0"))
	// The expiry survived both files: what is left is 100 s less the time
	// since the SET (measured here, not assumed: a loaded machine may take
	// more than 10 s to get this far). Measured on the wall clock, as the
	// servers keep expiry: time.Since reads the monotonic clock, which a
	// wall-clock adjustment does not move (CI once saw PTTL 96824 at
	// 3175 ms monotonic, one millisecond past the bound).
	elapsed := time.Now().UnixMilli() - setAt.UnixMilli() + 1 // +1: both sides round to the millisecond
	ttl, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(tc2.do("PTTL", "ttl"), ":"), "\r\n"), 10, 64)
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, int64(100000), "PTTL")
	require.GreaterOrEqual(t, ttl, 100000-elapsed, "PTTL %d ms, %d ms after the SET", ttl, elapsed)
}

// TestDebugReload: DEBUG RELOAD saves, empties and loads back (same
// digest); NOSAVE NOFLUSH without MERGE fails on the keys that exist;
// unknown options get Redis's error.
func TestDebugReload(t *testing.T) {
	s := startTestServer(t, "--dir", t.TempDir(), "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	tc.do("RPUSH", "l", "a", "b", "1")
	tc.do("ZADD", "z", "1", "m")
	tc.do("SET", "s", "v", "EX", "1000")
	digest := tc.do("DEBUG", "DIGEST")
	require.Equal(t, "+OK\r\n", tc.do("DEBUG", "RELOAD"))
	require.Equal(t, digest, tc.do("DEBUG", "DIGEST"))
	tc.do("SET", "extra", "1")
	require.Equal(t, "+OK\r\n", tc.do("DEBUG", "RELOAD", "NOSAVE"))
	require.Equal(t, digest, tc.do("DEBUG", "DIGEST"))
	require.Equal(t, "-ERR Error trying to load the RDB dump\r\n", tc.do("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH"))
	require.Equal(t, "+OK\r\n", tc.do("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"))
	// Function libraries go through the file too.
	require.Equal(t, "$1\r\nf\r\n", tc.do("FUNCTION", "LOAD", "#!lua name=f\nredis.register_function('f1', function() return 1 end)"))
	require.Equal(t, "+OK\r\n", tc.do("DEBUG", "RELOAD"))
	require.Equal(t, ":1\r\n", tc.do("FCALL", "f1", "0"))
	require.Equal(t, "-ERR Error trying to load the RDB dump\r\n", tc.do("DEBUG", "RELOAD", "NOFLUSH"))
	require.Equal(t, "-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n", tc.do("DEBUG", "RELOAD", "X"))
}

// TestBgsaveIsOneInstant: while BGSAVE walks the keyspace slowly
// (rdb-key-save-delay), one client keeps incrementing k0 ... k399 in that
// order. At any instant the counters form a step (a prefix one ahead of
// the rest), so a point-in-time file must show one; a file read slot by
// slot at different times shows counters from different rounds.
func TestBgsaveIsOneInstant(t *testing.T) {
	dir := t.TempDir()
	s := startTestServer(t, "--dir", dir, "--rdb-key-save-delay", "300")
	tc := dialTest(t, s)
	const nkeys = 400
	var cmds [][]string
	for i := 0; i < nkeys; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), "0"})
	}
	require.Empty(t, pipelineDo(t, tc, cmds))

	var batch [][]string
	for i := 0; i < nkeys; i++ {
		batch = append(batch, []string{"INCR", fmt.Sprintf("k%d", i)})
	}
	stop := make(chan struct{})
	done := writeRounds(dialTest(t, s), batch, 2000, stop)
	// Let a few rounds go by first, so that the counters differ.
	testharness.WaitFor(t, 10*time.Second, "the writer's first rounds", func() bool {
		return tc.do("GET", fmt.Sprintf("k%d", nkeys-1)) != "$1\r\n0\r\n"
	})
	require.Equal(t, "+Background saving started\r\n", tc.do("BGSAVE"))
	testharness.WaitFor(t, 30*time.Second, "BGSAVE to finish", func() bool {
		return strings.Contains(tc.do("INFO", "persistence"), "rdb_bgsave_in_progress:0")
	})
	close(stop)
	require.NoError(t, <-done)
	require.Contains(t, tc.do("INFO", "persistence"), "rdb_last_bgsave_status:ok")

	data, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	require.NoError(t, err)
	vals := make([]int64, nkeys)
	seen := 0
	require.NoError(t, rdb.LoadFile(data, rdb.DefaultLimits(), func(k *rdb.LoadedKey) error {
		var i int
		_, err := fmt.Sscanf(string(k.Key), "k%d", &i)
		require.NoError(t, err)
		vals[i], err = strconv.ParseInt(string(k.Obj.Str), 10, 64)
		seen++
		return err
	}))
	require.Equal(t, nkeys, seen)
	// A step: vals[0..j) == r+1 and vals[j..) == r.
	j := 1
	for j < nkeys && vals[j] == vals[0] {
		j++
	}
	for i := j; i < nkeys; i++ {
		require.Equal(t, vals[0]-1, vals[i], "k%d: the file mixes rounds: %v", i, vals)
	}
}

// TestSavesDoNotDeadlockWithTheGate: commands that hold the execution gate
// and save (DEBUG RELOAD, FLUSHALL in a transaction, with save points)
// while a slow BGSAVE is starting or walking all answer: a background save
// never waits for the gate while it holds the save lock.
func TestSavesDoNotDeadlockWithTheGate(t *testing.T) {
	s := startTestServer(t, "--save", "3600 1", "--rdb-key-save-delay", "100", "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	var cmds [][]string
	for i := 0; i < 500; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), "v"})
	}
	for round := 0; round < 3; round++ {
		require.Empty(t, pipelineDo(t, tc, cmds))
		require.Equal(t, "+Background saving started\r\n", tc.do("BGSAVE"))
		require.Equal(t, "+OK\r\n", tc.do("DEBUG", "RELOAD"))
		require.Equal(t, "+OK\r\n", tc.do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", tc.do("FLUSHALL"))
		require.Equal(t, "*1\r\n+OK\r\n", tc.do("EXEC"))
		require.Equal(t, ":0\r\n", tc.do("DBSIZE"))
	}
	testharness.WaitFor(t, 30*time.Second, "no save running", func() bool {
		return strings.Contains(tc.do("INFO", "persistence"), "rdb_bgsave_in_progress:0")
	})
}

// writeRounds sends the commands of batch as one pipeline and reads their
// replies, up to rounds times or until stop closes, on its own goroutine;
// the channel gets nil, or the first I/O error.
func writeRounds(tc *testConn, batch [][]string, rounds int, stop <-chan struct{}) <-chan error {
	var wire []byte
	for _, c := range batch {
		wire = append(wire, encodeCommand(c...)...)
	}
	done := make(chan error, 1)
	go func() {
		for round := 0; round < rounds; round++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			_ = tc.c.SetDeadline(time.Now().Add(testIOTimeout))
			if _, err := tc.c.Write(wire); err != nil {
				done <- err
				return
			}
			for range batch {
				var buf bytes.Buffer
				if err := testharness.ReadRaw(tc.r, &buf); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	return done
}

// TestSaveCreatesTempFileAtOnce: a save creates temp-<pid>.rdb when it
// starts, as rdbSave does, not when its buffer is first flushed: with
// rdb-key-save-delay the file is there during the save (Redis's
// unit/shutdown sends a second SIGINT once it sees it).
func TestSaveCreatesTempFileAtOnce(t *testing.T) {
	dir := t.TempDir()
	s := startTestServer(t, "--dir", dir, "--rdb-key-save-delay", "200000") // 20 keys: 4 s
	c := dialTest(t, s)
	for i := range 20 {
		c.do("SET", strconv.Itoa(i), "v")
	}
	started := time.Now()
	if got := c.do("BGSAVE"); got != "+Background saving started\r\n" {
		t.Fatalf("BGSAVE = %q", got)
	}
	temp := filepath.Join(dir, fmt.Sprintf("temp-%d.rdb", os.Getpid()))
	testharness.WaitFor(t, 10*time.Second, "the temporary RDB file", func() bool {
		_, err := os.Stat(temp)
		return err == nil
	})
	if waited := time.Since(started); waited > 2*time.Second {
		t.Fatalf("temp-<pid>.rdb appeared after %v of a 4 s save: created at its end", waited)
	}
}
