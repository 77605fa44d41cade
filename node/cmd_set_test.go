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
	"github.com/stretchr/testify/require"
)

// setReplyCases run in order on one RESP2 connection to an empty database;
// "str" holds a string. Intsets reply in ascending order, so their replies
// are exact; hashtable sets appear here only where the order cannot vary.
var setReplyCases = []hsCase{
	hc(strOK, "SET", "str", "x"),
	// SADD / SCARD / SISMEMBER / SMISMEMBER / SMEMBERS
	hc(":3\r\n", "SADD", "s", "3", "1", "2"),
	hc(":1\r\n", "SADD", "s", "2", "-5", "2"),
	hc(hsArr("-5", "1", "2", "3"), "SMEMBERS", "s"),
	hc(bulk("intset"), "OBJECT", "ENCODING", "s"),
	hc(":4\r\n", "SCARD", "s"),
	hc(hsZero, "SCARD", "nokey"),
	hc(hsWrong, "SCARD", "str"),
	hc(hsOne, "SISMEMBER", "s", "1"),
	hc(hsZero, "SISMEMBER", "s", "01"),
	hc(hsZero, "SISMEMBER", "s", "x"),
	hc(hsZero, "SISMEMBER", "nokey", "1"),
	hc(hsWrong, "SISMEMBER", "str", "1"),
	hc("*3\r\n:1\r\n:0\r\n:1\r\n", "SMISMEMBER", "s", "1", "7", "-5"),
	hc("*2\r\n:0\r\n:0\r\n", "SMISMEMBER", "nokey", "1", "7"),
	hc(hsWrong, "SMISMEMBER", "str", "1"),
	hc(hsArity("smismember"), "SMISMEMBER", "s"),
	hc(hsWrong, "SADD", "str", "1"),
	hc(hsEmptyArr, "SMEMBERS", "nokey"),
	hc(hsWrong, "SMEMBERS", "str"),
	hc(hsOne, "SADD", "hs", "a"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "hs"),
	hc(hsArr("a"), "SMEMBERS", "hs"),
	hc(hsOne, "SADD", "big", "213244124402402314402033402"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "big"),
	hc(hsOne, "SISMEMBER", "big", "213244124402402314402033402"),
	hc(hsOne, "SADD", "x", "9223372036854775807"),
	hc(hsOne, "SADD", "x", "-9223372036854775808"),
	hc(bulk("intset"), "OBJECT", "ENCODING", "x"),
	hc(hsArr("-9223372036854775808", "9223372036854775807"), "SMEMBERS", "x"),
	hc(hsOne, "SADD", "x", "9223372036854775808"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "x"),
	hc(hsOne, "SADD", "y", "-0"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "y"),
	// SREM: the emptied set disappears.
	hc(hsZero, "SREM", "s", "9", "x"),
	hc(":2\r\n", "SREM", "s", "1", "2", "1"),
	hc(hsArr("-5", "3"), "SMEMBERS", "s"),
	hc(hsZero, "SREM", "nokey", "1"),
	hc(hsWrong, "SREM", "str", "1"),
	hc(":1\r\n", "SREM", "hs", "a", "b"),
	hc(hsZero, "EXISTS", "hs"),
	// SMOVE
	hc(hsZero, "SMOVE", "nokey", "s", "1"),
	hc(hsZero, "SMOVE", "nokey", "str", "1"),
	hc(hsWrong, "SMOVE", "str", "s", "1"),
	hc(hsWrong, "SMOVE", "s", "str", "1"),
	hc(hsZero, "SMOVE", "s", "s", "9"),
	hc(hsOne, "SMOVE", "s", "s", "3"),
	hc(hsZero, "SMOVE", "s", "d", "9"),
	hc(hsOne, "SMOVE", "s", "d", "3"),
	hc(bulk("intset"), "OBJECT", "ENCODING", "d"),
	hc(hsOne, "SMOVE", "s", "d", "-5"),
	hc(hsZero, "EXISTS", "s"),
	hc(hsArr("-5", "3"), "SMEMBERS", "d"),
	hc(":2\r\n", "SADD", "h1", "a", "b"),
	hc(hsOne, "SMOVE", "h1", "d", "a"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "d"),
	hc(hsOne, "SMOVE", "d", "h1", "a"),
	hc(hsOne, "SADD", "d", "a"),
	hc(hsOne, "SMOVE", "d", "h1", "a"),
	// SPOP / SRANDMEMBER argument handling, missing and empty replies.
	hc(hsNull, "SPOP", "nokey"),
	hc(hsEmptyArr, "SPOP", "nokey", "3"),
	hc(hsEmptyArr, "SPOP", "d", "0"),
	hc("-ERR value is out of range, must be positive\r\n", "SPOP", "d", "-1"),
	hc("-ERR value is out of range, must be positive\r\n", "SPOP", "d", "x"),
	hc("-ERR value is out of range, must be positive\r\n", "SPOP", "nokey", "x"),
	hc(strSyntax, "SPOP", "d", "1", "2"),
	hc(hsWrong, "SPOP", "str"),
	hc(hsWrong, "SPOP", "str", "1"),
	hc(hsNull, "SRANDMEMBER", "nokey"),
	hc(hsEmptyArr, "SRANDMEMBER", "nokey", "3"),
	hc(hsEmptyArr, "SRANDMEMBER", "d", "0"),
	hc(strNotInt, "SRANDMEMBER", "d", "x"),
	hc(strNotInt, "SRANDMEMBER", "nokey", "x"),
	hc("-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n",
		"SRANDMEMBER", "d", "-9223372036854775808"),
	hc(strSyntax, "SRANDMEMBER", "d", "1", "2"),
	hc(hsWrong, "SRANDMEMBER", "str"),
	hc(hsWrong, "SRANDMEMBER", "str", "1"),
	hc(":3\r\n", "SADD", "p", "1", "2", "3"),
	hc(hsArr("1", "2", "3"), "SRANDMEMBER", "p", "3"),
	hc(hsArr("1", "2", "3"), "SRANDMEMBER", "p", "30"),
	hc(hsArr("1", "2", "3"), "SPOP", "p", "30"),
	hc(hsZero, "EXISTS", "p"),
	hc(hsOne, "SADD", "p", "7"),
	hc(bulk("7"), "SRANDMEMBER", "p"),
	hc(hsArr("7", "7"), "SRANDMEMBER", "p", "-2"),
	hc(hsArr("7"), "SRANDMEMBER", "p", "1"),
	hc(bulk("7"), "SPOP", "p"),
	hc(hsZero, "EXISTS", "p"),
	// SINTER / SINTERCARD / SINTERSTORE
	hc(":5\r\n", "SADD", "a", "1", "2", "3", "4", "5"),
	hc(":4\r\n", "SADD", "b", "2", "3", "4", "9"),
	hc(":2\r\n", "SADD", "c", "3", "4"),
	hc(hsArr("2", "3", "4"), "SINTER", "a", "b"),
	hc(hsArr("3", "4"), "SINTER", "a", "b", "c"),
	hc(hsArr("1", "2", "3", "4", "5"), "SINTER", "a", "a"),
	hc(hsEmptyArr, "SINTER", "a", "nokey"),
	hc(hsWrong, "SINTER", "a", "str"),
	hc(hsWrong, "SINTER", "nokey", "str"),
	hc(hsWrong, "SINTER", "str", "nokey"),
	hc(":3\r\n", "SINTERCARD", "2", "a", "b"),
	hc(":2\r\n", "SINTERCARD", "2", "a", "b", "LIMIT", "2"),
	hc(":3\r\n", "SINTERCARD", "2", "a", "b", "limit", "0"),
	hc(":3\r\n", "SINTERCARD", "2", "a", "b", "LIMIT", "1", "LIMIT", "0"),
	hc(hsZero, "SINTERCARD", "1", "nokey"),
	hc(":5\r\n", "SINTERCARD", "1", "a"),
	hc("-ERR numkeys should be greater than 0\r\n", "SINTERCARD", "0", "a"),
	hc("-ERR numkeys should be greater than 0\r\n", "SINTERCARD", "x", "a"),
	hc("-ERR numkeys should be greater than 0\r\n", "SINTERCARD", "-1", "a"),
	hc("-ERR Number of keys can't be greater than number of args\r\n", "SINTERCARD", "3", "a", "b"),
	hc(strSyntax, "SINTERCARD", "1", "a", "b"),
	hc(strSyntax, "SINTERCARD", "1", "a", "LIMIT"),
	hc("-ERR LIMIT can't be negative\r\n", "SINTERCARD", "1", "a", "LIMIT", "-1"),
	hc("-ERR LIMIT can't be negative\r\n", "SINTERCARD", "1", "a", "LIMIT", "x"),
	hc(hsWrong, "SINTERCARD", "2", "a", "str"),
	hc(hsArity("sintercard"), "SINTERCARD", "1"),
	hc(":3\r\n", "SINTERSTORE", "dst", "a", "b"),
	hc(hsArr("2", "3", "4"), "SMEMBERS", "dst"),
	hc(bulk("intset"), "OBJECT", "ENCODING", "dst"),
	hc(strOK, "SET", "dst2", "x"),
	hc(hsZero, "SINTERSTORE", "dst2", "a", "nokey"),
	hc(hsZero, "EXISTS", "dst2"),
	hc(hsZero, "SINTERSTORE", "dst", "a", "nokey"),
	hc(hsZero, "EXISTS", "dst"),
	hc(":1\r\n", "SADD", "dst", "x"),
	hc(hsWrong, "SINTERSTORE", "dst", "a", "str"),
	hc(hsArr("x"), "SMEMBERS", "dst"),
	hc(hsZero, "SINTERSTORE", "dst", "a", "hs0"),
	hc(":1\r\n", "SADD", "e", "100"),
	hc(hsZero, "SINTERSTORE", "dst", "a", "e"),
	hc(hsZero, "EXISTS", "dst"),
	hc(strOK, "SET", "dst", "x"),
	hc(":2\r\n", "SINTERSTORE", "dst", "c", "a"),
	hc(":-1\r\n", "TTL", "dst"),
	// SUNION / SDIFF and their STORE forms.
	hc(hsArr("1", "2", "3", "4", "5", "9"), "SUNION", "a", "b", "nokey"),
	hc(hsEmptyArr, "SUNION", "nokey"),
	hc(hsWrong, "SUNION", "a", "str"),
	hc(hsWrong, "SUNION", "nokey", "str"),
	hc(hsArr("1", "5"), "SDIFF", "a", "b"),
	hc(hsArr("1", "2", "5"), "SDIFF", "a", "c", "nokey"),
	hc(hsEmptyArr, "SDIFF", "nokey", "a"),
	hc(hsEmptyArr, "SDIFF", "a", "a"),
	hc(hsEmptyArr, "SDIFF", "a", "b", "a"),
	hc(hsWrong, "SDIFF", "a", "str"),
	hc(hsWrong, "SDIFF", "str", "a"),
	hc(":6\r\n", "SUNIONSTORE", "u", "a", "b"),
	hc(bulk("intset"), "OBJECT", "ENCODING", "u"),
	hc(":2\r\n", "SDIFFSTORE", "u", "a", "b"),
	hc(hsArr("1", "5"), "SMEMBERS", "u"),
	hc(hsZero, "SDIFFSTORE", "u", "nokey", "a"),
	hc(hsZero, "EXISTS", "u"),
	hc(hsZero, "SUNIONSTORE", "u", "nokey"),
	hc(hsWrong, "SUNIONSTORE", "u", "a", "str"),
	hc(hsWrong, "SDIFFSTORE", "u", "a", "str"),
	hc(":6\r\n", "SUNIONSTORE", "str2", "b", "a"),
	hc(hsOne, "SADD", "w", "word"),
	hc(":6\r\n", "SUNIONSTORE", "u", "a", "w"),
	hc(bulk("hashtable"), "OBJECT", "ENCODING", "u"),
	hc(hsArr("word"), "SDIFF", "w", "a"),
	// SSCAN on an intset: everything at once, cursor 0.
	hc("*2\r\n$1\r\n0\r\n"+hsArr("1", "2", "3", "4", "5"), "SSCAN", "a", "0"),
	hc("*2\r\n$1\r\n0\r\n"+hsArr("2"), "SSCAN", "a", "0", "MATCH", "2*"),
	hc("*2\r\n$1\r\n0\r\n"+hsArr("1", "2", "3", "4", "5"), "SSCAN", "a", "7", "COUNT", "1"),
	hc("*2\r\n$1\r\n0\r\n"+hsArr("word"), "SSCAN", "w", "0"),
	hc("*2\r\n$1\r\n0\r\n*0\r\n", "SSCAN", "nokey", "0"),
	hc("-ERR invalid cursor\r\n", "SSCAN", "a", "x"),
	hc(strNotInt, "SSCAN", "a", "0", "COUNT", "x"),
	hc(strSyntax, "SSCAN", "a", "0", "COUNT", "-1"),
	hc(strSyntax, "SSCAN", "a", "0", "TYPE", "set"),
	hc(strSyntax, "SSCAN", "a", "0", "FOO", "bar"),
	hc(hsWrong, "SSCAN", "str", "0"),
	hc("+set\r\n", "TYPE", "a"),
}

