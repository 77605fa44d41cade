package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// The hash and set commands are checked like the string commands: tables
// of requests with their exact replies (run against shoal and, when one is
// installed, against a live redis-server so the tables stay honest),
// encoding-transition scripts and random command streams whose replies must
// match Redis's (order-insensitively where Redis's own order depends on its
// hash function, by shape where the reply is random), and statistical checks
// of the random commands.

// hsCase is one request and its exact raw reply.
type hsCase struct {
	args []string
	want string
}

func hc(want string, args ...string) hsCase { return hsCase{args: args, want: want} }

// hsArr builds a raw RESP2 array of bulk strings.
func hsArr(elems ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(elems))
	for _, e := range elems {
		b.WriteString(bulk(e))
	}
	return b.String()
}

const (
	hsWrong    = strWrong
	hsNull     = strNull
	hsEmptyArr = "*0\r\n"
	hsZero     = ":0\r\n"
	hsOne      = ":1\r\n"
)

func hsArity(cmd string) string {
	return "-ERR wrong number of arguments for '" + cmd + "' command\r\n"
}

// hashReplyCases run in order on one RESP2 connection to an empty database;
// "str" holds a string. Listpack hashes keep insertion order, so even
// HGETALL replies are exact.
var hashReplyCases = []hsCase{
	hc(strOK, "SET", "str", "x"),
	// HSET / HMSET / HSETNX
	hc(":2\r\n", "HSET", "h", "a", "1", "b", "2"),
	hc(":1\r\n", "HSET", "h", "c", "3", "a", "10"),
	hc(hsArity("hset"), "HSET", "h", "a", "1", "b"),
	hc(hsArity("hset"), "HSET", "h", "a"),
	hc(hsArity("hmset"), "HMSET", "h", "a", "1", "b"),
	hc(hsArity("hset"), "hset", "h", "a", "1", "b"),
	hc(strOK, "HMSET", "h", "d", "4"),
	hc(hsWrong, "HSET", "str", "a", "1"),
	hc(hsWrong, "HMSET", "str", "a", "1"),
	hc(hsZero, "HSETNX", "h", "a", "x"),
	hc(hsOne, "HSETNX", "h", "e", "5"),
	hc(hsOne, "HSETNX", "newh", "f", "v"),
	hc(hsWrong, "HSETNX", "str", "f", "v"),
	// HGET / HMGET / HEXISTS / HSTRLEN / HLEN
	hc(bulk("10"), "HGET", "h", "a"),
	hc(hsNull, "HGET", "h", "zz"),
	hc(hsNull, "HGET", "nokey", "a"),
	hc(hsWrong, "HGET", "str", "a"),
	hc("*3\r\n$2\r\n10\r\n$-1\r\n$1\r\n2\r\n", "HMGET", "h", "a", "zz", "b"),
	hc("*2\r\n$-1\r\n$-1\r\n", "HMGET", "nokey", "a", "b"),
	hc(hsWrong, "HMGET", "str", "a"),
	hc(hsOne, "HEXISTS", "h", "a"),
	hc(hsZero, "HEXISTS", "h", "zz"),
	hc(hsZero, "HEXISTS", "nokey", "a"),
	hc(hsWrong, "HEXISTS", "str", "a"),
	hc(":2\r\n", "HSTRLEN", "h", "a"),
	hc(hsZero, "HSTRLEN", "h", "zz"),
	hc(hsZero, "HSTRLEN", "nokey", "zz"),
	hc(hsWrong, "HSTRLEN", "str", "a"),
	hc(":5\r\n", "HLEN", "h"),
	hc(hsZero, "HLEN", "nokey"),
	hc(hsWrong, "HLEN", "str"),
	// HKEYS / HVALS / HGETALL (insertion order in a listpack)
	hc(hsArr("a", "b", "c", "d", "e"), "HKEYS", "h"),
	hc(hsArr("10", "2", "3", "4", "5"), "HVALS", "h"),
	hc(hsArr("a", "10", "b", "2", "c", "3", "d", "4", "e", "5"), "HGETALL", "h"),
	hc(hsEmptyArr, "HGETALL", "nokey"),
	hc(hsEmptyArr, "HKEYS", "nokey"),
	hc(hsWrong, "HGETALL", "str"),
	hc(hsWrong, "HKEYS", "str"),
	hc(hsWrong, "HVALS", "str"),
	// HDEL: the emptied hash disappears.
	hc(hsZero, "HDEL", "h", "zz"),
	hc(":2\r\n", "HDEL", "h", "a", "zz", "b", "a"),
	hc(hsArr("c", "d", "e"), "HKEYS", "h"),
	hc(hsZero, "HDEL", "nokey", "a"),
	hc(hsWrong, "HDEL", "str", "a"),
	hc(hsOne, "HDEL", "newh", "f", "f"),
	hc(hsZero, "EXISTS", "newh"),
	// HINCRBY
	hc(":5\r\n", "HINCRBY", "hi", "n", "5"),
	hc(":-3\r\n", "HINCRBY", "hi", "n", "-8"),
	hc(strNotInt, "HINCRBY", "hi", "n", "x"),
	hc(strNotInt, "HINCRBY", "hi", "n", "1.5"),
	hc(strNotInt, "HINCRBY", "hi", "n", "9223372036854775808"),
	hc(hsWrong, "HINCRBY", "str", "n", "1"),
	hc(strNotInt, "HINCRBY", "str", "n", "x"),
	hc(hsOne, "HSET", "hi", "s", " 11"),
	hc("-ERR hash value is not an integer\r\n", "HINCRBY", "hi", "s", "1"),
	hc(hsOne, "HSET", "hi", "big", "9223372036854775807"),
	hc(strOverflow, "HINCRBY", "hi", "big", "1"),
	hc(":9223372036854775806\r\n", "HINCRBY", "hi", "big", "-1"),
	hc(hsOne, "HSET", "hi", "small", "-9223372036854775808"),
	hc(strOverflow, "HINCRBY", "hi", "small", "-1"),
	hc(":-1\r\n", "HINCRBY", "hi", "small", "9223372036854775807"),
	hc(hsZero, "EXISTS", "hnone"),
	hc(strNotInt, "HINCRBY", "hnone", "n", "x"),
	hc(hsZero, "EXISTS", "hnone"),
	// HINCRBYFLOAT
	hc(bulk("1.23"), "HINCRBYFLOAT", "hf", "f", "1.23"),
	hc(bulk("2"), "HINCRBYFLOAT", "hf", "f", "0.77"),
	hc(bulk("1.9"), "HINCRBYFLOAT", "hf", "f", "-0.1"),
	hc(bulk("5001.89999999999999991"), "HINCRBYFLOAT", "hf", "f", "5e3"),
	hc(strNotFloat, "HINCRBYFLOAT", "hf", "f", "x"),
	hc(strNotFloat, "HINCRBYFLOAT", "hf", "f", ""),
	hc("-ERR value is NaN or Infinity\r\n", "HINCRBYFLOAT", "hf", "f", "inf"),
	hc("-ERR value is NaN or Infinity\r\n", "HINCRBYFLOAT", "hnone", "f", "-inf"),
	hc(hsZero, "EXISTS", "hnone"),
	hc(hsOne, "HSET", "hf", "s", "abc"),
	hc("-ERR hash value is not a float\r\n", "HINCRBYFLOAT", "hf", "s", "1"),
	hc(hsOne, "HSET", "hf", "nul", "1\x002"),
	hc("-ERR hash value is not a float\r\n", "HINCRBYFLOAT", "hf", "nul", "1"),
	hc(hsOne, "HSET", "hf", "huge", "1e4932"),
	hc("-ERR increment would produce NaN or Infinity\r\n", "HINCRBYFLOAT", "hf", "huge", "1e4932"),
	hc(hsWrong, "HINCRBYFLOAT", "str", "f", "1"),
	hc(strNotFloat, "HINCRBYFLOAT", "str", "f", "x"),
	hc(bulk("3"), "HINCRBYFLOAT", "hf", "int", "3"),
	hc(bulk("3.5"), "HINCRBYFLOAT", "hf", "int", "0.5"),
	// HRANDFIELD argument handling and empty / missing replies.
	hc(hsNull, "HRANDFIELD", "nokey"),
	hc(hsEmptyArr, "HRANDFIELD", "nokey", "5"),
	hc(hsEmptyArr, "HRANDFIELD", "nokey", "-5", "WITHVALUES"),
	hc(hsEmptyArr, "HRANDFIELD", "h", "0"),
	hc(hsEmptyArr, "HRANDFIELD", "h", "0", "withvalues"),
	hc(strNotInt, "HRANDFIELD", "h", "x"),
	hc(strNotInt, "HRANDFIELD", "nokey", "x"),
	hc(strSyntax, "HRANDFIELD", "h", "1", "x"),
	hc(strSyntax, "HRANDFIELD", "h", "1", "withvalues", "x"),
	hc("-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n",
		"HRANDFIELD", "h", "-9223372036854775808"),
	hc("-ERR value is out of range\r\n", "HRANDFIELD", "h", "-9223372036854770000", "withvalues"),
	hc("-ERR value is out of range\r\n", "HRANDFIELD", "h", "4611686018427387904", "withvalues"),
	hc(hsWrong, "HRANDFIELD", "str"),
	hc(hsWrong, "HRANDFIELD", "str", "1"),
	hc(hsArr("c", "d", "e"), "HRANDFIELD", "h", "3"),
	hc(hsArr("c", "3", "d", "4", "e", "5"), "HRANDFIELD", "h", "10", "WITHVALUES"),
	hc(hsOne, "HSET", "one", "f", "v"),
	hc(bulk("f"), "HRANDFIELD", "one"),
	hc(hsArr("f", "f", "f"), "HRANDFIELD", "one", "-3"),
	hc(hsArr("f", "v", "f", "v"), "HRANDFIELD", "one", "-2", "WITHVALUES"),
	hc(hsArr("f"), "HRANDFIELD", "one", "1"),
	// HSCAN on a listpack: everything at once, cursor 0.
	hc("*2\r\n$1\r\n0\r\n"+hsArr("c", "3", "d", "4", "e", "5"), "HSCAN", "h", "0"),
	hc("*2\r\n$1\r\n0\r\n"+hsArr("d", "4"), "HSCAN", "h", "0", "MATCH", "d*"),
	hc("*2\r\n$1\r\n0\r\n"+hsArr("c", "3", "d", "4", "e", "5"), "HSCAN", "h", "123", "COUNT", "1", "MATCH", "*"),
	hc("*2\r\n$1\r\n0\r\n*0\r\n", "HSCAN", "nokey", "0"),
	hc("*2\r\n$1\r\n0\r\n*0\r\n", "HSCAN", "nokey", "0", "COUNT", "x"),
	hc("-ERR invalid cursor\r\n", "HSCAN", "h", "x"),
	hc("-ERR invalid cursor\r\n", "HSCAN", "nokey", "-x"),
	hc(strNotInt, "HSCAN", "h", "0", "COUNT", "x"),
	hc(strSyntax, "HSCAN", "h", "0", "COUNT", "0"),
	hc(strSyntax, "HSCAN", "h", "0", "TYPE", "string"),
	hc(strSyntax, "HSCAN", "h", "0", "MATCH"),
	hc(hsWrong, "HSCAN", "str", "0"),
	// Encodings.
	hc(bulk("listpack"), "OBJECT", "ENCODING", "h"),
	hc(hsOne, "HSET", "h", "long", strings.Repeat("x", 65)),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "h"),
	hc(hsOne, "HSET", "h2", strings.Repeat("k", 64), strings.Repeat("v", 64)),
	hc(bulk("listpack"), "OBJECT", "ENCODING", "h2"),
	hc(hsOne, "HSETNX", "h3", strings.Repeat("k", 65), "v"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "h3"),
	hc(":1\r\n", "HINCRBY", "h4", strings.Repeat("k", 65), "1"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "h4"),
	hc("+hash\r\n", "TYPE", "h"),
}

