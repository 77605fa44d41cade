package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

// Sorted set tests: byte-exact replies for fixed cases, and differential
// runs against a real redis-server 7.0 (skipped when it is not installed)
// of scripted and random command sequences, in RESP2 and RESP3, with both
// encodings.

func zc(want string, args ...string) strCase { return strCase{args: args, want: want} }

func TestZSetRepliesExact(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	cases := []strCase{
		zc(":3\r\n", "zadd", "z", "1", "a", "2", "b", "3", "c"),
		zc("*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n", "zrange", "z", "0", "-1", "withscores"),
		zc("$3\r\n3.5\r\n", "zincrby", "z", "1.5", "b"),
		zc("$19\r\n0.10000000000000001\r\n", "zadd", "z", "incr", "0.1", "new"),
		zc("$5\r\n1e+20\r\n", "zadd", "z", "incr", "1e20", "big"),
		zc("-ERR value is not a valid float\r\n", "zadd", "z", "nan", "x"),
		zc("-ERR value is not a valid float\r\n", "zadd", "z", "1e999", "x"),
		zc(":1\r\n", "zadd", "z", "-inf", "low"),
		zc("$4\r\n-inf\r\n", "zscore", "z", "low"),
		zc("-ERR XX and NX options at the same time are not compatible\r\n", "zadd", "z", "nx", "xx", "1", "a"),
		zc("-ERR GT, LT, and/or NX options at the same time are not compatible\r\n", "zadd", "z", "gt", "lt", "1", "a"),
		zc("-ERR INCR option supports a single increment-element pair\r\n", "zadd", "z", "incr", "1", "a", "2", "b"),
		zc("-ERR syntax error\r\n", "zadd", "z", "1", "a", "2"),
		zc("$-1\r\n", "zadd", "z", "nx", "incr", "1", "a"),
		zc(":1\r\n", "zadd", "inf", "inf", "a"),
		zc("-ERR resulting score is not a number (NaN)\r\n", "zadd", "inf", "incr", "-inf", "a"),
		zc("-ERR min or max is not a float\r\n", "zcount", "z", "(", "x"),
		zc(":0\r\n", "zcount", "z", "(1", "(1"),
		zc("-ERR min or max not valid string range item\r\n", "zlexcount", "z", "a", "+"),
		zc("*0\r\n", "zrange", "nokey", "0", "-1"),
		zc("-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n", "zrange", "z", "0", "1", "limit", "0", "1"),
		zc("-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n", "zrange", "z", "-", "+", "bylex", "withscores"),
		zc("-ERR at least 1 input key is needed for 'zunionstore' command\r\n", "zunionstore", "d", "0", "z"),
		zc("-ERR numkeys should be greater than 0\r\n", "zmpop", "0", "z", "min"),
		zc("-ERR count should be greater than 0\r\n", "zmpop", "1", "z", "min", "count", "0"),
		zc("-ERR value is out of range, must be positive\r\n", "zpopmin", "z", "-1"),
		zc("-ERR value is out of range\r\n", "zrandmember", "z", "-9223372036854770000", "withscores"),
		zc("+OK\r\n", "set", "str", "x"),
		zc("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "zadd", "str", "1", "a"),
		zc("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "zunion", "2", "z", "str"),
		zc("*2\r\n$1\r\n0\r\n*0\r\n", "zscan", "nokey", "0"),
		zc("-ERR invalid cursor\r\n", "zscan", "z", "x"),
	}
	runStrCases(t, tc, cases)
}

// runStrCases sends each case and compares the raw reply.
func runStrCases(t *testing.T, tc *testConn, cases []strCase) {
	t.Helper()
	for _, c := range cases {
		if got := tc.do(c.args...); got != c.want {
			t.Errorf("%q\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// zsetScript is the scripted differential sequence; "%ENC%" steps are run
// once with the default thresholds and once forcing skiplists.
func zsetScript() [][]string {
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	// Creation and options.
	add("zadd", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
	add("object", "encoding", "z")
	add("zadd", "z", "ch", "10", "a", "2", "b", "7", "f")
	add("zadd", "z", "xx", "ch", "11", "a", "12", "zz")
	add("zadd", "z", "nx", "100", "a", "13", "g")
	add("zadd", "z", "gt", "ch", "1", "a", "20", "b")
	add("zadd", "z", "lt", "ch", "1", "a", "30", "c")
	add("zadd", "z", "xx", "gt", "incr", "5", "a")
	add("zadd", "z", "xx", "lt", "incr", "5", "a")
	add("zadd", "z", "incr", "-5", "a")
	add("zadd", "z", "NX", "Incr", "1", "a")
	add("zadd", "z", "xx", "nx", "1", "a")
	add("zadd", "z", "gt", "nx", "1", "a")
	add("zadd", "z", "lt", "gt", "1", "a")
	add("zadd", "z", "incr", "1", "a", "2", "b")
	add("zadd", "z", "1")
	add("zadd", "z", "nx")
	add("zadd", "z", "abc", "a")
	add("zadd", "z", " 1", "a")
	add("zadd", "z", "1 ", "a")
	add("zadd", "z", "0x10", "hex")
	add("zadd", "z", "1e-400", "tiny")
	add("zadd", "z", "4e-320", "denorm")
	add("zadd", "z", "-0", "negzero")
	add("zadd", "z", "+inf", "pinf", "-INF", "minf", "Infinity", "pinf2")
	add("zadd", "z", "nan", "nan")
	add("zadd", "z", "1.5", "f15", "0.1", "f01", "1e20", "f1e20", "123456789012345678", "fbig", "4611686018427387904", "p62", "1e-5", "fsmall")
	add("zrange", "z", "0", "-1", "withscores")
	add("zscan", "z", "0")
	add("zscore", "z", "negzero")
	add("zincrby", "z", "1", "newone")
	add("zincrby", "z", "abc", "a")
	add("zincrby", "z", "-inf", "pinf")
	add("zincrby", "z", "1", "a", "extra")
	add("zcard", "z")
	add("zcard", "nokey")
	add("zscore", "z", "a")
	add("zscore", "z", "missing")
	add("zscore", "nokey", "a")
	add("zmscore", "z", "a", "missing", "b")
	add("zmscore", "nokey", "a", "b")
	add("zrank", "z", "a")
	add("zrevrank", "z", "a")
	add("zrank", "z", "missing")
	add("zrank", "nokey", "a")
	// Ranges by rank.
	for _, r := range [][2]string{{"0", "-1"}, {"1", "3"}, {"-3", "-1"}, {"5", "2"}, {"100", "200"}, {"-100", "2"}, {"0", "0"}, {"x", "1"}} {
		add("zrange", "z", r[0], r[1])
		add("zrange", "z", r[0], r[1], "withscores")
		add("zrevrange", "z", r[0], r[1], "withscores")
		add("zrange", "z", r[0], r[1], "rev")
	}
	add("zrange", "z", "0", "-1", "limit", "0", "-1")
	add("zrange", "z", "0", "-1", "withscores", "withscores", "rev")
	add("zrevrange", "z", "0", "-1", "rev")
	add("zrange", "z", "0", "-1", "limit", "1")
	add("zrange", "z", "0", "-1", "bogus")
	// Ranges by score.
	for _, r := range [][2]string{{"-inf", "+inf"}, {"(1", "5"}, {"1", "(5"}, {"(1", "(1"}, {"5", "1"}, {"2", "2"}, {"", ""}, {"(", "10"},
		{" 2", "10"}, {"abc", "1"}, {"1", "nan"}, {"-inf", "-inf"}, {"0x1p1", "1e1"}, {"-1e999", "1e999"}} {
		add("zrangebyscore", "z", r[0], r[1])
		add("zrangebyscore", "z", r[0], r[1], "withscores")
		add("zrevrangebyscore", "z", r[1], r[0], "withscores")
		add("zrange", "z", r[0], r[1], "byscore", "withscores")
		add("zrange", "z", r[1], r[0], "byscore", "rev")
		add("zcount", "z", r[0], r[1])
	}
	for _, l := range [][2]string{{"0", "2"}, {"1", "-1"}, {"2", "0"}, {"-1", "5"}, {"100", "1"}, {"0", "x"}} {
		add("zrangebyscore", "z", "-inf", "+inf", "limit", l[0], l[1])
		add("zrevrangebyscore", "z", "+inf", "-inf", "withscores", "limit", l[0], l[1])
		add("zrange", "z", "-inf", "+inf", "byscore", "rev", "limit", l[0], l[1])
		add("zrangebylex", "lex", "-", "+", "limit", l[0], l[1])
		add("zrange", "lex", "+", "-", "bylex", "rev", "limit", l[0], l[1])
	}
	add("zrangebyscore", "z", "0", "10", "limit", "0")
	add("zrangebyscore", "z", "0", "10", "byscore")
	// Lex ranges.
	add("zadd", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0", "aa", "0", "ab", "0", "", "0", "zz", "0", "B")
	for _, r := range [][2]string{{"-", "+"}, {"[a", "[c"}, {"(a", "(c"}, {"[aa", "+"}, {"-", "(b"}, {"+", "-"}, {"[c", "[a"}, {"[", "[b"},
		{"(", "+"}, {"a", "b"}, {"-x", "+"}, {"[a", "(a"}, {"-", "-"}, {"+", "+"}} {
		add("zrangebylex", "lex", r[0], r[1])
		add("zrevrangebylex", "lex", r[1], r[0])
		add("zrange", "lex", r[0], r[1], "bylex")
		add("zlexcount", "lex", r[0], r[1])
	}
	// Removal.
	add("zrem", "z", "a", "a", "missing", "b")
	add("zrem", "nokey", "a")
	add("zremrangebyscore", "z", "(1", "3")
	add("zremrangebyscore", "z", "x", "3")
	add("zremrangebyrank", "z", "0", "0")
	add("zremrangebyrank", "z", "-2", "-1")
	add("zremrangebyrank", "z", "5", "2")
	add("zremrangebyrank", "z", "x", "2")
	add("zremrangebylex", "lex", "[a", "(c")
	add("zremrangebylex", "lex", "a", "c")
	add("zrange", "z", "0", "-1", "withscores")
	add("zrange", "lex", "0", "-1")
	add("zremrangebyrank", "lex", "0", "-1")
	add("exists", "lex")
	// Pops.
	add("zadd", "p", "1", "a", "2", "b", "3", "c", "4", "d")
	add("zpopmin", "p")
	add("zpopmax", "p", "2")
	add("zpopmin", "p", "0")
	add("zpopmin", "p", "10")
	add("exists", "p")
	add("zpopmin", "p")
	add("zpopmin", "p", "1", "2")
	add("zpopmax", "p", "x")
	add("zadd", "p", "1", "a", "2", "b", "3", "c")
	add("zmpop", "2", "nokey", "p", "max", "count", "2")
	add("zmpop", "1", "p", "min")
	add("zmpop", "1", "p", "min")
	add("zmpop", "1", "p", "min")
	add("zmpop", "1", "p", "left")
	add("zmpop", "3", "p", "min")
	add("zmpop", "1", "p", "min", "count")
	add("zmpop", "1", "p", "min", "count", "1", "count", "1")
	add("zmpop", "1", "p", "min", "count", "-1")
	add("zmpop", "x", "p", "min")
	add("zmpop", "-1", "p", "min")
	// Set operations.
	add("zadd", "s1", "1", "a", "2", "b", "3", "c")
	add("zadd", "s2", "10", "b", "20", "c", "30", "d")
	add("sadd", "set", "a", "d", "x")
	add("sadd", "intset", "1", "2", "3")
	add("zadd", "ints", "5", "1", "6", "2")
	for _, op := range []string{"zunion", "zinter", "zdiff"} {
		add(op, "2", "s1", "s2")
		add(op, "2", "s1", "s2", "withscores")
		add(op, "3", "s1", "s2", "set", "withscores")
		add(op, "2", "s1", "nokey", "withscores")
		add(op, "2", "s1", "s1", "withscores")
		add(op, "2", "ints", "intset", "withscores")
		add(op, "2", "s1", "s2", "weights", "2", "3", "withscores")
		add(op, "2", "s1", "s2", "aggregate", "max", "withscores")
		add(op, "2", "s1", "s2", "aggregate", "min", "weights", "1", "-1", "withscores")
		add(op, "2", "s1", "s2", "weights", "1")
		add(op, "2", "s1", "s2", "weights", "1", "x")
		add(op, "2", "s1", "s2", "aggregate", "avg")
		add(op, "3", "s1", "s2")
		add(op, "0", "s1")
		add(op, "x", "s1")
		add(op+"store", "dst", "2", "s1", "s2")
		add("zrange", "dst", "0", "-1", "withscores")
		add("object", "encoding", "dst")
		add(op+"store", "dst", "2", "s1", "s2", "withscores")
		add(op+"store", "dst", "1", "nokey")
		add("exists", "dst")
	}
	add("zunion", "2", "s1", "s2", "weights", "inf", "-inf", "withscores")
	add("zinter", "2", "s1", "s2", "weights", "inf", "-inf", "withscores")
	add("zunion", "2", "s1", "s2", "weights", "0", "inf", "withscores")
	add("zintercard", "2", "s1", "s2")
	add("zintercard", "2", "s1", "s2", "limit", "1")
	add("zintercard", "2", "s1", "s2", "limit", "0")
	add("zintercard", "2", "s1", "s2", "limit", "-1")
	add("zintercard", "2", "s1", "s2", "limit", "x")
	add("zintercard", "2", "s1", "s2", "withscores")
	add("zintercard", "0", "s1")
	// ZRANGESTORE.
	add("zrangestore", "dst", "s2", "0", "-1")
	add("zrange", "dst", "0", "-1", "withscores")
	add("zrangestore", "dst", "s2", "(10", "+inf", "byscore", "rev")
	add("zrangestore", "dst", "s2", "+inf", "(10", "byscore", "rev", "limit", "0", "1")
	add("zrange", "dst", "0", "-1", "withscores")
	add("zrangestore", "dst", "s2", "5", "10")
	add("exists", "dst")
	add("zrangestore", "dst", "s2", "0", "-1", "withscores")
	add("zrangestore", "dst", "nokey", "0", "-1")
	add("zrangestore", "s2", "s2", "1", "-1")
	add("zrange", "s2", "0", "-1", "withscores")
	// ZRANDMEMBER deterministic forms.
	add("zrandmember", "nokey")
	add("zrandmember", "nokey", "5")
	add("zrandmember", "s1", "0")
	add("zrandmember", "s1", "10")
	add("zrandmember", "s1", "10", "withscores")
	add("zrandmember", "s1", "3", "withscores")
	add("zrandmember", "s1", "1", "bogus")
	add("zrandmember", "s1", "1", "withscores", "x")
	add("zrandmember", "s1", "-9223372036854775808")
	add("zrandmember", "s1", "x")
	// Wrong types.
	add("set", "str", "v")
	for _, cmd := range [][]string{{"zadd", "str", "1", "a"}, {"zincrby", "str", "1", "a"}, {"zrem", "str", "a"}, {"zcard", "str"},
		{"zscore", "str", "a"}, {"zmscore", "str", "a"}, {"zrank", "str", "a"}, {"zrange", "str", "0", "1"}, {"zrangebyscore", "str", "0", "1"},
		{"zrangebylex", "str", "-", "+"}, {"zcount", "str", "0", "1"}, {"zlexcount", "str", "-", "+"}, {"zpopmin", "str"},
		{"zmpop", "1", "str", "min"}, {"zrandmember", "str"}, {"zrandmember", "str", "1"}, {"zscan", "str", "0"},
		{"zremrangebyrank", "str", "0", "1"}, {"zrangestore", "d", "str", "0", "1"}, {"zinterstore", "d", "1", "str"},
		{"zadd", "str", "xx", "1", "a"}} {
		add(cmd...)
	}
	add("zadd", "str2", "x", "a")
	add("zrangestore", "str", "s1", "0", "-1")
	add("type", "str")
	// ZSCAN.
	add("zscan", "s1", "0", "count", "0")
	add("zscan", "s1", "0", "count", "x")
	add("zscan", "s1", "0", "match", "a*")
	add("zscan", "s1", "0", "type", "zset")
	add("zscan", "s1", "0", "match")
	add("zscan", "s1", "-1")
	add("zscan", "s1", " 0")
	// Digests and copies.
	add("debug", "digest-value", "s1", "z", "ints")
	add("copy", "s1", "s1copy")
	add("debug", "digest-value", "s1copy")
	add("object", "encoding", "s1copy")
	// Long members and conversions.
	long := strings.Repeat("x", 65)
	add("zadd", "conv", "1", "a")
	add("object", "encoding", "conv")
	add("zadd", "conv", "2", long)
	add("object", "encoding", "conv")
	add("zrem", "conv", long)
	add("object", "encoding", "conv")
	add("zadd", "longfirst", "1", long)
	add("object", "encoding", "longfirst")
	add("zunionstore", "conv2", "1", "conv")
	add("object", "encoding", "conv2")
	add("zrangestore", "conv3", "longfirst", "0", "-1")
	add("object", "encoding", "conv3")
	add("zscan", "conv", "0")
	// Score formatting around the %.17g switch points.
	add("zadd", "fmt", "1e16", "a", "1e17", "b", "123456789.123", "c", "-0.0001", "d", "1e-5", "e", "5e-324", "f",
		"9007199254740993", "g", "0.30000000000000004", "h", "-1e308", "i", "1.7976931348623157e308", "j", "100", "k", "-2.5e-10", "l")
	add("zrange", "fmt", "0", "-1", "withscores")
	add("zscan", "fmt", "0")
	add("zincrby", "fmt", "0.1", "h")
	add("zincrby", "fmt", "1e308", "j")
	// Key extraction of the movable-key commands.
	for _, cmd := range [][]string{
		{"zunionstore", "dst", "2", "a", "b", "weights", "1", "2"}, {"zinterstore", "dst", "1", "a"}, {"zdiffstore", "dst", "2", "a", "b"},
		{"zunion", "2", "a", "b", "withscores"}, {"zinter", "3", "a", "b", "c"}, {"zdiff", "1", "a"}, {"zintercard", "2", "a", "b", "limit", "1"},
		{"zmpop", "2", "a", "b", "min"}, {"bzmpop", "0", "2", "a", "b", "max", "count", "2"}, {"bzpopmin", "a", "b", "0"},
		{"zrangestore", "dst", "src", "0", "-1"}, {"zunionstore", "dst", "x", "a"}, {"zunion", "5", "a"},
	} {
		add(append([]string{"command", "getkeys"}, cmd...)...)
	}
	return cmds
}

// zsetDiff runs cmds on both connections and compares replies. A skiplist
// set's ZSCAN order depends on the hash function, so unless listpackScan
// says every scanned set is a listpack, ZSCAN replies are compared as sets
// of member/score pairs after a complete scan. A complete scan may take a
// different number of calls on each server (each call is a keyspace hit),
// so zsetDiff returns how many more ZSCAN calls our side made.
func zsetDiff(t *testing.T, ours, real *testConn, cmds [][]string, label string, listpackScan bool) (extraScanHits int) {
	t.Helper()
	for i, cmd := range cmds {
		if cmd[0] == "zscan" && !listpackScan && len(cmd) == 3 && cmd[2] == "0" {
			got, ourCalls := zscanAll(t, ours, cmd[1])
			want, realCalls := zscanAll(t, real, cmd[1])
			if got != want {
				t.Errorf("%s step %d full %q\n got %q\nwant %q", label, i, cmd, got, want)
			}
			extraScanHits += ourCalls - realCalls
			continue
		}
		if cmd[0] == "zscan" && !listpackScan {
			ours.do(cmd...)
			real.do(cmd...)
			continue
		}
		got, want := ours.do(cmd...), real.do(cmd...)
		if got != want {
			t.Errorf("%s step %d %q\n got %q\nwant %q", label, i, cmd, got, want)
		}
	}
	return extraScanHits
}

func TestZSetDifferential(t *testing.T) {
	realAddr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	for _, resp := range []string{"2", "3"} {
		for _, entries := range []string{"128", "0", "3"} {
			ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
			setup := [][]string{{"flushall"}, {"hello", resp}, {"config", "set", "zset-max-listpack-entries", entries}, {"config", "resetstat"}}
			for _, cmd := range setup {
				ours.do(cmd...)
				real.do(cmd...)
			}
			extra := zsetDiff(t, ours, real, zsetScript(), "resp"+resp+"/entries"+entries, entries == "128")
			// Reads count keyspace hits and misses, writes do not, as in Redis.
			if got, want := keyspaceStatsAdjusted(ours.do("info", "stats"), extra), keyspaceStats(real.do("info", "stats")); got != want {
				t.Errorf("resp%s/entries%s keyspace stats %s, Redis %s", resp, entries, got, want)
			}
		}
	}
}

// TestZSetRandomDifferential sends random sorted set commands over a small
// member space to both servers; every reply (scores included) must match.
func TestZSetRandomDifferential(t *testing.T) {
	realAddr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	rng := rand.New(rand.NewPCG(7, 11))
	ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
	for _, c := range [][]string{{"flushall"}, {"config", "set", "zset-max-listpack-entries", "16"}} {
		ours.do(c...)
		real.do(c...)
	}
	keys := []string{"k1", "k2", "k3"}
	member := func() string { return fmt.Sprintf("m%d", rng.IntN(40)) }
	score := func() string {
		switch rng.IntN(12) {
		case 0:
			return "inf"
		case 1:
			return "-inf"
		case 2:
			return fmt.Sprintf("%g", rng.Float64()*100)
		case 3:
			return "(" + fmt.Sprint(rng.IntN(20)-5)
		}
		return fmt.Sprint(rng.IntN(20) - 5)
	}
	lex := func() string {
		switch rng.IntN(6) {
		case 0:
			return "-"
		case 1:
			return "+"
		case 2:
			return "(" + member()
		}
		return "[" + member()
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 4000 && time.Now().Before(deadline); i++ {
		k := keys[rng.IntN(len(keys))]
		var cmd []string
		switch rng.IntN(20) {
		case 0, 1, 2:
			cmd = []string{"zadd", k}
			for _, o := range []string{"nx", "xx", "gt", "lt", "ch"} {
				if rng.IntN(8) == 0 {
					cmd = append(cmd, o)
				}
			}
			for n := rng.IntN(4) + 1; n > 0; n-- {
				s := score()
				s = strings.TrimPrefix(s, "(")
				cmd = append(cmd, s, member())
			}
		case 3:
			cmd = []string{"zincrby", k, strings.TrimPrefix(score(), "("), member()}
		case 4:
			cmd = []string{"zrem", k, member(), member()}
		case 5:
			cmd = []string{"zrange", k, fmt.Sprint(rng.IntN(30) - 15), fmt.Sprint(rng.IntN(30) - 15), "withscores"}
		case 6:
			cmd = []string{"zrangebyscore", k, score(), score(), "withscores", "limit", fmt.Sprint(rng.IntN(4)), fmt.Sprint(rng.IntN(6) - 1)}
		case 7:
			cmd = []string{"zrevrangebyscore", k, score(), score(), "withscores"}
		case 8:
			// Lex ranges are only defined when every score is equal (with
			// mixed scores even Redis's answer depends on the skiplist's
			// random levels): they use "lx", whose scores are all 0.
			if rng.IntN(2) == 0 {
				cmd = []string{"zadd", "lx", "0", member(), "0", member()}
			} else {
				cmd = []string{"zrangebylex", "lx", lex(), lex(), "limit", fmt.Sprint(rng.IntN(3)), fmt.Sprint(rng.IntN(5) - 1)}
			}
		case 9:
			cmd = []string{"zcount", k, score(), score()}
		case 10:
			cmd = []string{"zrank", k, member()}
		case 11:
			cmd = []string{"zremrangebyscore", k, score(), score()}
		case 12:
			cmd = []string{"zremrangebyrank", k, fmt.Sprint(rng.IntN(10) - 5), fmt.Sprint(rng.IntN(10) - 5)}
		case 13:
			ops := []string{"zunionstore", "zinterstore", "zdiffstore"}
			cmd = []string{ops[rng.IntN(3)], keys[rng.IntN(3)], "2", keys[rng.IntN(3)], keys[rng.IntN(3)]}
			if rng.IntN(2) == 0 && cmd[0] != "zdiffstore" {
				cmd = append(cmd, "weights", fmt.Sprint(rng.IntN(5)-2), "1.5", "aggregate", []string{"sum", "min", "max"}[rng.IntN(3)])
			}
		case 14:
			cmd = []string{[]string{"zpopmin", "zpopmax"}[rng.IntN(2)], k, fmt.Sprint(rng.IntN(3))}
		case 15:
			cmd = []string{"zrangestore", keys[rng.IntN(3)], k, score(), score(), "byscore"}
		case 16:
			cmd = []string{"zremrangebylex", "lx", lex(), lex()}
		case 17:
			cmd = []string{"zlexcount", "lx", lex(), lex()}
		case 18:
			cmd = []string{"zmscore", k, member(), member()}
		case 19:
			if rng.IntN(2) == 0 {
				cmd = []string{"zrevrank", k, member()}
			} else {
				cmd = []string{"debug", "digest-value", k, "lx"}
			}
		}
		got, want := ours.do(cmd...), real.do(cmd...)
		if got != want {
			t.Fatalf("step %d %q\n got %q\nwant %q", i, cmd, got, want)
		}
		if i%50 == 0 {
			for _, key := range append(keys, "lx") {
				for _, c := range [][]string{{"zrange", key, "0", "-1", "withscores"}, {"object", "encoding", key}} {
					if got, want := ours.do(c...), real.do(c...); got != want {
						t.Fatalf("after step %d %q\n got %q\nwant %q", i, c, got, want)
					}
				}
			}
		}
	}
}

// zscanAll runs a ZSCAN to completion and returns the sorted pairs found,
// or the error/reply text when the first call does not return a scan, and
// the number of calls that returned a scan.
func zscanAll(t *testing.T, tc *testConn, key string) (pairsText string, calls int) {
	t.Helper()
	seen := map[string]string{}
	cursor := "0"
	for i := 0; i < 10000; i++ {
		raw := tc.do("zscan", key, cursor)
		if !strings.HasPrefix(raw, "*2\r\n") {
			return raw, calls
		}
		calls++
		rv, err := testharness.ParseValue(raw)
		if err != nil {
			t.Fatalf("ZSCAN reply %q: %v", raw, err)
		}
		v, _ := rv.([]any)
		if len(v) != 2 {
			t.Fatalf("ZSCAN reply %q", raw)
		}
		cursor, _ = v[0].(string)
		vals, _ := v[1].([]any)
		for j := 0; j+1 < len(vals); j += 2 {
			seen[fmt.Sprint(vals[j])] = fmt.Sprint(vals[j+1])
		}
		if cursor == "0" {
			break
		}
	}
	var pairs []string
	for m, s := range seen {
		pairs = append(pairs, m+"="+s)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ","), calls
}

// TestZSetDigestMatchesRedis compares DEBUG DIGEST-VALUE and DEBUG DIGEST
// of sorted sets in both encodings.
func TestZSetDigestMatchesRedis(t *testing.T) {
	realAddr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
	cmds := [][]string{
		{"flushall"}, {"config", "set", "zset-max-listpack-entries", "2"},
		{"zadd", "small", "1", "a", "2.5", "b"},
		{"zadd", "big", "1", "a", "2.5", "b", "-inf", "c", "0.1", "d"},
		{"zadd", "one", "1", "a"},
	}
	for _, c := range cmds {
		ours.do(c...)
		real.do(c...)
	}
	for _, c := range [][]string{{"debug", "digest-value", "small", "big", "one"}, {"debug", "digest"}} {
		if got, want := ours.do(c...), real.do(c...); got != want {
			t.Errorf("%q: %q, Redis %q", c, got, want)
		}
	}
}

// waitBlocked polls INFO until n clients are blocked.
func waitBlocked(t *testing.T, tc *testConn, n int) {
	t.Helper()
	want := fmt.Sprintf("blocked_clients:%d\r\n", n)
	for i := 0; i < 500; i++ {
		if strings.Contains(tc.do("info", "clients"), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %q", strings.TrimSpace(want))
}

func TestZSetBlockingPops(t *testing.T) {
	s := startTestServer(t)
	ctl := dialTest(t, s)
	// Served at once when a set has elements.
	ctl.do("zadd", "z", "1", "a", "2", "b")
	if got, want := ctl.do("bzpopmax", "none", "z", "0"), "*3\r\n$1\r\nz\r\n$1\r\nb\r\n$1\r\n2\r\n"; got != want {
		t.Fatalf("BZPOPMAX immediate: %q, want %q", got, want)
	}
	if got, want := ctl.do("bzmpop", "0", "1", "z", "min", "count", "5"), "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"; got != want {
		t.Fatalf("BZMPOP immediate: %q, want %q", got, want)
	}
	// Timeouts reply a null array.
	if got := ctl.do("bzpopmin", "z", "0.01"); got != "*-1\r\n" {
		t.Fatalf("BZPOPMIN timeout: %q", got)
	}
	for _, c := range []strCase{
		zc("-ERR timeout is not a float or out of range\r\n", "bzpopmin", "z", "x"),
		zc("-ERR timeout is negative\r\n", "bzpopmin", "z", "-1"),
		zc("-ERR numkeys should be greater than 0\r\n", "bzmpop", "x", "0", "z", "min"),
		zc("-ERR syntax error\r\n", "bzmpop", "0", "2", "z", "min"),
	} {
		if got := ctl.do(c.args...); got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	// FIFO waiters, served by ZADD before the writer's reply.
	w1, w2 := dialTest(t, s), dialTest(t, s)
	w1.send("bzpopmin", "k1", "k2", "0")
	waitBlocked(t, ctl, 1)
	w2.send("bzmpop", "0", "1", "k2", "max", "count", "2")
	waitBlocked(t, ctl, 2)
	if got := ctl.do("zadd", "k2", "1", "x", "2", "y", "3", "z"); got != ":3\r\n" {
		t.Fatalf("ZADD: %q", got)
	}
	if got, want := w1.read(), "*3\r\n$2\r\nk2\r\n$1\r\nx\r\n$1\r\n1\r\n"; got != want {
		t.Fatalf("first waiter: %q, want %q", got, want)
	}
	if got, want := w2.read(), "*2\r\n$2\r\nk2\r\n*2\r\n*2\r\n$1\r\nz\r\n$1\r\n3\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n"; got != want {
		t.Fatalf("second waiter: %q, want %q", got, want)
	}
	if got := ctl.do("exists", "k2"); got != ":0\r\n" {
		t.Fatalf("emptied set still exists: %q", got)
	}
	// ZUNIONSTORE into the awaited key wakes the waiter too.
	w1.send("bzpopmax", "dst", "0")
	waitBlocked(t, ctl, 1)
	ctl.do("zadd", "src", "5", "m")
	ctl.do("zunionstore", "dst", "1", "src")
	if got, want := w1.read(), "*3\r\n$3\r\ndst\r\n$1\r\nm\r\n$1\r\n5\r\n"; got != want {
		t.Fatalf("waiter after ZUNIONSTORE: %q, want %q", got, want)
	}
}

// keyspaceStats extracts keyspace_hits and keyspace_misses from INFO.
// keyspaceStatsAdjusted is keyspaceStats with extraHits taken off
// keyspace_hits.
func keyspaceStatsAdjusted(info string, extraHits int) string {
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if n, ok := strings.CutPrefix(line, "keyspace_hits:"); ok {
			hits, err := strconv.Atoi(n)
			if err != nil {
				return line
			}
			line = "keyspace_hits:" + strconv.Itoa(hits-extraHits)
		}
		if strings.HasPrefix(line, "keyspace_hits:") || strings.HasPrefix(line, "keyspace_misses:") {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

func keyspaceStats(info string) string {
	return keyspaceStatsAdjusted(info, 0)
}

// TestZSetArgumentFuzzDifferential sends random argument lists, built from
// tokens that mean something to these commands, to both servers: every
// reply must match (errors included), and nothing may panic.
func TestZSetArgumentFuzzDifferential(t *testing.T) {
	realAddr := startRealRedis(t)
	s := startTestServer(t)
	ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
	rng := rand.New(rand.NewPCG(21, 34))
	cmds := []string{"zadd", "zincrby", "zrem", "zcard", "zcount", "zlexcount", "zscore", "zmscore", "zrank", "zrevrank",
		"zrange", "zrangestore", "zrevrange", "zrangebyscore", "zrevrangebyscore", "zrangebylex", "zrevrangebylex",
		"zremrangebyscore", "zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax", "zmpop", "zunion", "zinter", "zdiff",
		"zunionstore", "zinterstore", "zdiffstore", "zintercard", "geoadd", "geodist", "geohash", "geopos", "georadius",
		"georadius_ro", "georadiusbymember", "geosearch", "geosearchstore", "bzpopmin", "bzmpop"}
	tokens := []string{"k1", "k2", "k3", "0", "1", "2", "-1", "3", "1.5", "-inf", "+inf", "(1", "[a", "(b", "-", "+", "a", "b", "c",
		"nx", "xx", "gt", "lt", "ch", "incr", "withscores", "limit", "rev", "byscore", "bylex", "weights", "aggregate", "sum",
		"min", "max", "count", "any", "asc", "desc", "withdist", "withcoord", "withhash", "store", "storedist", "frommember",
		"fromlonlat", "byradius", "bybox", "m", "km", "13.3", "38.1", "200", "nan", "x", "", "9999999999999999999"}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 6000 && time.Now().Before(deadline); i++ {
		cmd := []string{cmds[rng.IntN(len(cmds))]}
		for n := rng.IntN(9); n >= 0; n-- {
			cmd = append(cmd, tokens[rng.IntN(len(tokens))])
		}
		if cmd[0] == "bzpopmin" || cmd[0] == "bzmpop" {
			// Never block: a tiny timeout in the timeout position.
			if cmd[0] == "bzpopmin" {
				cmd[len(cmd)-1] = "0.001"
			} else if len(cmd) > 1 {
				cmd[1] = "0.001"
			}
		}
		got, want := ours.do(cmd...), real.do(cmd...)
		if got != want {
			t.Fatalf("step %d %q\n got %q\nwant %q", i, cmd, got, want)
		}
	}
}