func TestSetReplies(t *testing.T) {
	s := startTestServer(t)
	hsRunCases(t, dialTest(t, s), setReplyCases)
}

func TestSetRepliesMatchRedis(t *testing.T) {
	hsRunCases(t, dialTestAddr(t, startRealRedis(t)), setReplyCases)
}

var setRESP3Cases = []hsCase{
	hc(":2\r\n", "SADD", "s", "1", "2"),
	hc("~2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SMEMBERS", "s"),
	hc("~0\r\n", "SMEMBERS", "nokey"),
	hc("~2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SINTER", "s", "s"),
	hc("~0\r\n", "SINTER", "s", "nokey"),
	hc("~2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SUNION", "s", "nokey"),
	hc("~0\r\n", "SDIFF", "s", "s"),
	hc("_\r\n", "SPOP", "nokey"),
	hc("~0\r\n", "SPOP", "nokey", "2"),
	hc("~0\r\n", "SPOP", "s", "0"),
	hc("_\r\n", "SRANDMEMBER", "nokey"),
	hc("*0\r\n", "SRANDMEMBER", "nokey", "2"),
	hc("*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SRANDMEMBER", "s", "2"),
	hc("*2\r\n:1\r\n:0\r\n", "SMISMEMBER", "s", "1", "3"),
	hc("~2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SPOP", "s", "5"),
}