func hsRunCases(t *testing.T, tc *testConn, cases []hsCase) {
	t.Helper()
	for i, cs := range cases {
		got := tc.do(cs.args...)
		if got != cs.want {
			t.Errorf("case %d %q:\n got  %q\n want %q", i, cs.args, got, cs.want)
		}
	}
}

func TestHashReplies(t *testing.T) {
	s := startTestServer(t)
	hsRunCases(t, dialTest(t, s), hashReplyCases)
}

func TestHashRepliesMatchRedis(t *testing.T) {
	tc := dialTestAddr(t, startRealRedis(t))
	hsRunCases(t, tc, hashReplyCases)
}

// hashRESP3Cases run on a RESP3 connection.
var hashRESP3Cases = []hsCase{
	hc(":2\r\n", "HSET", "h", "a", "1", "b", "2"),
	hc("%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "HGETALL", "h"),
	hc("%0\r\n", "HGETALL", "nokey"),
	hc("*0\r\n", "HKEYS", "nokey"),
	hc("_\r\n", "HGET", "h", "zz"),
	hc("*2\r\n$1\r\n1\r\n_\r\n", "HMGET", "h", "a", "zz"),
	hc("_\r\n", "HRANDFIELD", "nokey"),
	hc("*0\r\n", "HRANDFIELD", "nokey", "3", "WITHVALUES"),
	hc("*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", "HRANDFIELD", "h", "5", "WITHVALUES"),
	hc("*2\r\n$1\r\na\r\n$1\r\nb\r\n", "HRANDFIELD", "h", "5"),
	hc("*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "HSCAN", "h", "0"),
}

func hsHello3(t *testing.T, tc *testConn) {
	t.Helper()
	if r := tc.do("HELLO", "3"); !strings.HasPrefix(r, "%") {
		t.Fatalf("HELLO 3: %q", r)
	}
}

func TestHashRESP3(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	hsHello3(t, tc)
	hsRunCases(t, tc, hashRESP3Cases)
}

func TestHashRESP3MatchesRedis(t *testing.T) {
	tc := dialTestAddr(t, startRealRedis(t))
	hsHello3(t, tc)
	hsRunCases(t, tc, hashRESP3Cases)
}

// ---- differential helpers shared with the set tests ----

// hsPair is a connection to shoal and one to a real Redis, fed the same
// commands.
type hsPair struct {
	t        *testing.T
	sho, red *testConn
	s        *Server
	// extraHits is how many more keyspace hits shoal legitimately counted
	// (more SCAN calls to cover the same hashtable).
	extraHits int64
	// extraMisses likewise (SORT's GET lookups over differing windows).
	extraMisses int64
}

func newHSPair(t *testing.T) *hsPair {
	t.Helper()
	addr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	return &hsPair{t: t, sho: dialTest(t, s), red: dialTestAddr(t, addr), s: s}
}

// same sends cmd to both servers and requires byte-identical replies.
func (p *hsPair) same(cmd ...string) string {
	p.t.Helper()
	want, got := p.red.do(cmd...), p.sho.do(cmd...)
	if got != want {
		p.t.Fatalf("%s:\n shoal %q\n redis %q", hsShow(cmd), hsShort(got), hsShort(want))
	}
	return got
}

// sameUnordered sends cmd to both and requires the same reply up to the
// order of the top-level elements (of pairs of elements with pairs set).
func (p *hsPair) sameUnordered(pairs bool, cmd ...string) (shoal, redis string) {
	p.t.Helper()
	want, got := p.red.do(cmd...), p.sho.do(cmd...)
	if got != want && hsCanonical(p.t, got, pairs) != hsCanonical(p.t, want, pairs) {
		p.t.Fatalf("%s:\n shoal %q\n redis %q", hsShow(cmd), hsShort(got), hsShort(want))
	}
	return got, want
}

// hsShort abbreviates a reply for failure messages.
func hsShort(s string) string {
	if len(s) > 300 {
		return fmt.Sprintf("%s...(%d bytes)", s[:300], len(s))
	}
	return s
}

// hsShow abbreviates a command for failure messages.
func hsShow(cmd []string) string {
	parts := make([]string, len(cmd))
	for i, a := range cmd {
		if len(a) > 40 {
			a = fmt.Sprintf("%s...(%d bytes)", a[:20], len(a))
		}
		parts[i] = strconv.Quote(a)
	}
	return strings.Join(parts, " ")
}

// hsRaw writes v back as RESP (the same bytes for the same reply, so that
// reordered replies can be compared).
func hsRaw(v testharness.Reply) string {
	switch v.Kind {
	case '*', '~', '%', '>':
		n := len(v.Elems)
		if v.Kind == '%' {
			n /= 2
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%c%d\r\n", v.Kind, n)
		for _, e := range v.Elems {
			b.WriteString(hsRaw(e))
		}
		return b.String()
	case '$':
		if v.Null {
			return "$-1\r\n"
		}
		return bulk(v.Str)
	}
	return string(v.Kind) + v.Str + "\r\n"
}

// hsCanonical sorts the top-level elements (or pairs) of an aggregate
// reply, and the element array of a SCAN-style [cursor, elements] reply.
func hsCanonical(t testing.TB, raw string, pairs bool) string {
	v := testharness.ParseReply(t, raw)
	if len(v.Elems) == 0 {
		return raw
	}
	type group struct {
		key string
		els []testharness.Reply
	}
	step := 1
	if pairs && v.Kind != '%' && (len(v.Elems) == 0 || v.Elems[0].Kind != '*') {
		step = 2
	}
	if v.Kind == '%' {
		step = 2
	}
	var gs []group
	for i := 0; i+step <= len(v.Elems); i += step {
		g := group{els: v.Elems[i : i+step]}
		for _, e := range g.els {
			g.key += hsRaw(e)
		}
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].key < gs[j].key })
	out := testharness.Reply{Kind: v.Kind}
	for _, g := range gs {
		out.Elems = append(out.Elems, g.els...)
	}
	return hsRaw(out)
}

// hsStrings returns the bulk strings of a flat aggregate reply.
func hsStrings(t testing.TB, raw string) []string {
	t.Helper()
	v := testharness.ParseReply(t, raw)
	var out []string
	for _, e := range v.Elems {
		if e.Kind == '*' { // RESP3 pairs
			for _, x := range e.Elems {
				out = append(out, x.Str)
			}
			continue
		}
		out = append(out, e.Str)
	}
	return out
}

// hsScanAll runs a [HS]SCAN to the end on tc and returns the elements seen
// (pairs joined by "=" for hashes), sorted and deduplicated, and the number
// of calls; or the raw reply of a first call that is not a scan reply.
func hsScanAll(t *testing.T, tc *testConn, pairs bool, cmd string, key string, opts ...string) (elems []string, calls int, errReply string) {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for ; ; calls++ {
		if calls > 100000 {
			t.Fatalf("%s %s did not finish", cmd, key)
		}
		args := append([]string{cmd, key, cursor}, opts...)
		raw := tc.do(args...)
		v := testharness.ParseReply(t, raw)
		if v.Kind != '*' || len(v.Elems) != 2 {
			if calls == 0 {
				return nil, 1, raw
			}
			t.Fatalf("%s reply %q", cmd, raw)
		}
		cursor = v.Elems[0].Str
		els := v.Elems[1].Elems
		if pairs {
			if len(els)%2 != 0 {
				t.Fatalf("%s: odd element count", cmd)
			}
			for i := 0; i < len(els); i += 2 {
				seen[els[i].Str+"="+els[i+1].Str] = true
			}
		} else {
			for _, e := range els {
				seen[e.Str] = true
			}
		}
		if cursor == "0" {
			calls++
			break
		}
	}
	for k := range seen {
		elems = append(elems, k)
	}
	sort.Strings(elems)
	return elems, calls, ""
}

// sameScan runs a whole [HS]SCAN on both servers and requires the same
// elements (cursors differ: the hash functions do). Each call is a keyspace
// hit or miss, so the difference in calls is remembered for sameStats.
func (p *hsPair) sameScan(pairs bool, cmd, key string, opts ...string) {
	p.t.Helper()
	re, rc, rerr := hsScanAll(p.t, p.red, pairs, cmd, key, opts...)
	se, shc, serr := hsScanAll(p.t, p.sho, pairs, cmd, key, opts...)
	if rerr != serr {
		p.t.Fatalf("%s %s %q:\n shoal %q\n redis %q", cmd, key, opts, serr, rerr)
	}
	require.Equal(p.t, re, se, "%s %s %q", cmd, key, opts)
	p.extraHits += int64(shc - rc)
}

// infoStat reads an INFO stats field.
func hsInfoStat(t *testing.T, tc *testConn, name string) int64 {
	t.Helper()
	info := bulkBody(t, tc.do("INFO", "stats"))
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in INFO", name)
	return 0
}

// sameStats requires the same keyspace hit and miss counts on both.
func (p *hsPair) sameStats() {
	p.t.Helper()
	require.Equal(p.t, hsInfoStat(p.t, p.red, "keyspace_hits")+p.extraHits, hsInfoStat(p.t, p.sho, "keyspace_hits"), "keyspace_hits")
	require.Equal(p.t, hsInfoStat(p.t, p.red, "keyspace_misses")+p.extraMisses, hsInfoStat(p.t, p.sho, "keyspace_misses"), "keyspace_misses")
}

// ---- hash differential tests ----

// TestHashEncodingTransitionsMatchRedis drives the listpack → hashtable
// conversions through every path (entries, value and field length, HSETNX,
// HINCRBY*, limits changed at run time) and compares encodings and replies.
func TestHashEncodingTransitionsMatchRedis(t *testing.T) {
	p := newHSPair(t)
	enc := func(key string) { p.t.Helper(); p.same("OBJECT", "ENCODING", key) }
	for _, name := range []string{"hash-max-listpack-entries", "hash-max-ziplist-entries"} {
		p.same("CONFIG", "SET", name, "4")
		p.same("DEL", "h")
		for i := range 4 {
			p.same("HSET", "h", fmt.Sprint("f", i), "v")
			enc("h")
		}
		p.same("HGETALL", "h")
		p.same("HSET", "h", "f4", "v")
		enc("h")
		p.same("HDEL", "h", "f0", "f1", "f2", "f3")
		enc("h") // never back to a listpack
		p.same("CONFIG", "SET", name, "512")
	}
	p.same("CONFIG", "SET", "hash-max-listpack-value", "8")
	for _, c := range [][]string{
		{"HSET", "v1", "f", "12345678"},
		{"HSET", "v2", "f", "123456789"},
		{"HSET", "v3", "123456789", "v"},
		{"HMSET", "v4", "a", "1", "b", "123456789"},
		{"HSETNX", "v5", "f", "123456789"},
		{"HINCRBY", "v6", "123456789", "1"},
		{"HINCRBYFLOAT", "v7", "f", "0.0000005"},
		{"HINCRBYFLOAT", "v8", "f", "0.000005"},
		{"HINCRBYFLOAT", "v9", "abcdefghi", "1"},
	} {
		p.same(c...)
		enc(c[1])
		p.sameUnordered(true, "HGETALL", c[1])
	}
	// An existing listpack converts when a long value arrives later.
	p.same("HSET", "v1", "g", "x")
	enc("v1")
	p.same("HSET", "v1", "g", "123456789")
	enc("v1")
	p.same("CONFIG", "SET", "hash-max-listpack-value", "64")
	// Limit 0: even the first field converts.
	p.same("CONFIG", "SET", "hash-max-listpack-entries", "0")
	p.same("HSET", "z", "a", "b")
	enc("z")
	p.same("CONFIG", "SET", "hash-max-listpack-entries", "512")
	// COPY keeps the encoding; DEBUG DIGEST-VALUE ignores it.
	p.same("HSET", "c1", "a", "1", "b", "2")
	p.same("COPY", "c1", "c2")
	enc("c2")
	p.same("COPY", "v1", "v1copy")
	enc("v1copy")
	p.same("HSET", "d1", "a", "1", "b", "2")
	p.same("HSET", "d2", "b", "2", "a", "1")
	p.same("DEBUG", "DIGEST-VALUE", "d1", "d2", "v1", "v1copy")
	p.same("DEBUG", "DIGEST")
}

// TestHashBigMatchesRedis compares a hashtable-encoded hash: every field by
// HMGET, the whole content unordered, HSCAN to the end.
func TestHashBigMatchesRedis(t *testing.T) {
	p := newHSPair(t)
	args := []string{"HSET", "big"}
	for i := range 3000 {
		args = append(args, fmt.Sprint("field:", i), fmt.Sprint(i*7))
	}
	p.same(args...)
	p.same("OBJECT", "ENCODING", "big")
	p.same("HLEN", "big")
	hm := []string{"HMGET", "big"}
	for i := 0; i < 3100; i += 3 {
		hm = append(hm, fmt.Sprint("field:", i))
	}
	p.same(hm...)
	p.sameUnordered(true, "HGETALL", "big")
	p.sameUnordered(false, "HKEYS", "big")
	p.sameUnordered(false, "HVALS", "big")
	for _, opts := range [][]string{nil, {"COUNT", "100"}, {"MATCH", "field:1*"}, {"MATCH", "*9", "COUNT", "1000"}} {
		p.sameScan(true, "HSCAN", "big", opts...)
	}
	for i := 0; i < 3000; i += 2 {
		p.same("HDEL", "big", fmt.Sprint("field:", i))
	}
	p.same("HINCRBY", "big", "field:1", "5")
	p.same("HINCRBYFLOAT", "big", "field:3", "0.5")
	p.same("DEBUG", "DIGEST-VALUE", "big")
	p.sameUnordered(true, "HGETALL", "big")
	p.sameStats()
}

// hsRandomCounts is the pool of HRANDFIELD / SRANDMEMBER / SPOP counts.
var hsRandomCounts = []string{"0", "1", "2", "3", "5", "-1", "-3", "-10", "100", "x", "-9223372036854775808", ""}

// TestHashRandomMatchesRedis sends the same random hash commands to both
// servers and requires identical replies (unordered for hashtable-encoded
// hashes, by shape for HRANDFIELD), identical encodings and digests.
func TestHashRandomMatchesRedis(t *testing.T) {
	p := newHSPair(t)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	p.same("CONFIG", "SET", "hash-max-listpack-entries", "16")
	p.same("CONFIG", "SET", "hash-max-listpack-value", "12")
	p.same("SET", "str", "x")
	keys := []string{"h1", "h2", "h3", "str"}
	fields := []string{"a", "b", "c", "d", "", "0", "1", "-5", "123456789012", "1234567890123", "f5", "f6", "f7", "f8", "f9", "f10"}
	values := []string{"", "0", "1", "-1", "10", "1.5", "abc", " 1", "9223372036854775807", "-9223372036854775808", "0x10", "1e3", "123456789012", "1234567890123"}
	pick := func(pool []string) string { return pool[r.IntN(len(pool))] }
	for i := range 3000 {
		k := pick(keys)
		var cmd []string
		switch r.IntN(16) {
		case 0, 1, 2:
			cmd = []string{pick([]string{"HSET", "HMSET"}), k}
			for n := 1 + r.IntN(3); n > 0; n-- {
				cmd = append(cmd, pick(fields), pick(values))
			}
			if r.IntN(20) == 0 {
				cmd = cmd[:len(cmd)-1]
			}
		case 3:
			cmd = []string{"HSETNX", k, pick(fields), pick(values)}
		case 4:
			cmd = []string{"HDEL", k, pick(fields), pick(fields)}
		case 5:
			cmd = []string{"HGET", k, pick(fields)}
		case 6:
			cmd = []string{"HMGET", k, pick(fields), pick(fields)}
		case 7:
			cmd = []string{pick([]string{"HLEN", "HEXISTS", "HSTRLEN"}), k, pick(fields)}
			if cmd[0] == "HLEN" {
				cmd = cmd[:2]
			}
		case 8:
			cmd = []string{"HINCRBY", k, pick(fields), pick(append(values, "5", "-3"))}
		case 9:
			cmd = []string{"HINCRBYFLOAT", k, pick(fields), pick(append(values, "0.25", "-2.5", "1e2"))}
		case 10, 11:
			cmd = []string{pick([]string{"HGETALL", "HKEYS", "HVALS"}), k}
		case 12:
			cmd = []string{"HRANDFIELD", k}
			if r.IntN(3) > 0 {
				cmd = append(cmd, pick(hsRandomCounts))
				if r.IntN(2) == 0 {
					cmd = append(cmd, pick([]string{"WITHVALUES", "withvalues", "x"}))
				}
			}
		case 13:
			cmd = []string{"HSCAN", k, pick([]string{"0", "x"})}
			if r.IntN(2) == 0 {
				cmd = append(cmd, "MATCH", pick([]string{"*", "f*", "?", "[a-c]"}))
			}
			if r.IntN(3) == 0 {
				cmd = append(cmd, "COUNT", pick([]string{"1", "5", "0", "x"}))
			}
		case 14:
			cmd = []string{"OBJECT", "ENCODING", k}
		default:
			cmd = []string{"DEBUG", "DIGEST-VALUE", k}
		}
		p.checkHashCommand(i, cmd)
	}
	p.same("DEBUG", "DIGEST")
	p.sameStats()
}

// checkHashCommand compares one hash command's replies on both servers.
func (p *hsPair) checkHashCommand(i int, cmd []string) {
	p.t.Helper()
	enc := strings.TrimSpace(bulkBodyOr(p.red.do("OBJECT", "ENCODING", cmd[1])))
	p.sho.do("OBJECT", "ENCODING", cmd[1]) // keep the LRU/stat side effects alike
	switch cmd[0] {
	case "HRANDFIELD":
		p.checkRandom(cmd, "HGETALL", true)
	case "HSCAN":
		if enc == "hashtable" && cmd[2] == "0" {
			p.sameScan(true, "HSCAN", cmd[1], cmd[3:]...)
			return
		}
		p.same(cmd...)
	case "HGETALL", "HKEYS", "HVALS":
		if enc == "hashtable" {
			p.sameUnordered(cmd[0] == "HGETALL", cmd...)
			return
		}
		p.same(cmd...)
	default:
		p.same(cmd...)
	}
}

// bulkBodyOr returns a bulk reply's payload, or the raw reply.
func bulkBodyOr(raw string) string {
	if strings.HasPrefix(raw, "$") && raw != "$-1\r\n" {
		i := strings.Index(raw, "\r\n")
		return raw[i+2 : len(raw)-2]
	}
	return raw
}

// checkRandom compares a random-sampling command by shape: errors and
// empty replies exactly, otherwise the same element count, every element
// (and value) belonging to the collection as dumpCmd lists it, and no
// repeats when the count is positive; a count covering the whole collection
// must return exactly the collection.
func (p *hsPair) checkRandom(cmd []string, dumpCmd string, pairs bool) {
	p.t.Helper()
	want, got := p.red.do(cmd...), p.sho.do(cmd...)
	if want == got {
		return
	}
	if !strings.HasPrefix(want, "*") && !strings.HasPrefix(want, "~") || !strings.HasPrefix(got, want[:1]) {
		if strings.HasPrefix(want, "$") && strings.HasPrefix(got, "$") && len(cmd) == 2 {
			// One random element: must be a member.
			p.requireMembers(dumpCmd, cmd[1], false, []string{bulkBodyOr(got)}, false)
			return
		}
		p.t.Fatalf("%s:\n shoal %q\n redis %q", hsShow(cmd), hsShort(got), hsShort(want))
	}
	ws, gs := hsStrings(p.t, want), hsStrings(p.t, got)
	if len(ws) != len(gs) {
		p.t.Fatalf("%s: shoal gave %d elements, redis %d", hsShow(cmd), len(gs), len(ws))
	}
	withValues := pairs && len(cmd) == 4
	count, _ := strconv.ParseInt(cmd[2], 10, 64)
	p.requireMembers(dumpCmd, cmd[1], withValues, gs, count > 0)
}

// requireMembers checks that elems (field/value pairs when withValues)
// belong to the collection at key on shoal, distinct when distinct.
func (p *hsPair) requireMembers(dumpCmd, key string, withValues bool, elems []string, distinct bool) {
	p.t.Helper()
	all := hsStrings(p.t, p.sho.do(dumpCmd, key))
	p.extraHits++ // that lookup was shoal's only
	members := map[string]string{}
	if dumpCmd == "HGETALL" {
		for i := 0; i+1 < len(all); i += 2 {
			members[all[i]] = all[i+1]
		}
	} else {
		for _, m := range all {
			members[m] = ""
		}
	}
	step := 1
	if withValues {
		step = 2
	}
	seen := map[string]bool{}
	for i := 0; i < len(elems); i += step {
		v, ok := members[elems[i]]
		if !ok || withValues && v != elems[i+1] {
			p.t.Fatalf("random reply element %q is not in %s", elems[i], key)
		}
		if distinct && seen[elems[i]] {
			p.t.Fatalf("random reply repeats %q", elems[i])
		}
		seen[elems[i]] = true
	}
}

// TestHRandFieldDistribution checks that HRANDFIELD's samples are uniform
// enough for the tcl suite's chi-square test, on both encodings and every
// code path (negative count, count near the size, small count).
func TestHRandFieldDistribution(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for _, enc := range []string{"listpack", "hashtable"} {
		tc.do("DEL", "h")
		for i := range 10 {
			tc.do("HSET", "h", fmt.Sprint("f", i), "v")
		}
		if enc == "hashtable" {
			tc.do("HSET", "h", "f9", strings.Repeat("v", 100))
		}
		require.Equal(t, bulk(enc), tc.do("OBJECT", "ENCODING", "h"))
		chi := func(samples []string) float64 {
			counts := map[string]int{}
			for _, s := range samples {
				counts[s]++
			}
			exp := float64(len(samples)) / 10
			var sum float64
			for i := range 10 {
				d := float64(counts[fmt.Sprint("f", i)]) - exp
				sum += d * d / exp
			}
			return sum
		}
		require.Less(t, chi(hsStrings(t, tc.do("HRANDFIELD", "h", "-1000"))), 40.0, enc)
		for _, size := range []int{8, 2} {
			var all []string
			for range 1000 / size {
				got := hsStrings(t, tc.do("HRANDFIELD", "h", strconv.Itoa(size)))
				require.Len(t, got, size)
				require.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), size, "distinct")
				all = append(all, got...)
			}
			require.Less(t, chi(all), 40.0, "%s size %d", enc, size)
		}
	}
}

