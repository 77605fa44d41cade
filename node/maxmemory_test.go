package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func infoFieldInt(t *testing.T, tc *testConn, section, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoField(t, tc, section, name), 10, 64)
	require.NoError(t, err, name)
	return n
}

// setMaxmemoryAbove sets maxmemory to the current used memory plus extra
// bytes, as Redis's maxmemory tests do.
func setMaxmemoryAbove(t *testing.T, tc *testConn, extra int64, policy string) int64 {
	t.Helper()
	limit := infoFieldInt(t, tc, "memory", "used_memory") + extra
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory-policy", policy))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", strconv.FormatInt(limit, 10)))
	return limit
}

func TestMaxmemoryNoevictionRefusesWrites(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	limit := setMaxmemoryAbove(t, tc, 64<<10, "noeviction")
	value := strings.Repeat("v", 1000)
	refusedAt := -1
	for i := 0; i < 1000; i++ {
		if r := tc.do("set", "k"+strconv.Itoa(i), value); r != "+OK\r\n" {
			require.Equal(t, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", r)
			refusedAt = i
			break
		}
	}
	require.Greater(t, refusedAt, 10, "writes succeed until the limit")
	used := infoFieldInt(t, tc, "memory", "used_memory")
	require.Greater(t, used, limit)
	require.Less(t, used, limit+2048, "the refused write stored nothing")
	dbsize := tc.do("dbsize")
	require.Equal(t, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", tc.do("set", "again", "x"))
	require.Equal(t, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", tc.do("append", "k0", "x"))
	require.Equal(t, dbsize, tc.do("dbsize"), "nothing written")
	require.Equal(t, "$1000\r\n"+value+"\r\n", tc.do("get", "k0"), "reads still work")
	require.Equal(t, ":1\r\n", tc.do("del", "k0"), "DEL is not denyoom")
	require.Zero(t, infoFieldInt(t, tc, "stats", "evicted_keys"))

	// MULTI: a command queued while out of memory is refused and EXEC
	// aborts; EXEC of a queue that holds a denyoom command is refused too.
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "1"))
	require.Equal(t, "+OK\r\n", tc.do("multi"))
	require.Equal(t, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", tc.do("get", "small"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", tc.do("exec"))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", tc.do("multi"))
	require.Equal(t, "+QUEUED\r\n", tc.do("set", "small", "1"))
	require.Equal(t, "+QUEUED\r\n", tc.do("config", "set", "maxmemory", "1"))
	require.Equal(t, "+QUEUED\r\n", tc.do("incr", "small"))
	require.Equal(t, "*3\r\n+OK\r\n+OK\r\n:2\r\n", tc.do("exec"), "OOM is judged when EXEC starts")
	other := dialTest(t, s)
	require.Equal(t, "+OK\r\n", other.do("config", "set", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", tc.do("multi"))
	require.Equal(t, "+QUEUED\r\n", tc.do("set", "small", "9"))
	require.Equal(t, "+OK\r\n", other.do("config", "set", "maxmemory", "1"))
	require.Equal(t, "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n", tc.do("exec"),
		"EXEC of a queue holding a denyoom command is refused")
	require.Equal(t, "$1\r\n2\r\n", other.do("get", "small"), "the refused EXEC wrote nothing")
}

func TestMaxmemoryScripts(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "+OK\r\n", tc.do("set", "x", "123"))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "1"))
	oom := "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	// A script without flags runs; its first denyoom command fails.
	require.True(t, strings.HasPrefix(tc.do("eval", "redis.call('set','x',1) return 1", "1", "x"), strings.TrimSuffix(oom, "\r\n")+" script: "))
	require.Equal(t, "$3\r\n123\r\n", tc.do("eval", "return redis.call('get','x')", "1", "x"))
	// Declared flags: the script is denyoom unless allow-oom or no-writes.
	require.Equal(t, oom, tc.do("eval", "#!lua flags=\nreturn 1", "0"))
	require.Equal(t, ":1\r\n", tc.do("eval", "#!lua flags=allow-oom\nredis.call('set','x',1)\nreturn 1", "1", "x"))
	require.Equal(t, ":1\r\n", tc.do("eval", "#!lua flags=no-writes\nredis.call('get','x')\nreturn 1", "0"))
	// pcall sees the refusal as an error table.
	require.Equal(t, ":1\r\n", tc.do("eval",
		"local t = redis.pcall('set','x','y') if t['err'] == \"OOM command not allowed when used memory > 'maxmemory'.\" then return 1 end return 0", "1", "x"))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "0"))
	require.Equal(t, "$1\r\n1\r\n", tc.do("get", "x"), "only the allow-oom script wrote")
}