func TestSetRESP3(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	hsHello3(t, tc)
	hsRunCases(t, tc, setRESP3Cases)
}

func TestSetRESP3MatchesRedis(t *testing.T) {
	tc := dialTestAddr(t, startRealRedis(t))
	hsHello3(t, tc)
	hsRunCases(t, tc, setRESP3Cases)
}

// TestSetEncodingTransitionsMatchRedis drives every intset → hashtable path
// (a string member, too many members, limits changed at run time, SMOVE,
// the STORE commands, SPOP rebuilding a set) and compares encodings.
func TestSetEncodingTransitionsMatchRedis(t *testing.T) {
	p := newHSPair(t)
	enc := func(key string) { p.t.Helper(); p.same("OBJECT", "ENCODING", key) }
	members := func(key string) { p.t.Helper(); p.sameUnordered(false, "SMEMBERS", key) }
	p.same("CONFIG", "SET", "set-max-intset-entries", "5")
	for i := range 6 {
		p.same("SADD", "s", strconv.Itoa(i*1000))
		enc("s")
	}
	members("s")
	p.same("SREM", "s", "0", "1000", "2000", "3000")
	enc("s")
	// The STORE commands build their result from an empty intset.
	p.same("SADD", "a", "1", "2", "3", "4", "5", "6", "7")
	p.same("SADD", "b", "5", "6", "7", "8", "9", "10", "11")
	p.same("SINTERSTORE", "r1", "a", "b")
	enc("r1")
	p.same("SUNIONSTORE", "r2", "a", "b")
	enc("r2")
	members("r2")
	p.same("SDIFFSTORE", "r3", "a", "b")
	enc("r3")
	members("r3")
	p.same("SDIFF", "a", "b")
	// SDIFF's second algorithm adds everything first: a big first set
	// converts the result even if the final result is small.
	p.same("CONFIG", "SET", "set-max-intset-entries", "512")
	args := []string{"SADD", "big"}
	for i := range 600 {
		args = append(args, strconv.Itoa(i))
	}
	p.same(args...)
	enc("big")
	p.same("SADD", "small", "1")
	p.same("SDIFFSTORE", "r4", "big", "small", "nokey")
	enc("r4")
	p.same("SCARD", "r4")
	args = []string{"SADD", "big2"}
	for i := range 598 {
		args = append(args, strconv.Itoa(i))
	}
	p.same(args...)
	p.same("SDIFFSTORE", "r5", "big", "big2")
	enc("r5")
	members("r5")
	p.same("SDIFFSTORE", "r6", "small", "big")
	p.same("SINTERSTORE", "r7", "big", "small")
	enc("r7")
	// A hashtable set of integers gives an intset result.
	p.same("SADD", "hint", "1", "2", "3", "x")
	p.same("SREM", "hint", "x")
	enc("hint")
	p.same("SINTERSTORE", "r8", "hint", "hint")
	enc("r8")
	p.same("SMEMBERS", "r8")
	p.same("SUNION", "hint", "a")
	// SPOP with a count close to the size rebuilds the set from the
	// survivors, as an intset when they are all integers.
	args = []string{"SADD", "pop"}
	for i := range 40 {
		args = append(args, strconv.Itoa(i))
	}
	p.same(append(args, "x")...)
	p.same("SREM", "pop", "x")
	enc("pop")
	sp := p.sho.do("SPOP", "pop", "38")
	rp := p.red.do("SPOP", "pop", "38")
	require.Equal(t, len(hsStrings(t, rp)), len(hsStrings(t, sp)))
	enc("pop")
	p.same("SCARD", "pop")
	p.same("DEL", "pop") // its contents differ now
	// SMOVE into an intset.
	p.same("SADD", "m1", "1", "a", "b")
	p.same("SADD", "m2", "2", "3")
	p.same("SMOVE", "m1", "m2", "1")
	enc("m2")
	p.same("SMOVE", "m1", "m2", "a")
	enc("m2")
	p.same("SMOVE", "m1", "m3", "b")
	enc("m3")
	p.same("SMOVE", "m2", "m4", "2")
	enc("m4")
	// Limit 0 converts at the first member.
	p.same("CONFIG", "SET", "set-max-intset-entries", "0")
	p.same("SADD", "z", "1")
	enc("z")
	p.same("CONFIG", "SET", "set-max-intset-entries", "512")
	p.same("COPY", "big", "bigcopy")
	enc("bigcopy")
	p.same("COPY", "a", "acopy")
	enc("acopy")
	p.same("DEBUG", "DIGEST-VALUE", "a", "acopy", "big", "bigcopy", "hint", "r8")
	p.same("DEBUG", "DIGEST")
	p.sameStats()
}

