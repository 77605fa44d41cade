package node

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMultiExecReplies(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))
	require.Equal(t, "-ERR DISCARD without MULTI\r\n", c.do("DISCARD"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "-ERR MULTI calls can not be nested\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "a", "1"))
	require.Equal(t, "+QUEUED\r\n", c.do("INCR", "a"))
	require.Equal(t, "+QUEUED\r\n", c.do("LPUSH", "a", "x"))
	require.Equal(t, "+QUEUED\r\n", c.do("SELECT", "1"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "b", "2"))
	require.Equal(t, "*5\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n+OK\r\n+OK\r\n", c.do("EXEC"))
	require.Equal(t, "$1\r\n2\r\n", c.do("GET", "b"), "SELECT inside the transaction sticks")
	// A command rejected while queueing aborts the transaction.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "-ERR wrong number of arguments for 'set' command\r\n", c.do("SET", "a"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "a", "1"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", c.do("EXEC"))
	// DISCARD drops the queue.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "gone", "1"))
	require.Equal(t, "+OK\r\n", c.do("DISCARD"))
	require.Equal(t, ":0\r\n", c.do("EXISTS", "gone"))
	// Keyspace-wide commands inside a transaction do not deadlock with the
	// transaction's own slot locks.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	c.do("SET", "k1", "v")
	c.do("FLUSHALL")
	c.do("SET", "k2", "v")
	c.do("KEYS", "*")
	c.do("DBSIZE")
	require.Equal(t, "*5\r\n+OK\r\n+OK\r\n+OK\r\n*1\r\n$2\r\nk2\r\n:1\r\n", c.do("EXEC"))
	// RESET closes an open transaction.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+RESET\r\n", c.do("RESET"))
	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))
}

// TestExecIsAtomic: while transactions move one unit between two keys in
// other slots, a concurrent reader in another transaction never sees the
// sum change.
func TestExecIsAtomic(t *testing.T) {
	s := startTestServer(t)
	setup := dialTest(t, s)
	setup.do("MSET", "acct:a", "1000", "acct:b", "0")
	var wg sync.WaitGroup
	stop := time.Now().Add(time.Second)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialTest(t, s)
			for i := 0; i < 2000 && time.Now().Before(stop); i++ {
				c.send("MULTI")
				c.send("DECR", "acct:a")
				c.send("INCR", "acct:b")
				c.send("EXEC")
				for j := 0; j < 4; j++ {
					c.read()
				}
			}
		}()
	}
	reader := dialTest(t, s)
	for i := 0; i < 2000 && time.Now().Before(stop); i++ {
		reader.send("MULTI")
		reader.send("GET", "acct:a")
		reader.send("GET", "acct:b")
		reader.send("EXEC")
		reader.read()
		reader.read()
		reader.read()
		reply := reader.read()
		var a, b int
		_, err := fmt.Sscanf(reply, "*2\r\n$%d\r\n", new(int))
		require.NoError(t, err, reply)
		parts := splitBulkArray(reply)
		require.Len(t, parts, 2, reply)
		a, _ = strconv.Atoi(parts[0])
		b, _ = strconv.Atoi(parts[1])
		require.Equal(t, 1000, a+b, "a transaction saw a half-applied transfer: %q", reply)
	}
	wg.Wait()
}

// splitBulkArray extracts the bulk strings of a flat RESP2 array reply.
func splitBulkArray(reply string) []string {
	var out []string
	lines := []byte(reply)
	i := 0
	next := func() string {
		j := i
		for j+1 < len(lines) && !(lines[j] == '\r' && lines[j+1] == '\n') {
			j++
		}
		l := string(lines[i:j])
		i = j + 2
		return l
	}
	next() // *N
	for i < len(lines) {
		next() // $len
		out = append(out, next())
	}
	return out
}

// A queued command that fails inside EXEC counts as a failed call of its
// own; EXEC itself did not fail (Redis's "errorstats: failed call within
// MULTI/EXEC").
func TestExecQueuedErrorIsNotExecFailure(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("CONFIG", "RESETSTAT")
	tc.do("SET", "foo", "bar")
	require.Equal(t, "+OK\r\n", tc.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", tc.do("SET", "foo", "bar"))
	require.Equal(t, "+QUEUED\r\n", tc.do("INCR", "foo"))
	require.Equal(t, "*2\r\n+OK\r\n-ERR value is not an integer or out of range\r\n", tc.do("EXEC"))
	stats := tc.do("INFO", "commandstats")
	require.Regexp(t, `cmdstat_exec:calls=1,[^\r]*,rejected_calls=0,failed_calls=0`, stats)
	require.Regexp(t, `cmdstat_incr:calls=1,[^\r]*,rejected_calls=0,failed_calls=1`, stats)
	require.Contains(t, tc.do("INFO", "errorstats"), "errorstat_ERR:count=1")
}