func TestMaxmemoryEvictsUnderLimit(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			s := startTestServer(t)
			tc := dialTest(t, s)
			limit := setMaxmemoryAbove(t, tc, 100<<10, policy)
			volatile := strings.HasPrefix(policy, "volatile-")
			n := 0
			for ; n < 4000; n++ {
				k := "key:" + strconv.Itoa(n)
				var r string
				if volatile && n%2 == 1 {
					r = tc.do("setex", k, "10000", "x")
				} else {
					r = tc.do("set", k, "x")
				}
				if r != "+OK\r\n" {
					require.True(t, volatile, "%s refused a write: %q", policy, r)
					break
				}
			}
			used := infoFieldInt(t, tc, "memory", "used_memory")
			require.Less(t, used, limit+4096, "%s: used memory stays under the limit", policy)
			evicted := infoFieldInt(t, tc, "stats", "evicted_keys")
			require.Greater(t, evicted, int64(100))
			if volatile {
				// Only keys with a TTL were evicted: every even key is there.
				for i := 0; i < n; i += 2 {
					require.Equal(t, ":1\r\n", tc.do("exists", "key:"+strconv.Itoa(i)), "%s evicted a key without TTL", policy)
				}
			}
		})
	}
}

func TestMaxmemoryLoweredEvictsInBackground(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for i := 0; i < 100; i++ {
		require.Equal(t, "+OK\r\n", tc.do("set", "k"+strconv.Itoa(i), "v"))
	}
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory-policy", "allkeys-lru"))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "1"))
	// Nobody writes: CONFIG SET started the background eviction.
	deadline := time.Now().Add(10 * time.Second)
	for s.ks.DB(0).Size() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Zero(t, s.ks.DB(0).Size())
	require.EqualValues(t, 100, infoFieldInt(t, tc, "stats", "evicted_keys"))
	require.Equal(t, "+OK\r\n", tc.do("config", "set", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", tc.do("config", "resetstat"))
	require.Zero(t, infoFieldInt(t, tc, "stats", "evicted_keys"))
}

// used_memory follows the data both ways, and MEMORY USAGE agrees with the
// charges it is made of.
func TestUsedMemoryFollowsData(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Zero(t, infoFieldInt(t, tc, "memory", "used_memory_dataset"))
	for i := 0; i < 200; i++ {
		require.Equal(t, ":"+strconv.Itoa(i+1)+"\r\n", tc.do("rpush", "list", strings.Repeat("e", 100)))
		require.Equal(t, ":1\r\n", tc.do("hset", "h"+strconv.Itoa(i%10), "f"+strconv.Itoa(i), strings.Repeat("v", 50)))
	}
	grown := infoFieldInt(t, tc, "memory", "used_memory_dataset")
	require.Greater(t, grown, int64(200*150), "collections changed in place are counted")
	require.Less(t, grown, int64(200*150*3))
	usage, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(tc.do("memory", "usage", "list", "samples", "0"), ":")), 10, 64)
	require.NoError(t, err)
	require.Greater(t, usage, int64(200*100))
	require.Equal(t, "+OK\r\n", tc.do("flushall"))
	require.Zero(t, infoFieldInt(t, tc, "memory", "used_memory_dataset"), "FLUSHALL gives everything back")
}