// TestSetBigMatchesRedis compares hashtable sets and the multi-key
// commands on them.
func TestSetBigMatchesRedis(t *testing.T) {
	p := newHSPair(t)
	a, b := []string{"SADD", "a"}, []string{"SADD", "b"}
	for i := range 3000 {
		a = append(a, fmt.Sprint("m", i))
		if i%3 == 0 {
			b = append(b, fmt.Sprint("m", i))
		}
	}
	b = append(b, "only-b")
	p.same(a...)
	p.same(b...)
	p.same("SCARD", "a")
	p.same("SMISMEMBER", "a", "m1", "m2999", "m3000", "only-b")
	for _, c := range [][]string{
		{"SMEMBERS", "a"}, {"SINTER", "a", "b"}, {"SUNION", "a", "b"}, {"SDIFF", "a", "b"}, {"SDIFF", "b", "a"},
	} {
		p.sameUnordered(false, c...)
	}
	p.same("SINTERCARD", "2", "a", "b")
	p.same("SINTERCARD", "2", "a", "b", "LIMIT", "10")
	for _, opts := range [][]string{nil, {"COUNT", "100"}, {"MATCH", "m1*"}} {
		p.sameScan(false, "SSCAN", "a", opts...)
	}
	p.same("SINTERSTORE", "i", "a", "b")
	p.same("SUNIONSTORE", "u", "a", "b")
	p.same("SDIFFSTORE", "d", "a", "b")
	p.same("DEBUG", "DIGEST-VALUE", "a", "b", "i", "u", "d")
	for i := 0; i < 3000; i += 2 {
		p.same("SREM", "a", fmt.Sprint("m", i))
	}
	p.sameUnordered(false, "SPOP", "b", "2000") // count >= size: the whole set
	p.same("EXISTS", "b")
	p.same("DEBUG", "DIGEST")
	p.sameStats()
}

