package node

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// execPing runs MULTI PING EXEC and returns EXEC's reply.
func execPing(tc *testConn) string {
	tc.do("MULTI")
	tc.do("PING")
	return tc.do("EXEC")
}

const execOK = "*1\r\n+PONG\r\n"
const execFailed = "*-1\r\n"

func TestWatchTouchedByWrites(t *testing.T) {
	s := startTestServer(t)
	a, b := dialTest(t, s), dialTest(t, s)

	a.do("SET", "x", "1")
	require.Equal(t, "+OK\r\n", a.do("WATCH", "x", "y"))
	require.Equal(t, execOK, execPing(a), "untouched")

	a.do("WATCH", "x")
	b.do("SET", "x", "2")
	require.Equal(t, execFailed, execPing(a), "written by another client")
	require.Equal(t, execOK, execPing(a), "EXEC unwatches")

	// A read, a failed write, and a write to another key touch nothing.
	a.do("WATCH", "x")
	b.do("GET", "x")
	b.do("LPUSH", "x", "v") // WRONGTYPE
	b.do("SET", "other", "1")
	require.Equal(t, execOK, execPing(a))

	// Only the written keys of a command count: SINTERSTORE reads x2/x3.
	a.do("SADD", "s1", "m")
	a.do("WATCH", "s1")
	b.do("SINTERSTORE", "dst", "s1", "s1")
	require.Equal(t, execOK, execPing(a), "a read-only source key is not touched")
	a.do("WATCH", "dst")
	b.do("SINTERSTORE", "dst", "s1", "s1")
	require.Equal(t, execFailed, execPing(a), "the destination is")

	// The database counts.
	a.do("WATCH", "x")
	b.do("SELECT", "3")
	b.do("SET", "x", "9")
	require.Equal(t, execOK, execPing(a))

	// UNWATCH and DISCARD forget, WATCH inside MULTI is refused.
	a.do("WATCH", "x")
	a.do("SET", "x", "3")
	require.Equal(t, "+OK\r\n", a.do("UNWATCH"))
	require.Equal(t, execOK, execPing(a))
	a.do("WATCH", "x")
	a.do("SET", "x", "4")
	a.do("MULTI")
	a.do("DISCARD")
	require.Equal(t, execOK, execPing(a))
	a.do("MULTI")
	require.Equal(t, "-ERR WATCH inside MULTI is not allowed\r\n", a.do("WATCH", "x"))
	a.do("DISCARD")
}

func TestWatchFlushSwapAndExpiry(t *testing.T) {
	s := startTestServer(t)
	a, b := dialTest(t, s), dialTest(t, s)

	a.do("SET", "x", "1")
	a.do("WATCH", "x", "missing")
	b.do("FLUSHALL")
	require.Equal(t, execFailed, execPing(a), "FLUSHALL removed a watched key")
	a.do("WATCH", "missing")
	b.do("FLUSHDB")
	require.Equal(t, execOK, execPing(a), "a missing key is not touched by FLUSHDB")

	// SWAPDB touches watched keys that exist in either database.
	b.do("SELECT", "1")
	b.do("SET", "y", "1")
	a.do("WATCH", "y") // missing in db 0
	b.do("SWAPDB", "0", "1")
	require.Equal(t, execFailed, execPing(a))

	// A key that expires logically after WATCH fails EXEC (lazy expiry)...
	a.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	a.do("SET", "e", "1", "PX", "30")
	a.do("WATCH", "e")
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, execFailed, execPing(a))
	// ... but a key already expired when watched does not.
	a.do("SET", "e", "1", "PX", "1")
	time.Sleep(5 * time.Millisecond)
	a.do("WATCH", "e")
	require.Equal(t, ":0\r\n", b.do("EXISTS", "e"), "lazy expiry deletes it")
	require.Equal(t, execOK, execPing(a))
	a.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")

	// Active expiry touches.
	b.do("SELECT", "0")
	b.do("FLUSHALL")
	a.do("SET", "f", "1", "PX", "20")
	a.do("WATCH", "f")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && b.do("DBSIZE") != ":0\r\n" {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, execFailed, execPing(a))
}