// A plain SET is not remeasured after it runs (its handler says the store
// charged it exactly): over a string that APPEND made mutable, over a
// collection and over nothing, used_memory_dataset ends where a SET on an
// empty keyspace puts it.
func TestPlainSetChargedWithoutRemeasure(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	value := strings.Repeat("v", 100)
	require.Equal(t, "+OK\r\n", tc.do("set", "k", value))
	fresh := infoFieldInt(t, tc, "memory", "used_memory_dataset")
	require.Positive(t, fresh)
	for _, before := range [][]string{
		{"append", "k", strings.Repeat("a", 3000)},
		{"rpush", "k", value, value, value},
		{"hset", "k", "f", strings.Repeat("h", 5000)},
	} {
		require.Equal(t, "+OK\r\n", tc.do("flushall"))
		require.True(t, strings.HasPrefix(tc.do(before...), ":"), "%v", before)
		require.Greater(t, infoFieldInt(t, tc, "memory", "used_memory_dataset"), fresh, "%v is charged", before)
		require.Equal(t, "+OK\r\n", tc.do("set", "k", value))
		require.Equal(t, fresh, infoFieldInt(t, tc, "memory", "used_memory_dataset"), "SET after %v", before)
	}
}

// Under noeviction, a pipelining client near the limit sees its writes
// refused from the first refusal on: what the server holds for the client
// must not drop while its batch runs (resp.RequestReader.MemoryHeld counts
// the batch being run), or writes would be refused and accepted in turn.
func TestMaxmemoryNoevictionRefusalIsSteadyInAPipeline(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	setMaxmemoryAbove(t, tc, 256<<10, "noeviction")
	value := strings.Repeat("v", 300)
	refused := false
	for batch := 0; batch < 100; batch++ {
		var pipe []byte
		for i := 0; i < 100; i++ {
			pipe = append(pipe, encodeCommand("SET", "k"+strconv.Itoa(batch*100+i), value)...)
		}
		_ = tc.c.SetWriteDeadline(time.Now().Add(testIOTimeout))
		_, err := tc.c.Write(pipe)
		require.NoError(t, err)
		for i := 0; i < 100; i++ {
			r := tc.read()
			switch {
			case r == "+OK\r\n":
				require.False(t, refused, "batch %d command %d accepted after a refusal", batch, i)
			case r == "-"+oomError+"\r\n":
				refused = true
			default:
				t.Fatalf("reply %q", r)
			}
		}
		if refused {
			break
		}
	}
	require.True(t, refused, "the limit was reached")
}

// INCR and DECRBY store a compact string, charged exactly (they are not
// remeasured after they run): over a string APPEND made mutable,
// used_memory_dataset ends where the same INCR over a plain string puts it.
func TestIncrChargedWithoutRemeasure(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "+OK\r\n", tc.do("set", "k", "41"))
	require.Equal(t, ":42\r\n", tc.do("incr", "k"))
	fresh := infoFieldInt(t, tc, "memory", "used_memory_dataset")
	require.Positive(t, fresh)
	require.Equal(t, "+OK\r\n", tc.do("flushall"))
	require.Equal(t, ":1\r\n", tc.do("append", "k", "4"))
	require.Equal(t, ":2\r\n", tc.do("append", "k", "1"))
	require.Equal(t, "$3\r\nraw\r\n", tc.do("object", "encoding", "k"))
	require.Equal(t, ":42\r\n", tc.do("incrby", "k", "1"))
	require.Equal(t, fresh, infoFieldInt(t, tc, "memory", "used_memory_dataset"), "INCR over a mutable string")
	require.Equal(t, ":41\r\n", tc.do("decrby", "k", "1"))
	require.Equal(t, ":42\r\n", tc.do("incr", "k"))
	require.Equal(t, fresh, infoFieldInt(t, tc, "memory", "used_memory_dataset"))
}