// TestSetRandomMatchesRedis sends the same random set commands to both
// servers and requires identical replies (unordered where Redis's order is
// its hash table's, by shape for the random commands).
func TestSetRandomMatchesRedis(t *testing.T) {
	p := newHSPair(t)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 43))
	p.same("CONFIG", "SET", "set-max-intset-entries", "20")
	p.same("SET", "str", "x")
	keys := []string{"s1", "s2", "s3", "s4", "str", "nokey"}
	members := []string{"0", "1", "2", "3", "-1", "10", "100", "1000000", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "01", "+1", "a", "b", "c", "", " 1"}
	for i := range 25 {
		members = append(members, strconv.Itoa(i+200))
	}
	pick := func(pool []string) string { return pool[r.IntN(len(pool))] }
	for i := range 4000 {
		k := pick(keys)
		var cmd []string
		switch r.IntN(17) {
		case 0, 1, 2:
			cmd = []string{"SADD", k}
			for n := 1 + r.IntN(4); n > 0; n-- {
				cmd = append(cmd, pick(members))
			}
		case 3:
			cmd = []string{"SREM", k, pick(members), pick(members)}
		case 4:
			cmd = []string{pick([]string{"SISMEMBER", "SCARD"}), k, pick(members)}
			if cmd[0] == "SCARD" {
				cmd = cmd[:2]
			}
		case 5:
			cmd = []string{"SMISMEMBER", k, pick(members), pick(members)}
		case 6:
			cmd = []string{"SMOVE", k, pick(keys), pick(members)}
		case 7:
			cmd = []string{"SMEMBERS", k}
		case 8:
			cmd = []string{pick([]string{"SINTER", "SUNION", "SDIFF"}), k, pick(keys)}
			if r.IntN(2) == 0 {
				cmd = append(cmd, pick(keys))
			}
		case 9:
			cmd = []string{pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}), k, pick(keys), pick(keys)}
		case 10:
			cmd = []string{"SINTERCARD", pick([]string{"1", "2", "3", "0"}), k, pick(keys)}
			if r.IntN(2) == 0 {
				cmd = append(cmd, "LIMIT", pick([]string{"0", "1", "3", "-1"}))
			}
		case 11:
			cmd = []string{"SRANDMEMBER", k}
			if r.IntN(3) > 0 {
				cmd = append(cmd, pick(hsRandomCounts))
			}
		case 12:
			// SPOP: only forms whose effect is deterministic (the random
			// ones are compared by shape in their own test).
			cmd = []string{"SPOP", k, pick([]string{"0", "100", "-1", "x"})}
		case 13:
			cmd = []string{"SSCAN", k, pick([]string{"0", "x"})}
			if r.IntN(2) == 0 {
				cmd = append(cmd, "MATCH", pick([]string{"*", "1*", "?", "[a-c]"}))
			}
			if r.IntN(3) == 0 {
				cmd = append(cmd, "COUNT", pick([]string{"1", "5", "0", "x"}))
			}
		case 14:
			cmd = []string{"OBJECT", "ENCODING", k}
		default:
			cmd = []string{"DEBUG", "DIGEST-VALUE", k}
		}
		p.checkSetCommand(i, cmd)
	}
	p.same("DEBUG", "DIGEST")
	p.sameStats()
}

