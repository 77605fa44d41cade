package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// releaseLock deletes the lock only if it still holds the caller's token:
// the compare-and-delete must be atomic, or a client whose lock expired
// could delete the next holder's lock.
var releaseLock = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0`)

// TestLockPattern is the README's distributed-lock example: 50 goroutines
// contend for one lock with SET key token NX PX; at most one holds it at a
// time, and only the owner's release deletes it.
func TestLockPattern(t *testing.T) {
	s := startTestServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 50})
	defer rdb.Close()

	const workers = 50
	var holders, maxHolders, acquired atomic.Int32
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("worker-%d", w)
			for i := 0; i < 200 && time.Now().Before(deadline); i++ {
				ok, err := rdb.SetNX(ctx, "lock:resource", token, 5*time.Second).Result()
				if err != nil {
					t.Errorf("SET NX: %v", err)
					return
				}
				if !ok {
					time.Sleep(time.Millisecond)
					continue
				}
				n := holders.Add(1)
				for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
				}
				acquired.Add(1)
				// Another worker's release attempt must not free our lock.
				if got, err := releaseLock.Run(ctx, rdb, []string{"lock:resource"}, "not-"+token).Int(); err != nil || got != 0 {
					t.Errorf("release by a non-owner: %d, %v", got, err)
				}
				holders.Add(-1)
				got, err := releaseLock.Run(ctx, rdb, []string{"lock:resource"}, token).Int()
				if err != nil || got != 1 {
					t.Errorf("release by the owner: %d, %v", got, err)
				}
				if acquired.Load() >= 500 {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), maxHolders.Load(), "more than one holder at a time")
	require.Greater(t, acquired.Load(), int32(workers/2), "the lock was acquired too few times")
	require.Equal(t, int64(0), rdb.Exists(ctx, "lock:resource").Val())
}

func TestEvalBasics(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, ":3\r\n", tc.do("EVAL", "return 1+2", "0"))
	require.Equal(t, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", tc.do("EVAL", "return {KEYS[1], ARGV[1]}", "1", "a", "b"))
	require.Equal(t, "+OK\r\n", tc.do("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "k", "v"))
	sha := bulkBody(t, tc.do("SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])"))
	require.Equal(t, "$1\r\nv\r\n", tc.do("EVALSHA", sha, "1", "k"))
	require.Equal(t, "*2\r\n:1\r\n:0\r\n", tc.do("SCRIPT", "EXISTS", sha, "ffffffffffffffffffffffffffffffffffffffff"))
	require.Equal(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n", tc.do("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"))
	require.Contains(t, tc.do("EVAL_RO", "return redis.call('SET', 'x', 'y')", "0"), "-ERR Write commands are not allowed from read-only scripts. script: ")
	// No global leaks between scripts.
	require.Contains(t, tc.do("EVAL", "x = 1", "0"), "Attempt to modify a readonly table")
	require.Contains(t, tc.do("EVAL", "return x", "0"), "Script attempted to access nonexistent global variable 'x'")
	// ... nor through the environment functions or the string metatable.
	require.Contains(t, tc.do("EVAL", "getfenv(0).x = 1", "0"), "Attempt to modify a readonly table")
	require.Contains(t, tc.do("EVAL", "getmetatable(_G).__index.redis = 1", "0"), "Attempt to modify a readonly table")
	require.Contains(t, tc.do("EVAL", "getmetatable('').__index.upper = nil", "0"), "Attempt to modify a readonly table")
	require.Contains(t, tc.do("EVAL", "rawset(_G, 'x', 1)", "0"), "Attempt to modify a readonly table")
	require.Contains(t, tc.do("EVAL", "loadstring('x = 1')()", "0"), "Attempt to modify a readonly table")
	require.Equal(t, ":3\r\n", tc.do("EVAL", "return loadstring('return 1 + 2')()", "0"))
	require.Contains(t, tc.do("EVAL", "return x", "0"), "nonexistent global variable 'x'")
	require.Equal(t, "$1\r\nA\r\n", tc.do("EVAL", "return string.upper('a')", "0"))
	// The sandbox has no os/io.
	require.Contains(t, tc.do("EVAL", "return os.time()", "0"), "nonexistent global variable 'os'")
	require.Contains(t, tc.do("EVAL", "return io.open('/etc/passwd')", "0"), "nonexistent global variable 'io'")
	require.Equal(t, "$18\r\n{\"a\":[1,2,\"x\\/y\"]}\r\n", tc.do("EVAL", `return cjson.encode({a={1,2,"x/y"}})`, "0"))
	require.Equal(t, ":3\r\n", tc.do("EVAL", "return bit.bor(1, 2)", "0"))
	// Memory: one call cannot build a giant string.
	require.Contains(t, tc.do("EVAL", "return string.rep('x', 2^40)", "0"), "resulting string too large")
}

// TestScriptEffectsAndBusy: a script's writes reach the feed as one
// MULTI/EXEC unit; a long script makes other clients wait, then get -BUSY,
// and SCRIPT KILL stops it.
func TestScriptEffectsAndBusy(t *testing.T) {
	s := startTestServer(t, "--busy-reply-threshold", "50")
	feed := &callFeed{}
	s.AddEffectFeed(feed)
	tc := dialTest(t, s)
	tc.do("EVAL", "redis.call('SET', 'a', '1'); redis.call('GET', 'a'); redis.call('INCR', 'a')", "0")
	require.Equal(t, []string{"0:MULTI; SET a 1; INCR a; EXEC"}, feed.take())

	other := dialTest(t, s)
	tc.send("EVAL", "while true do end", "0")
	time.Sleep(150 * time.Millisecond)
	require.Equal(t, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n", other.do("GET", "a"))
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	require.Contains(t, tc.read(), "Script killed by user with SCRIPT KILL")
	require.Equal(t, "$1\r\n2\r\n", other.do("GET", "a"))
	require.Equal(t, "-NOTBUSY No scripts in execution right now.\r\n", other.do("SCRIPT", "KILL"))
}

// waitScriptRunning waits until a script runs.
func waitScriptRunning(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(testIOTimeout)
	for s.tx.scripts.running.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no script started")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScriptBusyThresholdLowered: a busy timer pending for the default
// threshold (5 s, armed by an earlier script) does not delay a lower
// threshold set since: the next long script is busy after the new one.
func TestScriptBusyThresholdLowered(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, ":1\r\n", tc.do("EVAL", "return 1", "0")) // arms the timer for 5 s
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "busy-reply-threshold", "50"))
	tc.send("EVAL", "while true do end", "0")
	waitScriptRunning(t, s)
	other := dialTest(t, s)
	other.send("GET", "a") // waits for the script, answered -BUSY once it is busy
	require.Contains(t, other.readWithin(3*time.Second), "-BUSY")
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	require.Contains(t, tc.read(), "Script killed by user with SCRIPT KILL")
}

// TestScriptBusyCountsFromItsOwnStart: a script is busy
// busy-reply-threshold after its own start, not after that of an earlier
// script whose deadline the timer was armed for.
func TestScriptBusyCountsFromItsOwnStart(t *testing.T) {
	const threshold = 300 * time.Millisecond
	s := startTestServer(t, "--busy-reply-threshold", "300")
	tc := dialTest(t, s)
	require.Equal(t, ":1\r\n", tc.do("EVAL", "return 1", "0")) // the timer fires 300 ms from here
	time.Sleep(threshold / 2)
	sent := time.Now()
	tc.send("EVAL", "while true do end", "0")
	waitScriptRunning(t, s)
	other := dialTest(t, s)
	other.send("GET", "a")
	require.Contains(t, other.readWithin(testIOTimeout), "-BUSY")
	require.GreaterOrEqual(t, time.Since(sent), threshold, "busy before the script ran for the threshold")
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	require.Contains(t, tc.read(), "Script killed by user with SCRIPT KILL")
}

// TestRedlockAcrossNodes: the Redlock pattern over three independent nodes
// — a client holds the lock when SET NX PX succeeded on a majority, and
// releases it everywhere with the compare-and-delete script. At most one
// client holds a majority at a time.
func TestRedlockAcrossNodes(t *testing.T) {
	ctx := context.Background()
	var nodes []*redis.Client
	for i := 0; i < 3; i++ {
		s := startTestServer(t)
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 10})
		defer rdb.Close()
		nodes = append(nodes, rdb)
	}
	var holders, maxHolders, acquired atomic.Int32
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("client-%d", w)
			for i := 0; i < 300 && time.Now().Before(deadline); i++ {
				votes := 0
				for _, n := range nodes {
					if ok, err := n.SetNX(ctx, "redlock", token, 2*time.Second).Result(); err == nil && ok {
						votes++
					}
				}
				if votes >= 2 {
					h := holders.Add(1)
					for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
					}
					acquired.Add(1)
					holders.Add(-1)
				}
				for _, n := range nodes { // release wherever we got it (only ours)
					if err := releaseLock.Run(ctx, n, []string{"redlock"}, token).Err(); err != nil {
						t.Errorf("release: %v", err)
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), maxHolders.Load(), "two clients held a majority at once")
	require.Greater(t, acquired.Load(), int32(10))
}