// TestHScanGuarantee: every field present for a whole HSCAN is returned,
// however much the hash grows or shrinks between the calls.
func TestHScanGuarantee(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for _, grow := range []bool{true, false} {
		tc.do("DEL", "h")
		args := []string{"HSET", "h"}
		for i := range 1000 {
			args = append(args, fmt.Sprint("keep", i), "v")
		}
		tc.do(args...)
		if !grow {
			args = []string{"HSET", "h"}
			for i := range 20000 {
				args = append(args, fmt.Sprint("tmp", i), "v")
			}
			tc.do(args...)
		}
		seen := map[string]bool{}
		cursor := "0"
		for calls := 0; calls < 100000; calls++ {
			v := testharness.ParseReply(t, tc.do("HSCAN", "h", cursor, "COUNT", "20"))
			cursor = v.Elems[0].Str
			for i := 0; i < len(v.Elems[1].Elems); i += 2 {
				seen[v.Elems[1].Elems[i].Str] = true
			}
			if cursor == "0" {
				break
			}
			if calls < 300 {
				churn := []string{"HSET", "h"}
				if !grow {
					churn = []string{"HDEL", "h"}
				}
				for j := range 70 {
					churn = append(churn, fmt.Sprint("tmp", calls*70+j))
					if grow {
						churn = append(churn, "v")
					}
				}
				tc.do(churn...)
			}
		}
		require.Equal(t, "0", cursor)
		for i := range 1000 {
			require.True(t, seen[fmt.Sprint("keep", i)], "grow=%v: keep%d missed", grow, i)
		}
	}
}

// TestHRandFieldHugeCountRefused: a sampling reply that cannot fit is
// refused rather than built (Redis would exhaust memory).
func TestHRandFieldHugeCountRefused(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("HSET", "h", "a", "1")
	require.Equal(t, "-ERR value is out of range\r\n", tc.do("HRANDFIELD", "h", "-9223372036854775807"))
	require.Equal(t, "-ERR value is out of range\r\n", tc.do("HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"))
	require.Equal(t, hsArr("a", "a"), tc.do("HRANDFIELD", "h", "-2"))
}