// checkSetCommand compares one set command's replies on both servers.
func (p *hsPair) checkSetCommand(i int, cmd []string) {
	p.t.Helper()
	switch cmd[0] {
	case "SRANDMEMBER":
		p.checkRandom(cmd, "SMEMBERS", false)
	case "SSCAN":
		enc := bulkBodyOr(p.red.do("OBJECT", "ENCODING", cmd[1]))
		p.sho.do("OBJECT", "ENCODING", cmd[1])
		if enc == "hashtable" && cmd[2] == "0" {
			p.sameScan(false, "SSCAN", cmd[1], cmd[3:]...)
			return
		}
		p.same(cmd...)
	case "SMEMBERS", "SINTER", "SUNION", "SDIFF", "SPOP":
		p.sameUnordered(false, cmd...)
	default:
		p.same(cmd...)
	}
}

// TestSetPopMatchesRedisByShape covers SPOP's random forms: same counts,
// popped members distinct and from the set, the rest left behind, and the
// resulting encodings (deterministic: they depend on what survives only
// through its being integers).
func TestSetPopMatchesRedisByShape(t *testing.T) {
	p := newHSPair(t)
	for _, kind := range []string{"int", "str", "mixed"} {
		for _, count := range []int{1, 2, 5, 10, 17, 18, 19} {
			var all []string
			for i := range 20 {
				switch {
				case kind == "str" || kind == "mixed" && i%2 == 0:
					all = append(all, fmt.Sprint("m", i))
				default:
					all = append(all, strconv.Itoa(i))
				}
			}
			p.same("DEL", "s")
			p.same(append([]string{"SADD", "s"}, all...)...)
			popped := map[string]bool{}
			for _, srv := range []*testConn{p.sho, p.red} {
				srv.do("DEL", "t")
				srv.do(append([]string{"SADD", "t"}, all...)...)
				got := hsStrings(t, srv.do("SPOP", "t", strconv.Itoa(count)))
				require.Len(t, got, count)
				rest := hsStrings(t, srv.do("SMEMBERS", "t"))
				require.Len(t, rest, 20-count)
				union := slices.Sorted(slices.Values(append(slices.Clone(got), rest...)))
				require.Equal(t, slices.Sorted(slices.Values(all)), union, "%s count %d", kind, count)
				if srv == p.sho {
					for _, m := range got {
						popped[m] = true
					}
				}
			}
			if kind != "mixed" {
				p.same("OBJECT", "ENCODING", "t")
			}
			// One more pop each, to the end.
			for range 20 - count {
				require.True(t, strings.HasPrefix(p.sho.do("SPOP", "t"), "$"))
				require.True(t, strings.HasPrefix(p.red.do("SPOP", "t"), "$"))
			}
			p.same("SPOP", "t")
			p.same("EXISTS", "t")
		}
	}
}