// callFeed records each Propagate call as one string.
type callFeed struct {
	mu    sync.Mutex
	calls []string
}

func (f *callFeed) Propagate(db int, cmds [][][]byte) {
	var parts []string
	for _, argv := range cmds {
		words := make([]string, len(argv))
		for i, a := range argv {
			words[i] = string(a)
		}
		parts = append(parts, strings.Join(words, " "))
	}
	f.mu.Lock()
	f.calls = append(f.calls, string(rune('0'+db))+":"+strings.Join(parts, "; "))
	f.mu.Unlock()
}

func (f *callFeed) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func TestExecEffectsPropagateAsOneUnit(t *testing.T) {
	s := startTestServer(t)
	feed := &callFeed{}
	s.AddEffectFeed(feed)
	tc := dialTest(t, s)

	tc.do("MULTI")
	tc.do("SET", "a", "1")
	tc.do("GET", "a")
	tc.do("SET", "b", "2")
	tc.do("EXEC")
	require.Equal(t, []string{"0:MULTI; SET a 1; SET b 2; EXEC"}, feed.take())

	// One write: no MULTI/EXEC around it (Redis 7.0); reads only: nothing.
	tc.do("MULTI")
	tc.do("GET", "a")
	tc.do("INCR", "n")
	tc.do("EXEC")
	tc.do("MULTI")
	tc.do("GET", "a")
	tc.do("EXEC")
	require.Equal(t, []string{"0:INCR n"}, feed.take())

	// A transaction that changes database leaves the stream in the last one,
	// as Redis's (the feeds follow its SELECTs: resp.SelectedAfter).
	tc.do("MULTI")
	tc.do("SET", "a", "3")
	tc.do("SELECT", "2")
	tc.do("SET", "c", "4")
	tc.do("FLUSHALL")
	tc.do("EXEC")
	require.Equal(t, []string{"0:MULTI; SET a 3; SELECT 2; SET c 4; FLUSHALL; EXEC"}, feed.take())
}

// TestExclusiveExecIsAtomic: a transaction with a keyspace-wide command
// (DBSIZE) sees no write of another client between its commands.
func TestExclusiveExecIsAtomic(t *testing.T) {
	s := startTestServer(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := dialTest(t, s)
		for i := 0; i < 20000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w.do("SET", "k"+strings.Repeat("x", i%50), "v")
			w.do("DEL", "k"+strings.Repeat("x", i%50))
		}
	}()
	tc := dialTest(t, s)
	for i := 0; i < 300; i++ {
		tc.do("MULTI")
		tc.do("DBSIZE")
		tc.do("PING")
		tc.do("DBSIZE")
		reply := tc.do("EXEC")
		lines := strings.Split(reply, "\r\n")
		require.Equal(t, lines[1], lines[3], "DBSIZE changed inside a transaction: %q", reply)
	}
	close(stop)
	wg.Wait()
}

// TestWatchTouchedByClusterFlush: keys the cluster deletes (slots lost to a
// newer configuration, FLUSHALL of a demoted master) touch their watchers.
func TestWatchTouchedByClusterFlush(t *testing.T) {
	s := startTestServer(t)
	a := dialTest(t, s)
	a.do("SET", "x", "1") // slot 16287
	a.do("SET", "y", "1") // slot 12222
	a.do("WATCH", "x")
	s.tx.watch.touchFlushed(0, []int{12222})
	require.Equal(t, execOK, execPing(a), "another slot was flushed")
	a.do("WATCH", "x")
	s.tx.watch.touchFlushed(0, []int{16287})
	require.Equal(t, execFailed, execPing(a))
	a.do("WATCH", "y")
	s.tx.watch.touchFlushed(-1, nil)
	require.Equal(t, execFailed, execPing(a))
}
