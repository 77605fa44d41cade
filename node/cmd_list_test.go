package node

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/store"
	"github.com/stretchr/testify/require"
)

// listStep is one request and the exact reply Redis 7.0.15 sends (checked
// against a live redis-server by TestListDifferentialScript, which replays
// the same requests).
type listStep struct {
	args []string
	want string
}

func ls(want string, args ...string) listStep { return listStep{args: args, want: want} }

func runListSteps(t *testing.T, tc *testConn, steps []listStep) {
	t.Helper()
	for i, st := range steps {
		require.Equal(t, st.want, tc.do(st.args...), "step %d: %q", i, st.args)
	}
}

const (
	lErrNotInt    = "-ERR value is not an integer or out of range\r\n"
	lErrWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	lErrSyntax    = "-ERR syntax error\r\n"
	lNull         = "$-1\r\n"
	lNullArray    = "*-1\r\n"
	lEmpty        = "*0\r\n"
)

// listExactSteps covers every list command's reply shapes and error texts.
func listExactSteps() []listStep {
	return []listStep{
		// push family
		ls(":3\r\n", "RPUSH", "l", "a", "b", "c"),
		ls(":5\r\n", "LPUSH", "l", "y", "z"),
		ls("*5\r\n$1\r\nz\r\n$1\r\ny\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "LRANGE", "l", "0", "-1"),
		ls("$9\r\nquicklist\r\n", "OBJECT", "ENCODING", "l"),
		ls("+list\r\n", "TYPE", "l"),
		ls(":0\r\n", "LPUSHX", "nokey", "a"),
		ls(":0\r\n", "RPUSHX", "nokey", "a", "b"),
		ls(":0\r\n", "EXISTS", "nokey"),
		ls(":6\r\n", "RPUSHX", "l", "d"),
		ls(":7\r\n", "LPUSHX", "l", "x"),
		ls("+OK\r\n", "SET", "str", "v"),
		ls(lErrWrongType, "LPUSH", "str", "a"),
		ls(lErrWrongType, "RPUSHX", "str", "a"),
		ls("-ERR wrong number of arguments for 'lpush' command\r\n", "LPUSH", "l"),
		// LLEN / LINDEX
		ls(":7\r\n", "LLEN", "l"),
		ls(":0\r\n", "LLEN", "nokey"),
		ls(lErrWrongType, "LLEN", "str"),
		ls("$1\r\nx\r\n", "LINDEX", "l", "0"),
		ls("$1\r\nd\r\n", "LINDEX", "l", "-1"),
		ls(lNull, "LINDEX", "l", "7"),
		ls(lNull, "LINDEX", "l", "-8"),
		ls(lNull, "LINDEX", "nokey", "abc"),
		ls(lErrNotInt, "LINDEX", "l", "abc"),
		ls(lErrWrongType, "LINDEX", "str", "abc"),
		ls(lNull, "LINDEX", "l", "9223372036854775807"),
		ls(lNull, "LINDEX", "l", "-9223372036854775808"),
		// LSET
		ls("+OK\r\n", "LSET", "l", "1", "Z"),
		ls("+OK\r\n", "LSET", "l", "-1", "D"),
		ls("-ERR index out of range\r\n", "LSET", "l", "7", "q"),
		ls("-ERR index out of range\r\n", "LSET", "l", "-8", "q"),
		ls("-ERR no such key\r\n", "LSET", "nokey", "0", "q"),
		ls("-ERR no such key\r\n", "LSET", "nokey", "abc", "q"),
		ls(lErrNotInt, "LSET", "l", "abc", "q"),
		ls(lErrWrongType, "LSET", "str", "0", "q"),
		ls("*7\r\n$1\r\nx\r\n$1\r\nZ\r\n$1\r\ny\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nD\r\n", "LRANGE", "l", "0", "-1"),
		// LINSERT
		ls(":8\r\n", "LINSERT", "l", "BEFORE", "a", "before-a"),
		ls(":9\r\n", "LINSERT", "l", "after", "D", "after-D"),
		ls(":-1\r\n", "LINSERT", "l", "after", "nothere", "v"),
		ls(":0\r\n", "LINSERT", "nokey", "after", "a", "v"),
		ls(lErrSyntax, "LINSERT", "l", "middle", "a", "v"),
		ls(lErrSyntax, "LINSERT", "nokey", "middle", "a", "v"),
		ls(lErrWrongType, "LINSERT", "str", "after", "a", "v"),
		ls("$7\r\nafter-D\r\n", "LINDEX", "l", "-1"),
		// LRANGE
		ls("*2\r\n$1\r\nx\r\n$1\r\nZ\r\n", "LRANGE", "l", "0", "1"),
		ls("*2\r\n$1\r\nD\r\n$7\r\nafter-D\r\n", "LRANGE", "l", "-2", "100"),
		ls(lEmpty, "LRANGE", "l", "5", "2"),
		ls(lEmpty, "LRANGE", "l", "100", "200"),
		ls(lEmpty, "LRANGE", "nokey", "0", "-1"),
		ls(lErrNotInt, "LRANGE", "l", "a", "1"),
		ls(lErrNotInt, "LRANGE", "nokey", "0", "b"),
		ls(lErrWrongType, "LRANGE", "str", "0", "-1"),
		ls(":9\r\n", "LLEN", "l"),
		// LPOP / RPOP
		ls("$1\r\nx\r\n", "LPOP", "l"),
		ls("$7\r\nafter-D\r\n", "RPOP", "l"),
		ls("*2\r\n$1\r\nZ\r\n$1\r\ny\r\n", "LPOP", "l", "2"),
		ls("*2\r\n$1\r\nD\r\n$1\r\nc\r\n", "RPOP", "l", "2"),
		ls(lEmpty, "LPOP", "l", "0"),
		ls(lNull, "LPOP", "nokey"),
		ls(lNullArray, "LPOP", "nokey", "2"),
		ls(lNullArray, "RPOP", "nokey", "0"),
		ls("-ERR value is out of range, must be positive\r\n", "LPOP", "l", "-1"),
		ls("-ERR value is out of range, must be positive\r\n", "RPOP", "l", "abc"),
		ls("-ERR wrong number of arguments for 'lpop' command\r\n", "LPOP", "l", "1", "2"),
		ls(lErrWrongType, "RPOP", "str"),
		ls(lErrWrongType, "LPOP", "str", "1"),
		ls("*3\r\n$8\r\nbefore-a\r\n$1\r\na\r\n$1\r\nb\r\n", "LPOP", "l", "100"),
		ls(":0\r\n", "EXISTS", "l"),
		// LTRIM
		ls(":6\r\n", "RPUSH", "t", "1", "2", "3", "4", "5", "6"),
		ls("+OK\r\n", "LTRIM", "t", "1", "-2"),
		ls("*4\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n", "LRANGE", "t", "0", "-1"),
		ls("+OK\r\n", "LTRIM", "t", "-100", "100"),
		ls(":4\r\n", "LLEN", "t"),
		ls("+OK\r\n", "LTRIM", "nokey", "0", "1"),
		ls(lErrNotInt, "LTRIM", "t", "x", "1"),
		ls(lErrWrongType, "LTRIM", "str", "0", "1"),
		ls("+OK\r\n", "LTRIM", "t", "3", "1"),
		ls(":0\r\n", "EXISTS", "t"),
		// LREM
		ls(":7\r\n", "RPUSH", "r", "a", "b", "a", "c", "a", "b", "a"),
		ls(":2\r\n", "LREM", "r", "2", "a"),
		ls("*5\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n", "LRANGE", "r", "0", "-1"),
		ls(":1\r\n", "LREM", "r", "-1", "b"),
		ls(":2\r\n", "LREM", "r", "0", "a"),
		ls(":0\r\n", "LREM", "r", "0", "zz"),
		ls(":0\r\n", "LREM", "nokey", "0", "a"),
		ls(lErrNotInt, "LREM", "nokey", "x", "a"),
		ls(lErrWrongType, "LREM", "str", "0", "a"),
		ls(":1\r\n", "LREM", "r", "-9223372036854775808", "b"),
		ls(":1\r\n", "LREM", "r", "1", "c"),
		ls(":0\r\n", "EXISTS", "r"),
		// LPOS
		ls(":6\r\n", "RPUSH", "p", "a", "b", "a", "c", "a", "b"),
		ls(":0\r\n", "LPOS", "p", "a"),
		ls(":2\r\n", "LPOS", "p", "a", "RANK", "2"),
		ls(":4\r\n", "LPOS", "p", "a", "RANK", "-1"),
		ls(":2\r\n", "LPOS", "p", "a", "RANK", "-2"),
		ls(lNull, "LPOS", "p", "a", "RANK", "4"),
		ls(lNull, "LPOS", "p", "zz"),
		ls("*3\r\n:0\r\n:2\r\n:4\r\n", "LPOS", "p", "a", "COUNT", "0"),
		ls("*2\r\n:0\r\n:2\r\n", "LPOS", "p", "a", "COUNT", "2"),
		ls("*2\r\n:4\r\n:2\r\n", "LPOS", "p", "a", "RANK", "-1", "COUNT", "2"),
		ls("*1\r\n:0\r\n", "LPOS", "p", "a", "COUNT", "0", "MAXLEN", "2"),
		ls("*0\r\n", "LPOS", "p", "zz", "COUNT", "0"),
		ls(lNull, "LPOS", "p", "a", "MAXLEN", "0", "RANK", "9"),
		ls(lNull, "LPOS", "p", "c", "MAXLEN", "3"),
		ls(":3\r\n", "LPOS", "p", "c", "MAXLEN", "4"),
		ls(lEmpty, "LPOS", "nokey", "a", "COUNT", "1"),
		ls(lNull, "LPOS", "nokey", "a"),
		ls(":4\r\n", "LPOS", "p", "a", "RANK", "-9223372036854775808"),
		ls("*3\r\n:4\r\n:2\r\n:0\r\n", "LPOS", "p", "a", "RANK", "-9223372036854775808", "COUNT", "2"),
		ls(lNull, "LPOS", "p", "a", "RANK", "9223372036854775807"),
		ls("-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n", "LPOS", "p", "a", "RANK", "0"),
		ls(lErrNotInt, "LPOS", "p", "a", "RANK", "x"),
		ls("-ERR COUNT can't be negative\r\n", "LPOS", "p", "a", "COUNT", "-1"),
		ls("-ERR COUNT can't be negative\r\n", "LPOS", "p", "a", "COUNT", "x"),
		ls("-ERR MAXLEN can't be negative\r\n", "LPOS", "p", "a", "MAXLEN", "-1"),
		ls(lErrSyntax, "LPOS", "p", "a", "RANK"),
		ls(lErrSyntax, "LPOS", "p", "a", "FOO", "1"),
		ls(lErrSyntax, "LPOS", "nokey", "a", "FOO", "1"),
		ls(lErrWrongType, "LPOS", "str", "a"),
		// LMOVE / RPOPLPUSH
		ls(":3\r\n", "RPUSH", "src{t}", "1", "2", "3"),
		ls("$1\r\n3\r\n", "RPOPLPUSH", "src{t}", "dst{t}"),
		ls("$1\r\n1\r\n", "LMOVE", "src{t}", "dst{t}", "LEFT", "RIGHT"),
		ls("$1\r\n2\r\n", "LMOVE", "src{t}", "src{t}", "left", "left"),
		ls("*2\r\n$1\r\n3\r\n$1\r\n1\r\n", "LRANGE", "dst{t}", "0", "-1"),
		ls("$1\r\n1\r\n", "LMOVE", "dst{t}", "dst{t}", "RIGHT", "LEFT"),
		ls("*2\r\n$1\r\n1\r\n$1\r\n3\r\n", "LRANGE", "dst{t}", "0", "-1"),
		ls("$1\r\n2\r\n", "LMOVE", "src{t}", "dst{t}", "RIGHT", "RIGHT"),
		ls(":0\r\n", "EXISTS", "src{t}"),
		ls(lNull, "LMOVE", "src{t}", "dst{t}", "LEFT", "LEFT"),
		ls(lNull, "RPOPLPUSH", "src{t}", "dst{t}"),
		ls(lErrSyntax, "LMOVE", "dst{t}", "src{t}", "UP", "LEFT"),
		ls(lErrSyntax, "LMOVE", "dst{t}", "src{t}", "LEFT", "DOWN"),
		ls("+OK\r\n", "SET", "s{t}", "v"),
		ls(lErrWrongType, "LMOVE", "dst{t}", "s{t}", "LEFT", "LEFT"),
		ls(lErrWrongType, "RPOPLPUSH", "s{t}", "dst{t}"),
		ls(":3\r\n", "LLEN", "dst{t}"),
		// LMPOP
		ls(":3\r\n", "RPUSH", "m2{t}", "a", "b", "c"),
		ls("*2\r\n$5\r\nm2{t}\r\n*1\r\n$1\r\na\r\n", "LMPOP", "2", "m1{t}", "m2{t}", "LEFT"),
		ls("*2\r\n$5\r\nm2{t}\r\n*2\r\n$1\r\nc\r\n$1\r\nb\r\n", "LMPOP", "2", "m1{t}", "m2{t}", "RIGHT", "COUNT", "10"),
		ls(lNullArray, "LMPOP", "2", "m1{t}", "m2{t}", "RIGHT"),
		ls("-ERR numkeys should be greater than 0\r\n", "LMPOP", "0", "m1{t}", "LEFT"),
		ls("-ERR numkeys should be greater than 0\r\n", "LMPOP", "x", "m1{t}", "LEFT"),
		ls(lErrSyntax, "LMPOP", "5", "m1{t}", "LEFT"),
		ls(lErrSyntax, "LMPOP", "1", "m1{t}", "UP"),
		ls("-ERR count should be greater than 0\r\n", "LMPOP", "1", "m1{t}", "LEFT", "COUNT", "0"),
		ls("-ERR count should be greater than 0\r\n", "LMPOP", "1", "m1{t}", "LEFT", "COUNT", "x"),
		ls(lErrSyntax, "LMPOP", "1", "m1{t}", "LEFT", "COUNT", "1", "COUNT", "1"),
		ls(lErrSyntax, "LMPOP", "1", "m1{t}", "LEFT", "COUNT"),
		ls(lErrWrongType, "LMPOP", "2", "m1{t}", "s{t}", "LEFT"),
		ls("-ERR wrong number of arguments for 'lmpop' command\r\n", "LMPOP", "1", "m1{t}"),
		// blocking variants that do not block
		ls(":2\r\n", "RPUSH", "b{t}", "x", "y"),
		ls("*2\r\n$4\r\nb{t}\r\n$1\r\nx\r\n", "BLPOP", "none{t}", "b{t}", "0"),
		ls("*2\r\n$4\r\nb{t}\r\n$1\r\ny\r\n", "BRPOP", "b{t}", "1"),
		ls(lNullArray, "BLPOP", "b{t}", "0.01"),
		ls(lNullArray, "BRPOPLPUSH", "b{t}", "c{t}", "0.01"),
		ls(lNullArray, "BLMOVE", "b{t}", "c{t}", "LEFT", "LEFT", "0.01"),
		ls(lNullArray, "BLMPOP", "0.01", "1", "b{t}", "LEFT"),
		ls("-ERR timeout is negative\r\n", "BLPOP", "b{t}", "-1"),
		ls("-ERR timeout is negative\r\n", "BLPOP", "b{t}", "inf"),
		ls("-ERR timeout is negative\r\n", "BLPOP", "b{t}", "1e400"),
		ls("-ERR timeout is negative\r\n", "BRPOP", "b{t}", "9223372036854775807"),
		ls("-ERR timeout is not a float or out of range\r\n", "BLPOP", "b{t}", "abc"),
		ls("-ERR timeout is not a float or out of range\r\n", "BLMOVE", "b{t}", "c{t}", "LEFT", "LEFT", "nan"),
		ls(lErrSyntax, "BLMOVE", "b{t}", "c{t}", "LEFT", "UP", "abc"),
		ls("-ERR timeout is not a float or out of range\r\n", "BLMPOP", "x", "1", "b{t}", "LEFT"),
		ls("-ERR numkeys should be greater than 0\r\n", "BLMPOP", "0", "x", "b{t}", "LEFT"),
		ls(lErrSyntax, "BLMPOP", "0", "1", "b{t}", "LEFT", "COUNT", "1", "x"),
		ls(lErrWrongType, "BLPOP", "b{t}", "s{t}", "0"),
		ls(lErrWrongType, "BLMOVE", "s{t}", "c{t}", "LEFT", "LEFT", "0"),
		ls(":1\r\n", "RPUSH", "b{t}", "z"),
		ls(lErrWrongType, "BLMOVE", "b{t}", "s{t}", "LEFT", "LEFT", "0"),
		ls("*2\r\n$4\r\nb{t}\r\n*1\r\n$1\r\nz\r\n", "BLMPOP", "0", "2", "s2{t}", "b{t}", "RIGHT", "COUNT", "5"),
		// binary-safe elements
		ls(":2\r\n", "RPUSH", "bin", "a\x00b", ""),
		ls("*2\r\n$3\r\na\x00b\r\n$0\r\n\r\n", "LRANGE", "bin", "0", "-1"),
		ls(":1\r\n", "LPOS", "bin", ""),
	}
}

func TestListRepliesExact(t *testing.T) {
	s := startTestServer(t)
	runListSteps(t, dialTest(t, s), listExactSteps())
}

func TestListRESP3(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("HELLO", "3")
	runListSteps(t, tc, []listStep{
		ls("_\r\n", "LPOP", "nokey"),
		ls("_\r\n", "LPOP", "nokey", "1"),
		ls("_\r\n", "LINDEX", "nokey", "0"),
		ls("_\r\n", "LMPOP", "1", "nokey", "LEFT"),
		ls("_\r\n", "BLPOP", "nokey", "0.01"),
		ls("_\r\n", "BLMOVE", "nokey", "x", "LEFT", "LEFT", "0.01"),
		ls("_\r\n", "LPOS", "nokey", "a"),
	})
}

// TestListDifferentialScript replays listExactSteps against a real
// redis-server, so the expected replies above are Redis's own.
func TestListDifferentialScript(t *testing.T) {
	addr := startRealRedis(t)
	tc := dialTestAddr(t, addr)
	runListSteps(t, tc, listExactSteps())
}

// TestListRandomDifferential sends the same random list commands to shoal
// and to a real redis-server and compares every reply byte for byte,
// including DEBUG DIGEST-VALUE of the keys.
func TestListRandomDifferential(t *testing.T) {
	addr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	redis := dialTestAddr(t, addr)
	shoal := dialTest(t, s)
	for _, tc := range []*testConn{redis, shoal} {
		tc.do("CONFIG", "SET", "list-max-listpack-size", "4")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []string{"k1{a}", "k2{a}", "k3{a}", "str{a}"}
	elems := []string{"a", "b", "c", "1", "2", "-3", "", "xyz", strings.Repeat("L", 300), "0"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	idx := func() string {
		if rng.IntN(10) == 0 {
			return pick([]string{"x", "9223372036854775807", "-9223372036854775808", "1.5"})
		}
		return strconv.Itoa(rng.IntN(16) - 8)
	}
	end := func() string { return pick([]string{"LEFT", "RIGHT", "left", "right"}) }
	gen := func() []string {
		k := pick(keys)
		switch rng.IntN(22) {
		case 0, 1, 2:
			args := []string{pick([]string{"LPUSH", "RPUSH"}), k}
			for range rng.IntN(5) + 1 {
				args = append(args, pick(elems))
			}
			return args
		case 3:
			return []string{pick([]string{"LPUSHX", "RPUSHX"}), k, pick(elems)}
		case 4:
			if rng.IntN(3) == 0 {
				return []string{pick([]string{"LPOP", "RPOP"}), k, strconv.Itoa(rng.IntN(5))}
			}
			return []string{pick([]string{"LPOP", "RPOP"}), k}
		case 5:
			return []string{"LRANGE", k, idx(), idx()}
		case 6:
			return []string{"LINDEX", k, idx()}
		case 7:
			return []string{"LSET", k, idx(), pick(elems)}
		case 8:
			return []string{"LINSERT", k, pick([]string{"BEFORE", "AFTER"}), pick(elems), pick(elems)}
		case 9:
			return []string{"LREM", k, strconv.Itoa(rng.IntN(7) - 3), pick(elems)}
		case 10:
			return []string{"LTRIM", k, idx(), idx()}
		case 11:
			args := []string{"LPOS", k, pick(elems)}
			for range rng.IntN(3) {
				switch rng.IntN(3) {
				case 0:
					args = append(args, "RANK", strconv.Itoa(rng.IntN(7)-3))
				case 1:
					args = append(args, "COUNT", strconv.Itoa(rng.IntN(4)))
				default:
					args = append(args, "MAXLEN", strconv.Itoa(rng.IntN(6)))
				}
			}
			return args
		case 12:
			return []string{"LMOVE", k, pick(keys), end(), end()}
		case 13:
			return []string{"RPOPLPUSH", k, pick(keys)}
		case 14:
			args := []string{"LMPOP", "2", k, pick(keys), end()}
			if rng.IntN(2) == 0 {
				args = append(args, "COUNT", strconv.Itoa(rng.IntN(4)+1))
			}
			return args
		case 15:
			return []string{pick([]string{"BLPOP", "BRPOP"}), k, pick(keys), "0.001"}
		case 16:
			return []string{"BLMOVE", k, pick(keys), end(), end(), "0.001"}
		case 17:
			return []string{"LLEN", k}
		case 18:
			return []string{"DEBUG", "DIGEST-VALUE", k}
		case 19:
			return []string{"OBJECT", "ENCODING", k}
		case 20:
			if rng.IntN(4) == 0 {
				return []string{"DEL", k}
			}
			return []string{"LRANGE", k, "0", "-1"}
		default:
			return []string{"SET", "str{a}", "v"}
		}
	}
	for i := range 3000 {
		args := gen()
		want := redis.do(args...)
		got := shoal.do(args...)
		require.Equal(t, want, got, "step %d: %q", i, args)
	}
	for _, k := range keys {
		require.Equal(t, redis.do("LRANGE", k, "0", "-1"), shoal.do("LRANGE", k, "0", "-1"))
	}
	require.Equal(t, redis.do("DEBUG", "DIGEST"), shoal.do("DEBUG", "DIGEST"))
}

// TestListLargeValues moves big lists and elements through the commands.
func TestListLargeValues(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	big := strings.Repeat("x", 100_000)
	require.Equal(t, ":1\r\n", tc.do("RPUSH", "big", big))
	for i := range 2000 {
		tc.send("RPUSH", "big", strconv.Itoa(i))
	}
	for range 2000 {
		tc.read()
	}
	require.Equal(t, ":2001\r\n", tc.do("LLEN", "big"))
	require.Equal(t, fmt.Sprintf("$%d\r\n%s\r\n", len(big), big), tc.do("LINDEX", "big", "0"))
	require.Equal(t, "$4\r\n1000\r\n", tc.do("LINDEX", "big", "1001"))
	require.Equal(t, ":1001\r\n", tc.do("LPOS", "big", "1000"))
	require.Equal(t, "+OK\r\n", tc.do("LSET", "big", "1001", big))
	require.Equal(t, ":1001\r\n", tc.do("LPOS", "big", big, "RANK", "2"))
	require.Equal(t, ":2\r\n", tc.do("LREM", "big", "0", big))
	require.Equal(t, ":1999\r\n", tc.do("LLEN", "big"))
	require.Equal(t, "+OK\r\n", tc.do("LTRIM", "big", "10", "-10"))
	require.Equal(t, "*2\r\n$2\r\n10\r\n$2\r\n11\r\n", tc.do("LRANGE", "big", "0", "1"))
}

func TestDebugQuicklistPackedThreshold(t *testing.T) {
	s := startTestServer(t)
	defer store.SetListPackedThreshold(0)
	c := s.bindClient(&Client{srv: s})
	c.Proto = 2
	for _, tc := range []struct{ arg, want string }{
		{"1b", "+OK\r\n"},
		{"100", "+OK\r\n"},
		{"5KB", "+OK\r\n"},
		{"0", "+OK\r\n"},
		{"4gb", "-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n"},
		{"-1", "-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n"},
		{"1x", "-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n"},
		{"1b", "+OK\r\n"},
	} {
		c.Out = c.Out[:0]
		debugQuicklistPackedThreshold(c, []byte(tc.arg))
		require.Equal(t, tc.want, string(c.Out), tc.arg)
	}
	// With every element in a plain node of its own the commands behave
	// the same.
	tc := dialTest(t, s)
	runListSteps(t, tc, []listStep{
		ls(":3\r\n", "RPUSH", "pl", "aa", "bb", "cc"),
		ls("+OK\r\n", "LSET", "pl", "1", "BB"),
		ls(":4\r\n", "LINSERT", "pl", "AFTER", "BB", "x"),
		ls("*4\r\n$2\r\naa\r\n$2\r\nBB\r\n$1\r\nx\r\n$2\r\ncc\r\n", "LRANGE", "pl", "0", "-1"),
		ls(":1\r\n", "LREM", "pl", "0", "x"),
		ls("+OK\r\n", "LTRIM", "pl", "1", "-1"),
		ls("*2\r\n$2\r\nBB\r\n$2\r\ncc\r\n", "LRANGE", "pl", "0", "-1"),
	})
}

func TestListDebugObjectExtra(t *testing.T) {
	s := startTestServer(t)
	c := s.bindClient(&Client{srv: s})
	c.Proto = 2
	l := store.NewList(-2)
	for _, v := range []string{"a", "b", "c"} {
		l.Push([]byte(v), false)
	}
	// What Redis 7.0 prints for RPUSH dl a b c with the default settings.
	require.Equal(t, " ql_nodes:1 ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:16", listDebugObjectExtra(c, l))
}