// TestSRandMemberDistribution mirrors the tcl suite's chi-square checks.
func TestSRandMemberDistribution(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for _, contents := range [][]string{
		{"1", "5", "10", "50", "125", "MARY", "PATRICIA", "LINDA", "BARBARA", "ELIZABETH"},
		{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
	} {
		tc.do("DEL", "s")
		tc.do(append([]string{"SADD", "s"}, contents...)...)
		chi := func(samples []string) float64 {
			counts := map[string]int{}
			for _, s := range samples {
				counts[s]++
			}
			exp := float64(len(samples)) / float64(len(contents))
			var sum float64
			for _, m := range contents {
				d := float64(counts[m]) - exp
				sum += d * d / exp
			}
			return sum
		}
		require.Less(t, chi(hsStrings(t, tc.do("SRANDMEMBER", "s", "-1000"))), 40.0)
		for _, size := range []int{8, 2} {
			var all []string
			for range 1000 / size {
				got := hsStrings(t, tc.do("SRANDMEMBER", "s", strconv.Itoa(size)))
				require.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), size)
				all = append(all, got...)
			}
			require.Less(t, chi(all), 40.0, "size %d", size)
		}
	}
}

// TestSScanGuarantee: every member present for a whole SSCAN is returned
// while the set grows or shrinks between the calls.
func TestSScanGuarantee(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for _, grow := range []bool{true, false} {
		tc.do("DEL", "s")
		args := []string{"SADD", "s"}
		for i := range 1000 {
			args = append(args, fmt.Sprint("keep", i))
		}
		if !grow {
			for i := range 20000 {
				args = append(args, fmt.Sprint("tmp", i))
			}
		}
		tc.do(args...)
		seen := map[string]bool{}
		cursor := "0"
		for calls := 0; calls < 100000; calls++ {
			v := testharness.ParseReply(t, tc.do("SSCAN", "s", cursor, "COUNT", "20"))
			cursor = v.Elems[0].Str
			for _, e := range v.Elems[1].Elems {
				seen[e.Str] = true
			}
			if cursor == "0" {
				break
			}
			if calls < 300 {
				churn := []string{"SADD", "s"}
				if !grow {
					churn[0] = "SREM"
				}
				for j := range 70 {
					churn = append(churn, fmt.Sprint("tmp", calls*70+j))
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
