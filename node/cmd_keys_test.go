package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// keysStep is one command of a byte-exact test script and the raw reply
// it must produce.
type keysStep struct {
	args []string
	want string
}

func runKeysSteps(t *testing.T, tc *testConn, steps []keysStep) {
	t.Helper()
	for i, st := range steps {
		got := tc.do(st.args...)
		require.Equal(t, st.want, got, "step %d: %q", i, st.args)
	}
}

func TestKeysCommandsExact(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	runKeysSteps(t, tc, []keysStep{
		{[]string{"set", "a", "1"}, "+OK\r\n"},
		{[]string{"set", "b", "2"}, "+OK\r\n"},
		{[]string{"exists", "a", "a", "b", "nope"}, ":3\r\n"},
		{[]string{"del", "a", "a", "nope", "b"}, ":2\r\n"},
		{[]string{"unlink", "a"}, ":0\r\n"},
		{[]string{"type", "a"}, "+none\r\n"},
		{[]string{"set", "s", "v"}, "+OK\r\n"},
		{[]string{"type", "s"}, "+string\r\n"},
		{[]string{"touch", "s", "s", "x"}, ":2\r\n"},

		// RENAME / RENAMENX
		{[]string{"rename", "nope", "x"}, "-ERR no such key\r\n"},
		{[]string{"rename", "nope", "nope"}, "-ERR no such key\r\n"},
		{[]string{"rename", "s", "s"}, "+OK\r\n"},
		{[]string{"renamenx", "s", "s"}, ":0\r\n"},
		{[]string{"set", "t", "tv", "EX", "1000"}, "+OK\r\n"},
		{[]string{"rename", "s", "t"}, "+OK\r\n"},
		{[]string{"ttl", "t"}, ":-1\r\n"},
		{[]string{"get", "t"}, "$1\r\nv\r\n"},
		{[]string{"set", "u", "uv", "EX", "500"}, "+OK\r\n"},
		{[]string{"rename", "u", "t"}, "+OK\r\n"},
		{[]string{"ttl", "t"}, ":500\r\n"},
		{[]string{"set", "w", "wv"}, "+OK\r\n"},
		{[]string{"renamenx", "w", "t"}, ":0\r\n"},
		{[]string{"renamenx", "w", "{x}w2"}, ":1\r\n"},
		{[]string{"exists", "w", "{x}w2"}, ":1\r\n"},

		// EXPIRE family
		{[]string{"expire", "t", "10", "nx", "xx"}, "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
		{[]string{"expire", "t", "10", "gt", "lt"}, "-ERR GT and LT options at the same time are not compatible\r\n"},
		{[]string{"expire", "t", "10", "bad"}, "-ERR Unsupported option bad\r\n"},
		{[]string{"expire", "t", "ten"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"expire", "t", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command\r\n"},
		{[]string{"expireat", "t", "-9223372036854775807"}, "-ERR invalid expire time in 'expireat' command\r\n"},
		{[]string{"pexpire", "t", "9223372036854775807"}, "-ERR invalid expire time in 'pexpire' command\r\n"},
		{[]string{"ttl", "t"}, ":500\r\n"},
		{[]string{"expire", "t", "100", "nx"}, ":0\r\n"},
		{[]string{"expire", "t", "100", "gt"}, ":0\r\n"},
		{[]string{"expire", "t", "100", "lt"}, ":1\r\n"},
		{[]string{"ttl", "t"}, ":100\r\n"},
		{[]string{"expire", "t", "200", "XX", "GT"}, ":1\r\n"},
		{[]string{"ttl", "t"}, ":200\r\n"},
		{[]string{"persist", "t"}, ":1\r\n"},
		{[]string{"persist", "t"}, ":0\r\n"},
		{[]string{"expire", "t", "100", "gt"}, ":0\r\n"},
		{[]string{"expire", "t", "100", "lt"}, ":1\r\n"},
		{[]string{"expire", "t", "100", "xx"}, ":1\r\n"},
		{[]string{"pexpireat", "t", "4102444800000"}, ":1\r\n"},
		{[]string{"pexpiretime", "t"}, ":4102444800000\r\n"},
		{[]string{"expiretime", "t"}, ":4102444800\r\n"},
		{[]string{"expireat", "t", "4102444800"}, ":1\r\n"},
		{[]string{"pexpiretime", "t"}, ":4102444800000\r\n"},
		{[]string{"pexpireat", "t", "9223372036854775807"}, ":1\r\n"},
		{[]string{"expiretime", "t"}, ":9223372036854776\r\n"},
		{[]string{"ttl", "nope"}, ":-2\r\n"},
		{[]string{"pttl", "nope"}, ":-2\r\n"},
		{[]string{"expiretime", "nope"}, ":-2\r\n"},
		{[]string{"expire", "nope", "10"}, ":0\r\n"},
		{[]string{"expire", "t", "-1"}, ":1\r\n"},
		{[]string{"exists", "t"}, ":0\r\n"},
		{[]string{"set", "t", "x"}, "+OK\r\n"},
		{[]string{"pexpireat", "t", "1"}, ":1\r\n"},
		{[]string{"exists", "t"}, ":0\r\n"},
		{[]string{"set", "t", "x"}, "+OK\r\n"},
		{[]string{"expire", "t", "0"}, ":1\r\n"},
		{[]string{"exists", "t"}, ":0\r\n"},

		// OBJECT
		{[]string{"set", "n", "123"}, "+OK\r\n"},
		{[]string{"object", "encoding", "n"}, "$3\r\nint\r\n"},
		{[]string{"object", "refcount", "n"}, ":2147483647\r\n"},
		{[]string{"set", "n", "12345"}, "+OK\r\n"},
		{[]string{"object", "refcount", "n"}, ":1\r\n"},
		{[]string{"object", "encoding", "nope"}, "$-1\r\n"},
		{[]string{"object", "freq", "n"}, "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"},
		{[]string{"object", "nosuch", "n"}, "-ERR unknown subcommand 'nosuch'. Try OBJECT HELP.\r\n"},

		// SCAN / KEYS argument errors
		{[]string{"scan", "x"}, "-ERR invalid cursor\r\n"},
		{[]string{"scan", " 1"}, "-ERR invalid cursor\r\n"},
		{[]string{"scan", "18446744073709551616"}, "-ERR invalid cursor\r\n"},
		{[]string{"scan", "0", "count", "0"}, "-ERR syntax error\r\n"},
		{[]string{"scan", "0", "count", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"scan", "0", "count"}, "-ERR syntax error\r\n"},
		{[]string{"scan", "0", "foo", "bar"}, "-ERR syntax error\r\n"},

		// FLUSH*, SWAPDB, MOVE, COPY argument errors
		{[]string{"flushdb", "now"}, "-ERR syntax error\r\n"},
		{[]string{"flushall", "sync", "async"}, "-ERR syntax error\r\n"},
		{[]string{"swapdb", "x", "1"}, "-ERR invalid first DB index\r\n"},
		{[]string{"swapdb", "0", "99999999999"}, "-ERR invalid second DB index\r\n"},
		{[]string{"swapdb", "0", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"swapdb", "3", "3"}, "+OK\r\n"},
		{[]string{"move", "n", "0"}, "-ERR source and destination objects are the same\r\n"},
		{[]string{"move", "n", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"move", "n", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"move", "n", "2147483648"}, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{[]string{"copy", "n", "n"}, "-ERR source and destination objects are the same\r\n"},
		{[]string{"copy", "n", "m", "db"}, "-ERR syntax error\r\n"},
		{[]string{"copy", "n", "m", "db", "-1"}, "-ERR DB index is out of range\r\n"},
		{[]string{"copy", "n", "m", "replace", "bogus"}, "-ERR syntax error\r\n"},
		{[]string{"copy", "nope", "m"}, ":0\r\n"},
		{[]string{"copy", "n", "m"}, ":1\r\n"},
		{[]string{"copy", "n", "m"}, ":0\r\n"},
		{[]string{"copy", "n", "m", "REPLACE"}, ":1\r\n"},
		{[]string{"copy", "n", "m", "db", "1"}, ":1\r\n"},
		{[]string{"move", "n", "1"}, ":1\r\n"},
		{[]string{"move", "m", "1"}, ":0\r\n"},
		{[]string{"exists", "n"}, ":0\r\n"},
		{[]string{"select", "1"}, "+OK\r\n"},
		{[]string{"mget", "n", "m"}, "*2\r\n$5\r\n12345\r\n$5\r\n12345\r\n"},
		{[]string{"dbsize"}, ":2\r\n"},
		{[]string{"swapdb", "0", "1"}, "+OK\r\n"},
		{[]string{"dbsize"}, ":2\r\n"},
		{[]string{"flushdb", "ASYNC"}, "+OK\r\n"},
		{[]string{"dbsize"}, ":0\r\n"},
		{[]string{"randomkey"}, "$-1\r\n"},
		{[]string{"set", "only", "1"}, "+OK\r\n"},
		{[]string{"randomkey"}, "$4\r\nonly\r\n"},
		{[]string{"keys", "*"}, "*1\r\n$4\r\nonly\r\n"},
		{[]string{"keys", "o?l[xy]"}, "*1\r\n$4\r\nonly\r\n"},
		{[]string{"keys", "o?l[^y]"}, "*0\r\n"},
		{[]string{"scan", "0", "type", "STRING"}, "*2\r\n$1\r\n0\r\n*1\r\n$4\r\nonly\r\n"},
		{[]string{"scan", "0", "type", "list"}, "*2\r\n$1\r\n0\r\n*0\r\n"},
		{[]string{"flushall"}, "+OK\r\n"},
		{[]string{"select", "0"}, "+OK\r\n"},
		{[]string{"dbsize"}, ":0\r\n"},
	})

	// The LRU clock may tick between the SET and the OBJECT.
	require.Equal(t, "+OK\r\n", tc.do("set", "fresh", "v"))
	require.Contains(t, []string{":0\r\n", ":1\r\n"}, tc.do("object", "idletime", "fresh"))
	require.Equal(t, ":1\r\n", tc.do("del", "fresh"))

	// RESP3 nulls.
	require.True(t, strings.HasPrefix(tc.do("hello", "3"), "%"))
	require.Equal(t, "_\r\n", tc.do("object", "encoding", "nope"))
	require.Equal(t, "_\r\n", tc.do("randomkey"))
	require.Equal(t, "*15\r\n", strings.SplitAfter(tc.do("object", "help"), "\r\n")[0])
}

func TestObjectPolicies(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	// object.c: integers are shared unless maxmemory is set with an LRU or
	// LFU policy; OBJECT FREQ and IDLETIME each need their kind of policy.
	runKeysSteps(t, tc, []keysStep{
		{[]string{"set", "a", "1"}, "+OK\r\n"},
		{[]string{"object", "refcount", "a"}, ":2147483647\r\n"},
		{[]string{"config", "set", "maxmemory", "1073741824"}, "+OK\r\n"},
		{[]string{"config", "set", "maxmemory-policy", "allkeys-random"}, "+OK\r\n"},
		{[]string{"object", "refcount", "a"}, ":2147483647\r\n"},
		{[]string{"config", "set", "maxmemory-policy", "allkeys-lru"}, "+OK\r\n"},
		{[]string{"object", "refcount", "a"}, ":1\r\n"},
		{[]string{"object", "freq", "a"}, "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"},
		{[]string{"config", "set", "maxmemory-policy", "allkeys-lfu"}, "+OK\r\n"},
		{[]string{"set", "b", "x"}, "+OK\r\n"},
		{[]string{"object", "freq", "b"}, ":5\r\n"}, // LFU_INIT_VAL
		{[]string{"object", "idletime", "b"}, "-ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"},
		{[]string{"restore", "c", "0", "\x00\x01x\n\x00\"\x80\x86_\xbd\xe8H\xd0", "freq", "100"}, "+OK\r\n"},
		{[]string{"object", "freq", "c"}, ":100\r\n"},
		{[]string{"config", "set", "maxmemory", "0"}, "+OK\r\n"},
		{[]string{"object", "refcount", "a"}, ":2147483647\r\n"},
	})
}

func TestKeysHidesExpired(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	// Stop active expiry so that the expired key stays in the table.
	s.activeExpire.Store(false)
	for i := 0; i < 20; i++ {
		require.Equal(t, "+OK\r\n", tc.do("set", "k"+strconv.Itoa(i), "v"))
	}
	require.Equal(t, ":1\r\n", tc.do("pexpire", "k3", "1"))
	time.Sleep(20 * time.Millisecond)
	keys := parseRESPStrings(t, tc.do("keys", "*"))
	require.Len(t, keys, 19)
	require.NotContains(t, keys, "k3")
	require.NotContains(t, scanAll(t, tc), "k3")
	require.Equal(t, ":0\r\n", tc.do("exists", "k3"))
}

// TestMoveConcurrentOppositeDirections runs MOVE and COPY ... DB between
// databases 0 and 1 in both directions at once on the same keys (hence the
// same slots): the lock order of Client.LockForeignSlot must not deadlock, and no
// key may be lost or duplicated.
func TestMoveConcurrentOppositeDirections(t *testing.T) {
	s := startTestServer(t)
	keys := []string{"a", "b", "{a}c", "d"}
	setup := dialTest(t, s)
	for _, k := range keys {
		require.Equal(t, "+OK\r\n", setup.do("set", k, k))
	}
	const workers = 6
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := 0; w < workers; w++ {
		tc := dialTest(t, s)
		home := w % 2
		require.Equal(t, "+OK\r\n", tc.do("select", strconv.Itoa(home)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// testConn reports failures through t, which must not be used
			// after the test returns; the bounded loop guarantees it is not.
			for i := 0; i < 400 && time.Now().Before(deadline); i++ {
				k := keys[(w+i)%len(keys)]
				var got string
				if i%5 == 4 {
					got = tc.do("copy", k, k+"-copy", "db", strconv.Itoa(1-home), "replace")
				} else {
					got = tc.do("move", k, strconv.Itoa(1-home))
				}
				if got != ":0\r\n" && got != ":1\r\n" {
					errs <- fmt.Sprintf("unexpected reply %q", got)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("concurrent MOVEs deadlocked")
	}
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for _, k := range keys {
		n := 0
		for db := 0; db < 2; db++ {
			setup.do("select", strconv.Itoa(db))
			if setup.do("exists", k) == ":1\r\n" {
				n++
			}
		}
		require.Equal(t, 1, n, "key %q must be in exactly one database", k)
	}
}

// parseRESPStrings parses a flat array of bulk strings.
func parseRESPStrings(t *testing.T, raw string) []string {
	t.Helper()
	v, err := testharness.ParseValue(raw)
	require.NoError(t, err)
	out, ok := v.([]any)
	require.True(t, ok, "not an array: %q", raw)
	ss := make([]string, len(out))
	for i, x := range out {
		ss[i], ok = x.(string)
		require.True(t, ok, "element %d of %q", i, raw)
	}
	return ss
}

// scanAll runs SCAN (with opts) to the end and returns the sorted,
// deduplicated keys.
func scanAll(t *testing.T, tc *testConn, opts ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for i := 0; i < 100000; i++ {
		v, err := testharness.ParseValue(tc.do(append([]string{"scan", cursor}, opts...)...))
		require.NoError(t, err)
		arr, ok := v.([]any)
		require.True(t, ok, "SCAN reply %v", v)
		require.Len(t, arr, 2)
		cursor = arr[0].(string)
		for _, k := range arr[1].([]any) {
			seen[k.(string)] = true
		}
		if cursor == "0" {
			break
		}
	}
	require.Equal(t, "0", cursor, "SCAN did not finish")
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keysDiffStep is one command of the differential script. mode says how
// the replies are compared: "" byte for byte, "sorted" as sets of the
// array's elements, "scan" by running SCAN with args as options to the end
// on both servers and comparing the key sets, "approx" as integers within
// 1000 (PTTL-like answers taken a few ms apart), "skip" not at all.
type keysDiffStep struct {
	mode string
	args []string
}

func keysDiffScript() []keysDiffStep {
	x := func(args ...string) keysDiffStep { return keysDiffStep{"", args} }
	sorted := func(args ...string) keysDiffStep { return keysDiffStep{"sorted", args} }
	scan := func(opts ...string) keysDiffStep { return keysDiffStep{"scan", opts} }
	approx := func(args ...string) keysDiffStep { return keysDiffStep{"approx", args} }
	steps := []keysDiffStep{
		x("flushall"), x("select", "0"),
		x("dbsize"), x("randomkey"), sorted("keys", "*"), scan(),
		x("set", "a", "1"), x("set", "b", "2"), x("set", "{a}c", "3"),
		x("exists"), x("exists", "a", "a", "a", "zz", "b"), x("del"), x("del", "zz", "a", "a"),
		x("unlink", "b", "{a}c", "zz"), x("dbsize"),
		x("type"), x("type", "a", "b"), x("type", "zz"), x("set", "s", "v"), x("type", "s"),
		x("touch"), x("touch", "s", "zz", "s"),

		// RENAME / RENAMENX, TTL transfer.
		x("rename", "zz", "s"), x("rename", "zz", "zz"), x("renamenx", "zz", "q"),
		x("rename", "s", "s"), x("renamenx", "s", "s"), x("rename", "s"),
		x("set", "t", "tv", "EX", "1000"), x("rename", "s", "t"), x("ttl", "t"), x("get", "t"),
		x("set", "u", "uv", "PX", "500000"), x("rename", "u", "t"), x("ttl", "t"), approx("pttl", "t"),
		x("set", "w", "wv"), x("renamenx", "w", "t"), x("renamenx", "w", "w2"), x("get", "w2"),
		x("rename", "t", "w2"), x("ttl", "w2"), x("exists", "t", "w", "w2"),

		// EXPIRE family.
		x("expire", "w2"), x("expire", "w2", "10", "nx", "xx"), x("expire", "w2", "10", "nx", "gt"),
		x("expire", "w2", "10", "nx", "lt"), x("expire", "w2", "10", "gt", "lt"), x("expire", "w2", "10", "xx", "gt", "lt"),
		x("expire", "w2", "10", "nx\x00junk"), x("expire", "w2", "10", "bogus"), x("expire", "w2", "10", "bo\ngus"),
		x("expire", "w2", "1.5"), x("expire", "w2", ""), x("expire", "w2", " 10"), x("expire", "w2", "+10"),
		x("expire", "w2", "9223372036854775807"), x("expire", "w2", "9223372036854775"), x("expire", "w2", "9223372036854776"),
		x("expire", "w2", "-9223372036854775"), x("expire", "w2", "-9223372036854776"),
		x("expireat", "w2", "9223372036854776"), x("expireat", "w2", "-9223372036854776"),
		x("pexpire", "w2", "9223372036854775807"), x("pexpire", "zz", "9223372036854775807"),
		x("pexpireat", "w2", "9223372036854775807"), x("ttl", "w2"), x("expiretime", "w2"), x("pexpiretime", "w2"),
		x("persist", "w2"), x("ttl", "w2"), x("pttl", "w2"), x("expiretime", "w2"), x("persist", "w2"),
		x("expire", "w2", "100", "xx"), x("expire", "w2", "100", "gt"), x("expire", "w2", "100", "lt"), x("ttl", "w2"),
		x("expire", "w2", "100", "nx"), x("expire", "w2", "50", "gt"), x("expire", "w2", "150", "GT"), x("ttl", "w2"),
		x("expire", "w2", "200", "lt"), x("expire", "w2", "20", "LT", "xx"), x("ttl", "w2"), approx("pttl", "w2"),
		x("expireat", "w2", "4102444800"), x("expiretime", "w2"), x("pexpiretime", "w2"),
		x("pexpireat", "w2", "4102444800123"), x("expiretime", "w2"), x("pexpiretime", "w2"),
		x("expire", "zz", "100"), x("ttl", "zz"), x("persist", "zz"), x("expiretime", "zz"), x("pexpiretime", "zz"),
		x("set", "e", "1"), x("expire", "e", "-5"), x("exists", "e"), x("set", "e", "1"), x("expireat", "e", "1"),
		x("exists", "e"), x("set", "e", "1"), x("pexpire", "e", "0"), x("exists", "e"),
		x("set", "e", "1"), x("expire", "e", "-5", "nx"), x("exists", "e"),
		x("set", "e", "1", "EX", "100"), x("expire", "e", "-5", "gt"), x("expire", "e", "-5", "lt"), x("exists", "e"),
		x("ttl"), x("pttl", "a", "b"), x("persist"),

		// OBJECT.
		x("set", "n", "123"), x("set", "big", "12345"), x("set", "neg", "-1"), x("set", "lead", "0123"),
		x("set", "str", "hello"), x("set", "long", strings.Repeat("x", 45)), x("set", "e44", strings.Repeat("x", 44)),
		x("object", "encoding", "n"), x("object", "encoding", "big"), x("object", "encoding", "lead"),
		x("object", "encoding", "str"), x("object", "encoding", "long"), x("object", "encoding", "e44"),
		x("object", "encoding", "zz"), x("object", "refcount", "n"), x("object", "refcount", "big"),
		x("object", "refcount", "neg"), x("object", "refcount", "str"), x("object", "refcount", "zz"),
		x("set", "n9999", "9999"), x("set", "n10000", "10000"), x("object", "refcount", "n9999"), x("object", "refcount", "n10000"),
		x("append", "str", "!"), x("object", "encoding", "str"), approx("object", "idletime", "n"), x("object", "idletime", "zz"),
		x("object", "freq", "n"), x("object", "freq", "zz"), x("object", "help"), x("object", "HELP"),
		x("object"), x("object", "encoding"), x("object", "encoding", "a", "b"), x("object", "bogus", "n"), x("object", "help", "x"),

		// COPY and MOVE, across databases.
		x("copy", "n", "n"), x("copy", "n", "m", "db"), x("copy", "n", "m", "db", "x"), x("copy", "n", "m", "db", "99999999999"),
		x("copy", "n", "m", "db", "16"), x("copy", "n", "m", "db", "-1"), x("copy", "n", "m", "foo"), x("copy", "zz", "m"),
		x("copy", "n", "n", "db", "0"), x("copy", "n", "n", "db", "1"), x("copy", "n", "m"), x("copy", "n", "m"),
		x("copy", "big", "m", "replace"), x("get", "m"), x("copy", "str", "m2", "db", "1", "replace"),
		x("set", "vol", "x", "EX", "300"), x("copy", "vol", "vol2"), x("ttl", "vol2"), x("copy", "vol", "vol", "db", "2"),
		x("copy", "str", "strcopy"), x("object", "encoding", "strcopy"),
		x("move", "zz", "1"), x("move", "n", "0"), x("move", "n", "16"), x("move", "n", "-1"), x("move", "n", "x"),
		x("move", "n", "2147483648"), x("move", "n", "1"), x("move", "n", "1"), x("move", "vol", "1"),
		x("select", "1"), sorted("keys", "*"), x("ttl", "vol"), x("get", "m2"), x("move", "n", "0"), x("set", "n", "again"),
		x("move", "n", "0"), x("get", "n"), x("select", "2"), x("ttl", "vol"), x("dbsize"), x("select", "0"),

		// SWAPDB.
		x("swapdb", "0"), x("swapdb", "x", "1"), x("swapdb", "0", "x"), x("swapdb", "1", "99999999999"),
		x("swapdb", "-1", "0"), x("swapdb", "0", "16"), x("swapdb", "0", "0"), x("dbsize"),
		x("swapdb", "0", "1"), x("dbsize"), sorted("keys", "*"), x("swapdb", "1", "0"), x("dbsize"),

		// KEYS and SCAN.
		x("keys"), x("keys", "a", "b"),
		sorted("keys", "*"), sorted("keys", "**"), sorted("keys", "?"), sorted("keys", "*e*"), sorted("keys", "[nv]*"),
		sorted("keys", "[^nv]*"), sorted("keys", "n[0-9]*"), sorted("keys", "*[\\"), sorted("keys", "[a-"),
		scan(), scan("count", "1"), scan("count", "3", "match", "*e*"), scan("match", "n*", "count", "1000"),
		scan("type", "string"), scan("type", "STRING", "match", "[lv]*"), scan("type", "list"), scan("type", "none"),
		scan("match", "*"), scan("count", "9223372036854775807"),
		x("scan"), x("scan", "x"), x("scan", "-"), x("scan", "+"), x("scan", " 0"), x("scan", "0 "), x("scan", "1e3"),
		x("scan", "18446744073709551616"), x("scan", "0", "count"), x("scan", "0", "count", "0"),
		x("scan", "0", "count", "-1"), x("scan", "0", "count", "x"), x("scan", "0", "match"), x("scan", "0", "type"),
		x("scan", "0", "bogus", "x"), x("scan", "0", "count", "9223372036854775808"),

		// FLUSHDB / FLUSHALL / DBSIZE / RANDOMKEY.
		x("flushdb", "x"), x("flushdb", "sync", "async"), x("flushall", "now"), x("flushdb", "async", "x"),
		x("select", "1"), x("flushdb", "SYNC"), x("dbsize"), x("randomkey"), x("set", "one", "1"), x("randomkey"),
		x("select", "0"), x("flushall", "ASYNC"), x("dbsize"), x("randomkey"), x("select", "1"), x("dbsize"),
		x("select", "0"),
	}

	// Random glob patterns against keys full of glob metacharacters.
	specials := []string{"hello", "hallo", "h*llo", "h?llo", "h[a]llo", `h\llo`, "a-b", "]", "^x", "[", `\`, "-", "x\xffy", "\x80", "abc", "ab", "a", "aaa", "*", ""}
	for _, k := range specials {
		steps = append(steps, x("set", k, "1"))
	}
	steps = append(steps, sorted("keys", "*"), sorted("keys", "**"), sorted("keys", ""), scan("match", "**"), scan("match", "*"))

	// A few hundred keys over many slots, some volatile, some with hash tags.
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("bulk:%d", i)
		if i%3 == 0 {
			k = fmt.Sprintf("{tag}bulk:%d", i)
		}
		steps = append(steps, x("set", k, strconv.Itoa(i)))
		if i%7 == 0 {
			steps = append(steps, x("expire", k, "1000"))
		}
	}
	steps = append(steps, x("dbsize"), scan(), scan("count", "1"), scan("count", "7", "match", "{tag}*"),
		scan("count", "1000", "match", "bulk:1*"), sorted("keys", "bulk:2?"), sorted("keys", "{tag}bulk:[1-3]*"),
		x("del", "bulk:1", "bulk:2", "{tag}bulk:3", "bulk:4", "bulk:1"), x("exists", "bulk:1", "bulk:5", "{tag}bulk:6", "bulk:5"),
		x("touch", "bulk:5", "bulk:7", "nope"), x("unlink", "bulk:5", "{tag}bulk:6", "{tag}bulk:9"), x("dbsize"))

	// RESP3 replies (HELLO's own reply names the server: not compared).
	steps = append(steps, keysDiffStep{"skip", []string{"hello", "3"}},
		x("object", "encoding", "nope"), x("ttl", "nope"), x("type", "nope"),
		sorted("keys", "bulk:1?"), x("scan", "0", "match", "nomatch*", "count", "1000000"),
		x("object", "help"), x("flushdb"), x("randomkey"), x("keys", "*"), x("scan", "0"),
		keysDiffStep{"skip", []string{"hello", "2"}})
	rng := rand.New(rand.NewPCG(7, 11))
	const alpha = "ah*?[]^-\\lo\xff"
	for i := 0; i < 60; i++ {
		p := make([]byte, 1+rng.IntN(6))
		for j := range p {
			p[j] = alpha[rng.IntN(len(alpha))]
		}
		steps = append(steps, sorted("keys", string(p)))
		if i%6 == 0 {
			steps = append(steps, scan("match", string(p), "count", "2"))
		}
	}
	return steps
}

// TestKeysDifferential runs keysDiffScript against shoal and a live Redis
// 7.0 and compares the replies.
func TestKeysDifferential(t *testing.T) {
	redisAddr := metaStartRedis(t)
	s := startTestServer(t)
	shoal := dialTest(t, s)
	redis := dialTestAddr(t, redisAddr)
	steps := keysDiffScript()
	for i, st := range steps {
		what := fmt.Sprintf("step %d: %q", i, st.args)
		switch st.mode {
		case "scan":
			require.Equal(t, scanAll(t, redis, st.args...), scanAll(t, shoal, st.args...), what)
		case "sorted":
			want, got := parseRESPStrings(t, redis.do(st.args...)), parseRESPStrings(t, shoal.do(st.args...))
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, what)
		case "approx":
			want, got := redis.do(st.args...), shoal.do(st.args...)
			wn, err1 := strconv.ParseInt(strings.Trim(want, ":\r\n"), 10, 64)
			gn, err2 := strconv.ParseInt(strings.Trim(got, ":\r\n"), 10, 64)
			require.NoError(t, err1, what)
			require.NoError(t, err2, what)
			require.InDelta(t, wn, gn, 1000, what)
		case "skip":
			redis.do(st.args...)
			shoal.do(st.args...)
		default:
			require.Equal(t, redis.do(st.args...), shoal.do(st.args...), what)
		}
	}
	t.Logf("%d steps compared", len(steps))
}
