package node

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// The bitmap commands are checked like the string commands: a table of
// requests and their exact replies (run against shoal, and against a live
// redis-server when one is installed, which keeps the table honest), and
// random scripts whose raw replies must be identical on both servers.

// bmCase is one request and its exact raw reply.
type bmCase struct {
	args []string
	want string
}

func bc(want string, args ...string) bmCase { return bmCase{args: args, want: want} }

func bmInt(n int64) string   { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func bmBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

const (
	bmOK        = "+OK\r\n"
	bmSyntax    = "-ERR syntax error\r\n"
	bmNotInt    = "-ERR value is not an integer or out of range\r\n"
	bmWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	bmBadOffset = "-ERR bit offset is not an integer or out of range\r\n"
	bmBadBit    = "-ERR bit is not an integer or out of range\r\n"
	bmBadType   = "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n"
)

// bmSeedNonString makes key a non-string key (a list): through the store on
// shoal (the list commands may not exist yet), with RPUSH on Redis.
func bmSeedNonString(t *testing.T, s *Server, tc *testConn, key string) {
	t.Helper()
	if s == nil {
		tc.do("DEL", key)
		if r := tc.do("RPUSH", key, "x"); r != ":1\r\n" {
			t.Fatalf("RPUSH %s: %q", key, r)
		}
		return
	}
	db := s.Keyspace().DB(0)
	slot := slots.KeySlot([]byte(key))
	db.Lock(slot)
	db.SetObject([]byte(key), store.TypeList, nil)
	db.Unlock(slot)
}

// bmReplyCases run in order on one RESP2 connection to an empty database 0;
// the key "list" holds a non-string value.
var bmReplyCases = []bmCase{
	// SETBIT / GETBIT.
	bc(bmInt(0), "SETBIT", "b", "7", "1"),
	bc(bmBulk("\x01"), "GET", "b"),
	bc(bmInt(1), "SETBIT", "b", "7", "0"),
	bc(bmInt(0), "SETBIT", "b", "7", "0"),
	bc(bmBulk("\x00"), "GET", "b"),
	bc(bmInt(0), "SETBIT", "b", "17", "1"),
	bc(bmBulk("\x00\x00\x40"), "GET", "b"),
	bc(bmInt(1), "GETBIT", "b", "17"),
	bc(bmInt(0), "GETBIT", "b", "16"),
	bc(bmInt(0), "GETBIT", "b", "1000000"),
	bc(bmInt(0), "GETBIT", "nokey", "3"),
	bc(bmBadOffset, "SETBIT", "b", "-1", "1"),
	bc(bmBadOffset, "SETBIT", "b", "4294967296", "1"),
	bc(bmBadOffset, "SETBIT", "b", "x", "1"),
	bc(bmBadOffset, "GETBIT", "b", "4294967296"),
	bc(bmBadOffset, "GETBIT", "b", "-1"),
	bc(bmBadBit, "SETBIT", "b", "0", "2"),
	bc(bmBadBit, "SETBIT", "b", "0", "-1"),
	bc(bmBadBit, "SETBIT", "b", "0", "x"),
	bc(bmWrongType, "SETBIT", "list", "0", "1"),
	bc(bmWrongType, "GETBIT", "list", "0"),
	bc(bmBadOffset, "GETBIT", "list", "-1"), // the offset is checked first
	bc(bmOK, "SET", "n", "12"),
	bc(bmInt(1), "GETBIT", "n", "2"), // '1' = 0x31
	bc(bmBulk("int"), "OBJECT", "ENCODING", "n"),
	bc(bmInt(0), "SETBIT", "n", "0", "0"), // unchanged, but now raw
	bc(bmBulk("raw"), "OBJECT", "ENCODING", "n"),
	bc(bmInt(0), "SETBIT", "fresh", "0", "0"),
	bc(bmBulk("raw"), "OBJECT", "ENCODING", "fresh"),

	// BITCOUNT.
	bc(bmOK, "SET", "s", "foobar"),
	bc(bmInt(26), "BITCOUNT", "s"),
	bc(bmInt(4), "BITCOUNT", "s", "0", "0"),
	bc(bmInt(6), "BITCOUNT", "s", "1", "1"),
	bc(bmInt(6), "BITCOUNT", "s", "1", "1", "BYTE"),
	bc(bmInt(17), "BITCOUNT", "s", "5", "30", "BIT"),
	bc(bmInt(2), "BITCOUNT", "s", "-5", "-1", "bit"),
	bc(bmInt(0), "BITCOUNT", "s", "-1", "-5"),
	bc(bmInt(0), "BITCOUNT", "s", "-1", "-5", "junk"), // decided before the unit
	bc(bmInt(0), "BITCOUNT", "s", "100", "200"),
	bc(bmInt(26), "BITCOUNT", "s", "-100", "100"),
	bc(bmSyntax, "BITCOUNT", "s", "0"),
	bc(bmSyntax, "BITCOUNT", "s", "0", "1", "bits"),
	bc(bmSyntax, "BITCOUNT", "s", "0", "1", "bit", "x"),
	bc(bmNotInt, "BITCOUNT", "s", "x", "1"),
	bc(bmNotInt, "BITCOUNT", "s", "0", "y"),
	bc(bmInt(0), "BITCOUNT", "nokey", "x", "y", "z"), // missing key: arguments unchecked
	bc(bmWrongType, "BITCOUNT", "list"),
	bc(bmWrongType, "BITCOUNT", "list", "x"),

	// BITPOS.
	bc(bmOK, "SET", "p", "\xff\xf0\x00"),
	bc(bmInt(12), "BITPOS", "p", "0"),
	bc(bmInt(0), "BITPOS", "p", "1"),
	bc(bmInt(-1), "BITPOS", "p", "1", "2"),
	bc(bmInt(16), "BITPOS", "p", "0", "2"),
	bc(bmInt(12), "BITPOS", "p", "0", "1", "-1"),
	bc(bmInt(-1), "BITPOS", "p", "0", "0", "0"),
	bc(bmInt(12), "BITPOS", "p", "0", "0"),
	bc(bmInt(-1), "BITPOS", "p", "1", "12", "-1", "BIT"),
	bc(bmInt(7), "BITPOS", "p", "1", "7", "7", "BIT"),
	bc(bmInt(-1), "BITPOS", "p", "0", "7", "11", "BIT"),
	bc(bmInt(12), "BITPOS", "p", "0", "7", "12", "bit"),
	bc(bmInt(12), "BITPOS", "p", "0", "7", "-1", "bit"),
	bc(bmInt(-1), "BITPOS", "p", "0", "30", "20", "bit"),
	bc(bmOK, "SET", "ones", "\xff\xff\xff"),
	bc(bmInt(24), "BITPOS", "ones", "0"),
	bc(bmInt(24), "BITPOS", "ones", "0", "1"),
	bc(bmInt(-1), "BITPOS", "ones", "0", "1", "2"),
	bc(bmInt(-1), "BITPOS", "ones", "0", "0", "-1", "bit"),
	bc(bmNotInt, "BITPOS", "ones", "0", "3", "bit"), // a unit needs an end
	bc(bmOK, "SET", "empty", ""),
	bc(bmInt(-1), "BITPOS", "empty", "0"),
	bc(bmInt(-1), "BITPOS", "empty", "1"),
	bc(bmInt(0), "BITPOS", "nokey", "0"),
	bc(bmInt(-1), "BITPOS", "nokey", "1"),
	bc(bmInt(0), "BITPOS", "nokey", "0", "x"), // missing key: range unchecked
	bc("-ERR The bit argument must be 1 or 0.\r\n", "BITPOS", "p", "2"),
	bc(bmNotInt, "BITPOS", "p", "x"),
	bc(bmNotInt, "BITPOS", "p", "1", "x"),
	bc(bmNotInt, "BITPOS", "p", "1", "0", "x"),
	bc(bmSyntax, "BITPOS", "p", "1", "0", "1", "nibble"),
	bc(bmSyntax, "BITPOS", "p", "1", "0", "1", "bit", "x"),
	bc(bmWrongType, "BITPOS", "list", "1"),
	bc("-ERR The bit argument must be 1 or 0.\r\n", "BITPOS", "list", "3"),

	// BITOP.
	bc(bmOK, "SET", "x", "\x0f\xf0"),
	bc(bmOK, "SET", "y", "\xff"),
	bc(bmInt(2), "BITOP", "AND", "d", "x", "y"),
	bc(bmBulk("\x0f\x00"), "GET", "d"),
	bc(bmBulk("raw"), "OBJECT", "ENCODING", "d"),
	bc(bmInt(2), "BITOP", "or", "d", "x", "y", "nokey"),
	bc(bmBulk("\xff\xf0"), "GET", "d"),
	bc(bmInt(2), "BITOP", "XOR", "d", "x", "y"),
	bc(bmBulk("\xf0\xf0"), "GET", "d"),
	bc(bmInt(2), "BITOP", "NOT", "d", "x"),
	bc(bmBulk("\xf0\x0f"), "GET", "d"),
	bc(bmInt(1), "EXPIRE", "d", "100"),
	bc(bmInt(2), "BITOP", "NOT", "d", "d"),
	bc(bmBulk("\x0f\xf0"), "GET", "d"),
	bc(bmInt(-1), "TTL", "d"), // the result replaces the key
	bc(bmInt(0), "BITOP", "AND", "d", "nokey", "nokey2"),
	bc(bmInt(0), "EXISTS", "d"),
	bc(bmInt(0), "BITOP", "OR", "d", "empty"),
	bc("-ERR BITOP NOT must be called with a single source key.\r\n", "BITOP", "NOT", "d", "x", "y"),
	bc(bmSyntax, "BITOP", "NAND", "d", "x"),
	bc(bmWrongType, "BITOP", "AND", "d", "x", "list"),
	bc(bmInt(1), "BITOP", "AND", "list", "y"), // the destination's type does not matter
	bc(bmBulk("\xff"), "GET", "list"),

	// BITFIELD.
	bc("*1\r\n:0\r\n", "BITFIELD", "f", "SET", "i8", "0", "100"),
	bc("*1\r\n:100\r\n", "BITFIELD", "f", "GET", "i8", "0"),
	bc("*3\r\n:-100\r\n:-128\r\n:127\r\n", "BITFIELD", "f", "INCRBY", "i8", "0", "-200", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-200", "INCRBY", "i8", "0", "1000"),
	bc("*2\r\n$-1\r\n:127\r\n", "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1", "GET", "i8", "0"),
	bc("*2\r\n:0\r\n:255\r\n", "BITFIELD", "g", "SET", "u8", "#1", "255", "GET", "u8", "8"),
	bc("*1\r\n:255\r\n", "BITFIELD", "g", "SET", "u8", "#1", "-1"), // wraps
	bc("*1\r\n:255\r\n", "BITFIELD", "g", "OVERFLOW", "SAT", "SET", "u8", "8", "-1"),
	bc("*1\r\n$-1\r\n", "BITFIELD", "g", "OVERFLOW", "FAIL", "SET", "u8", "8", "256"),
	bc("*1\r\n:0\r\n", "BITFIELD", "h", "OVERFLOW", "SAT", "SET", "i8", "0", "-9223372036854775808"),
	bc("*1\r\n:127\r\n", "BITFIELD", "h", "GET", "i8", "0"), // Redis's wrapping check calls this an overflow
	bc("*2\r\n:9223372036854775807\r\n:-9223372036854775808\r\n", "BITFIELD", "i", "INCRBY", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1"),
	bc("*1\r\n:9223372036854775807\r\n", "BITFIELD", "j", "INCRBY", "u63", "0", "-1"),
	bc("*1\r\n:1\r\n", "BITFIELD", "k1", "INCRBY", "u1", "1000", "1"),
	bc(bmInt(126), "STRLEN", "k1"),
	bc("*0\r\n", "BITFIELD", "nokey"),
	bc("*0\r\n", "BITFIELD", "nokey", "OVERFLOW", "WRAP"),
	bc(bmInt(0), "EXISTS", "nokey"),
	bc("*2\r\n:0\r\n:0\r\n", "BITFIELD", "nokey", "GET", "u8", "0", "GET", "i64", "#100"),
	bc(bmInt(0), "EXISTS", "nokey"),
	bc("*1\r\n$-1\r\n", "BITFIELD", "created", "OVERFLOW", "FAIL", "SET", "u2", "0", "4"),
	bc(bmBulk("\x00"), "GET", "created"), // the key is made even when nothing is written
	bc(bmBadType, "BITFIELD", "f", "GET", "u64", "0"),
	bc(bmBadType, "BITFIELD", "f", "GET", "i65", "0"),
	bc(bmBadType, "BITFIELD", "f", "GET", "i0", "0"),
	bc(bmBadType, "BITFIELD", "f", "GET", "x8", "0"),
	bc(bmBadType, "BITFIELD", "f", "GET", "", "0"),
	bc(bmBadOffset, "BITFIELD", "f", "GET", "u8", "-1"),
	bc(bmBadOffset, "BITFIELD", "f", "GET", "u8", "#-1"),
	bc(bmBadOffset, "BITFIELD", "f", "GET", "u8", "4294967296"),
	bc(bmBadOffset, "BITFIELD", "f", "GET", "u8", "#536870912"),
	bc("*1\r\n:0\r\n", "BITFIELD", "f", "GET", "u8", "#536870911"),
	bc(bmNotInt, "BITFIELD", "f", "SET", "u8", "0", "x"),
	bc("-ERR Invalid OVERFLOW type specified\r\n", "BITFIELD", "f", "OVERFLOW", "BAD"),
	bc(bmSyntax, "BITFIELD", "f", "GET", "u8"),
	bc(bmSyntax, "BITFIELD", "f", "SET", "u8", "0"),
	bc(bmSyntax, "BITFIELD", "f", "FOO"),
	bc(bmSyntax, "BITFIELD", "f", "OVERFLOW"),
	bc(bmWrongType, "BITFIELD", "list2", "GET", "u8", "0"),
	bc(bmWrongType, "BITFIELD", "list2", "SET", "u8", "0", "1"),
	bc(bmBadType, "BITFIELD", "list2", "GET", "u99", "0"), // parsed before the lookup
	bc("*2\r\n:127\r\n:0\r\n", "BITFIELD_RO", "f", "GET", "u7", "1", "GET", "i1", "#0"),
	bc("-ERR BITFIELD_RO only supports the GET subcommand\r\n", "BITFIELD_RO", "f", "SET", "u8", "0", "1"),
	bc("-ERR BITFIELD_RO only supports the GET subcommand\r\n", "BITFIELD_RO", "list2", "INCRBY", "u8", "0", "1"),
	bc(bmWrongType, "BITFIELD_RO", "list2", "GET", "u8", "0"),
	bc("*0\r\n", "BITFIELD_RO", "f"),
}

func bmRunCases(t *testing.T, s *Server, tc *testConn) {
	t.Helper()
	bmSeedNonString(t, s, tc, "list")
	bmSeedNonString(t, s, tc, "list2")
	for i, cs := range bmReplyCases {
		if got := tc.do(cs.args...); got != cs.want {
			t.Errorf("case %d %q:\n got  %q\n want %q", i, cs.args, got, cs.want)
		}
	}
}

func TestBitmapReplies(t *testing.T) {
	s := startTestServer(t)
	bmRunCases(t, s, dialTest(t, s))
}

// TestBitmapRepliesMatchRedis checks the table against the real thing, so
// that it cannot drift from Redis.
func TestBitmapRepliesMatchRedis(t *testing.T) {
	addr := startRealRedis(t)
	bmRunCases(t, nil, dialTestAddr(t, addr))
}

// bmPair sends the same requests to shoal and to Redis and compares the raw
// replies.
type bmPair struct {
	t                *testing.T
	shoal, redis     *testConn
	mismatches       int
	maxMismatches    int
	commandsCompared int
}

func newBMPair(t *testing.T, opts ...string) *bmPair {
	addr := startRealRedis(t, opts...)
	s := startTestServer(t, opts...)
	return &bmPair{t: t, shoal: dialTest(t, s), redis: dialTestAddr(t, addr), maxMismatches: 10}
}

// run sends cmds pipelined in batches and compares every reply; it returns
// shoal's replies.
func (p *bmPair) run(cmds [][]string) []string {
	p.t.Helper()
	var out []string
	const batch = 256
	for len(cmds) > 0 {
		n := min(batch, len(cmds))
		var req []byte
		for _, c := range cmds[:n] {
			req = append(req, encodeCommand(c...)...)
		}
		p.shoal.writeRaw(req)
		p.redis.writeRaw(req)
		for _, c := range cmds[:n] {
			got, want := p.shoal.read(), p.redis.read()
			p.commandsCompared++
			out = append(out, got)
			if got != want && p.mismatches < p.maxMismatches {
				p.mismatches++
				p.t.Errorf("%s:\n shoal %s\n redis %s", bmShow(c), bmShort(got), bmShort(want))
			}
		}
		cmds = cmds[n:]
	}
	if p.mismatches >= p.maxMismatches {
		p.t.FailNow()
	}
	return out
}

func (p *bmPair) do(args ...string) string { p.t.Helper(); return p.run([][]string{args})[0] }

func bmShow(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 40 {
			fmt.Fprintf(&b, "<%d bytes>", len(a))
		} else {
			fmt.Fprintf(&b, "%q", a)
		}
	}
	return b.String()
}

func bmShort(s string) string {
	if len(s) > 300 {
		return fmt.Sprintf("%q... (%d bytes)", s[:300], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// bmSeed returns the random seed of a randomized test: $SHOAL_TEST_SEED
// when set (to replay a failure), else the clock. It is logged.
func bmSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if env := os.Getenv("SHOAL_TEST_SEED"); env != "" {
		v, err := strconv.ParseUint(env, 10, 64)
		if err != nil {
			t.Fatalf("SHOAL_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with SHOAL_TEST_SEED=%d)", seed, seed)
	return seed
}

// bmRandomCommand returns one random bit command on a few small keys, with
// arguments reaching every edge: negative and out-of-range indexes, both
// units, every BITFIELD type, overflow policy and offset form.
func bmRandomCommand(r *rand.Rand) []string {
	keys := []string{"b1", "b2", "b3", "s"}
	key := func() string { return keys[r.IntN(len(keys))] }
	idx := func() string { return strconv.Itoa(r.IntN(80) - 40) }
	unit := func() string { return []string{"BIT", "BYTE", "bit", "byte"}[r.IntN(4)] }
	i64 := func() string {
		switch r.IntN(6) {
		case 0:
			return strconv.FormatInt(r.Int64(), 10)
		case 1:
			return strconv.FormatInt(-r.Int64(), 10)
		case 2:
			return []string{"9223372036854775807", "-9223372036854775808", "0", "-1", "1"}[r.IntN(5)]
		default:
			return strconv.Itoa(r.IntN(600) - 300)
		}
	}
	switch r.IntN(16) {
	case 0, 1:
		return []string{"SETBIT", key(), strconv.Itoa(r.IntN(400)), strconv.Itoa(r.IntN(2))}
	case 2:
		return []string{"GETBIT", key(), strconv.Itoa(r.IntN(450))}
	case 3:
		switch r.IntN(3) {
		case 0:
			return []string{"BITCOUNT", key()}
		case 1:
			return []string{"BITCOUNT", key(), idx(), idx()}
		}
		return []string{"BITCOUNT", key(), strconv.Itoa(r.IntN(500) - 250), strconv.Itoa(r.IntN(500) - 250), unit()}
	case 4, 5:
		bit := strconv.Itoa(r.IntN(2))
		switch r.IntN(4) {
		case 0:
			return []string{"BITPOS", key(), bit}
		case 1:
			return []string{"BITPOS", key(), bit, idx()}
		case 2:
			return []string{"BITPOS", key(), bit, idx(), idx()}
		}
		return []string{"BITPOS", key(), bit, strconv.Itoa(r.IntN(500) - 250), strconv.Itoa(r.IntN(500) - 250), unit()}
	case 6:
		op := []string{"AND", "OR", "XOR", "NOT"}[r.IntN(4)]
		cmd := []string{"BITOP", op, key(), key()}
		if op != "NOT" {
			for n := r.IntN(3); n > 0; n-- {
				cmd = append(cmd, key())
			}
		}
		return cmd
	case 7, 8, 9:
		cmd := []string{"BITFIELD", key()}
		if r.IntN(5) == 0 {
			cmd[0] = "BITFIELD_RO"
		}
		for n := 1 + r.IntN(4); n > 0; n-- {
			if r.IntN(4) == 0 {
				cmd = append(cmd, "OVERFLOW", []string{"WRAP", "SAT", "FAIL"}[r.IntN(3)])
			}
			typ := "i" + strconv.Itoa(1+r.IntN(64))
			if r.IntN(2) == 0 {
				typ = "u" + strconv.Itoa(1+r.IntN(63))
			}
			off := strconv.Itoa(r.IntN(300))
			if r.IntN(3) == 0 {
				off = "#" + strconv.Itoa(r.IntN(8))
			}
			switch r.IntN(3) {
			case 0:
				cmd = append(cmd, "GET", typ, off)
			case 1:
				cmd = append(cmd, "SET", typ, off, i64())
			default:
				cmd = append(cmd, "INCRBY", typ, off, i64())
			}
		}
		return cmd
	case 10:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = []byte{0, 0xff, byte(r.IntN(256))}[r.IntN(3)]
		}
		return []string{"SET", key(), string(b)}
	case 11:
		return []string{"SETRANGE", key(), strconv.Itoa(r.IntN(40)), strings.Repeat("\xff", 1+r.IntN(20))}
	case 12:
		return []string{"DEL", key()}
	case 13:
		return []string{"OBJECT", "ENCODING", key()}
	case 14:
		return []string{"SET", key(), strconv.Itoa(r.IntN(100000) - 500)}
	}
	return []string{"GET", key()}
}

// TestBitmapRandomScriptsMatchRedis runs random bit command scripts on both
// servers, in RESP2 and RESP3; every reply and the final values must be
// identical.
func TestBitmapRandomScriptsMatchRedis(t *testing.T) {
	p := newBMPair(t)
	seed := bmSeed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	for round := range 4 {
		if round == 2 {
			// RESP3: only BITFIELD's nulls differ in encoding; HELLO's reply
			// (server name, version, client id) is not compared.
			p.shoal.do("HELLO", "3")
			p.redis.do("HELLO", "3")
		}
		var cmds [][]string
		for range 3000 {
			cmds = append(cmds, bmRandomCommand(r))
		}
		for _, k := range []string{"b1", "b2", "b3", "s"} {
			cmds = append(cmds, []string{"GET", k}, []string{"OBJECT", "ENCODING", k})
		}
		p.run(cmds)
	}
	if p.commandsCompared < 12000 {
		t.Fatalf("only %d commands compared", p.commandsCompared)
	}
}

// TestBitmapLargeOffsetsMatchRedis covers the proto-max-bulk-len bound and
// large strings (a megabyte, so that the word-at-a-time paths run).
func TestBitmapLargeOffsetsMatchRedis(t *testing.T) {
	p := newBMPair(t, "--proto-max-bulk-len", "1048576")
	big := strconv.Itoa(1<<23 - 1)
	p.run([][]string{
		{"SETBIT", "big", big, "1"},
		{"SETBIT", "big", strconv.Itoa(1 << 23), "1"},
		{"STRLEN", "big"},
		{"BITCOUNT", "big"},
		{"BITPOS", "big", "1"},
		{"BITPOS", "big", "0"},
		{"BITPOS", "big", "1", "-1"},
		{"BITPOS", "big", "1", "0", "-1", "BIT"},
		{"BITFIELD", "big", "GET", "i64", strconv.Itoa(1<<23 - 8)},
		{"BITFIELD", "big", "SET", "u8", "#131071", "255"}, // the last byte
		{"BITFIELD", "big", "SET", "u8", "#131072", "255"},
		{"BITFIELD", "big", "SET", "i64", strconv.Itoa(1<<23 - 1), "1"},
		{"STRLEN", "big"},
		{"BITOP", "NOT", "inv", "big"},
		{"BITCOUNT", "inv"},
		{"BITPOS", "inv", "0"},
		{"BITPOS", "inv", "1", "100", "-2"},
		{"BITPOS", "inv", "0", "100", "-2"},
		{"BITCOUNT", "inv", "3", "-3", "BIT"},
		{"BITOP", "AND", "and", "inv", "big"},
		{"BITCOUNT", "and"},
		{"BITOP", "XOR", "xor", "inv", "big", "nokey"},
		{"BITCOUNT", "xor"},
		{"BITOP", "OR", "or", "inv", "big"},
		{"BITPOS", "or", "0"},
		{"CONFIG", "SET", "proto-max-bulk-len", "2097152"},
		{"SETBIT", "big", strconv.Itoa(1<<23 + 5), "1"},
		{"STRLEN", "big"},
	})
	if got := p.do("GET", "xor"); len(got) < 1<<20 {
		t.Fatalf("GET xor: %d bytes", len(got))
	}
}
