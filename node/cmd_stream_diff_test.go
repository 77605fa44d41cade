package node

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Differential tests of the stream commands: the same requests go to shoal
// and to a real Redis 7.0 (skipped when redis-server is not installed), in
// RESP2 and RESP3, and the replies must be byte-identical; values that
// depend on the clock (idle times, delivery and seen times, IDs generated
// by XADD *) are compared by shape: the reply is parsed and those values
// are masked on both sides before the comparison.

// respTree is a parsed RESP reply.
type respTree struct {
	head string // the first line without its CRLF ("*2", "$3", ":1", "+OK"...)
	body string // a bulk's payload
	kids []*respTree
}

func parseResp(raw string) *respTree {
	r := bufio.NewReader(strings.NewReader(raw))
	var parse func() *respTree
	parse = func() *respTree {
		line, _ := r.ReadString('\n')
		t := &respTree{head: strings.TrimSuffix(line, "\r\n")}
		if t.head == "" {
			return t
		}
		n, _ := strconv.Atoi(t.head[1:])
		switch t.head[0] {
		case '$', '=':
			if n >= 0 {
				b := make([]byte, n+2)
				_, _ = readFullResp(r, b)
				t.body = string(b[:n])
			}
		case '*', '~', '>':
			for range max(n, 0) {
				t.kids = append(t.kids, parse())
			}
		case '%':
			for range 2 * n {
				t.kids = append(t.kids, parse())
			}
		}
		return t
	}
	return parse()
}

func readFullResp(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (t *respTree) String() string {
	var b strings.Builder
	var walk func(*respTree)
	walk = func(t *respTree) {
		b.WriteString(t.head + "\r\n")
		if t.head != "" && (t.head[0] == '$' || t.head[0] == '=') && t.head != "$-1" {
			b.WriteString(t.body + "\r\n")
		}
		for _, k := range t.kids {
			walk(k)
		}
	}
	walk(t)
	return b.String()
}

var streamIDRe = regexp.MustCompile(`^\d+-\d+$`)

// maskStreamTimes replaces the clock-dependent values of stream replies
// with placeholders of the same type: XPENDING's idle times, XINFO's idle,
// seen-time and delivery times, and (when maskIDs) every stream ID.
func maskStreamTimes(t *respTree, cmd string, maskIDs bool) {
	var walk func(t *respTree, ctx string)
	walk = func(t *respTree, ctx string) {
		if maskIDs && strings.HasPrefix(t.head, "$") && streamIDRe.MatchString(t.body) {
			t.body, t.head = "ID", "$2"
		}
		// key/value lists (maps, and their RESP2 flat arrays)
		for i := 0; i+1 < len(t.kids); i++ {
			switch t.kids[i].body {
			case "idle", "seen-time":
				if strings.HasPrefix(t.kids[i+1].head, ":") {
					t.kids[i+1].head = ":T"
				}
			case "pending":
				for _, p := range t.kids[i+1].kids {
					// group PEL [id, consumer, time, count]; consumer PEL [id, time, count]
					switch len(p.kids) {
					case 4:
						p.kids[2].head = ":T"
					case 3:
						p.kids[1].head = ":T"
					}
				}
			}
		}
		if ctx == "xpending" && len(t.kids) == 4 && strings.HasPrefix(t.kids[2].head, ":") && strings.HasPrefix(t.kids[0].head, "$") {
			t.kids[2].head = ":T"
		}
		for _, k := range t.kids {
			walk(k, ctx)
		}
	}
	walk(t, cmd)
}

type streamDiff struct {
	t           *testing.T
	ours, real  *testConn
	compared    int
	maskedTimes bool
}

func newStreamDiff(t *testing.T) *streamDiff {
	addr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	return &streamDiff{t: t, ours: dialTest(t, s), real: dialTestAddr(t, addr)}
}

// same sends args to both servers and requires identical replies, with
// clock-dependent values masked; masking IDs too when the command's data
// come from XADD *.
func (d *streamDiff) same(args ...string) string {
	d.t.Helper()
	return d.compare(false, args...)
}

func (d *streamDiff) sameShape(args ...string) string {
	d.t.Helper()
	return d.compare(true, args...)
}

func (d *streamDiff) compare(maskIDs bool, args ...string) string {
	d.t.Helper()
	a, b := d.ours.do(args...), d.real.do(args...)
	d.compared++
	if a == b {
		return a
	}
	cmd := strings.ToLower(args[0])
	ta, tb := parseResp(a), parseResp(b)
	maskStreamTimes(ta, cmd, maskIDs)
	maskStreamTimes(tb, cmd, maskIDs)
	if ta.String() != tb.String() {
		d.t.Fatalf("%q:\nshoal: %q\nredis: %q", args, a, b)
	}
	return a
}

func (d *streamDiff) both(args ...string) {
	d.t.Helper()
	d.ours.do(args...)
	d.real.do(args...)
}

// streamScript is the scripted differential run: every command and error
// path of the stream commands, on explicit IDs.
func streamScript(d *streamDiff) {
	s := d.same
	// XADD arguments and errors
	s("DEL", "s", "str", "e", "x", "y")
	s("SET", "str", "v")
	s("XADD", "s")
	s("XADD", "s", "*")
	s("XADD", "s", "*", "f")
	s("XADD", "s", "1-1", "f")
	s("XADD", "s", "1-1", "f", "v", "g")
	for _, id := range []string{"abc", "1-abc", "-", "+", "1-", "-1", " 1-1", "1- 1", "01-01", "1--1", "1--01",
		"18446744073709551616-0", "1-18446744073709551616", "+1-+1", "0x10", "1.5", "1-*x", "*-1", "", strings.Repeat("1", 128)} {
		s("XADD", "e", id, "f", "v")
	}
	s("EXISTS", "e")
	s("XADD", "e", "0-0", "f", "v")
	s("XADD", "e", "0", "f", "v")
	s("EXISTS", "e")
	s("XADD", "e", "0-*", "f", "v")
	s("XADD", "e", "0-*", "f", "v")
	s("XADD", "e", "5-*", "f", "v")
	s("XADD", "e", "5-*", "f", "v")
	s("XADD", "e", "4-*", "f", "v")
	s("XADD", "e", "5-1", "f", "v")
	s("XADD", "e", "5-18446744073709551615", "f", "v")
	s("XADD", "e", "5-*", "f", "v")
	s("XADD", "e", "18446744073709551615-18446744073709551615", "f", "v")
	s("XADD", "e", "18446744073709551615-*", "f", "v")
	s("XADD", "e", "*", "f", "v")
	s("XRANGE", "e", "-", "+")
	s("XADD", "str", "*", "f", "v")
	s("XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
	s("EXISTS", "nokey")
	s("XADD", "s", "LIMIT", "10", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "5", "LIMIT", "10", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "-1", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "x", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "~", "1-1", "f", "v")
	s("XADD", "s", "MINID", "x", "1-1", "f", "v")
	s("XADD", "s", "MINID", "+", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "1", "MINID", "1", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "x", "1-1", "f", "v")
	s("XADD", "s", "MAXLEN")
	s("XADD", "s", "MAXLEN", "5")
	s("XADD", "s", "nomkstream", "maxlen", "=", "5", "1-1", "a", "1", "b", "2")
	for i := 2; i <= 12; i++ {
		s("XADD", "s", "MAXLEN", "=", "5", strconv.Itoa(i), "a", strconv.Itoa(i), "b", "x")
	}
	s("XADD", "s", "MINID", "~", "9", "LIMIT", "0", "13", "a", "13")
	s("XADD", "s", "MINID", "9", "14", "other", "field")
	s("XRANGE", "s", "-", "+")
	s("XLEN", "s")
	s("XLEN", "nokey")
	s("XLEN", "str")
	// XRANGE / XREVRANGE
	for _, r := range [][]string{
		{"-", "+"}, {"(9", "+"}, {"-", "(14"}, {"(-", "+"}, {"-", "(+"}, {"(18446744073709551615-18446744073709551615", "+"},
		{"-", "(0-0"}, {"10", "12"}, {"12", "10"}, {"10-1", "10-0"}, {"x", "+"}, {"-", "y"}, {"((1", "+"},
		{"(", "+"}, {"9-18446744073709551615", "+"},
	} {
		s("XRANGE", "s", r[0], r[1])
		s("XREVRANGE", "s", r[1], r[0])
	}
	for _, c := range []string{"0", "-1", "2", "x"} {
		s("XRANGE", "s", "-", "+", "COUNT", c)
		s("XREVRANGE", "s", "+", "-", "count", c)
	}
	s("XRANGE", "s", "-", "+", "COUNT")
	s("XRANGE", "s", "-", "+", "LIMIT", "1")
	s("XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2")
	s("XRANGE", "nokey", "-", "+")
	s("XRANGE", "nokey", "-", "+", "COUNT", "0")
	s("XRANGE", "str", "-", "+")
	s("XRANGE", "str", "x", "+")
	// XDEL
	s("XDEL", "nokey", "bad")
	s("XDEL", "str", "1")
	s("XDEL", "s", "10", "bad")
	s("XDEL", "s", "10", "10", "11-0", "100")
	s("XDEL", "s", "+")
	s("XRANGE", "s", "-", "+")
	s("XINFO", "STREAM", "s")
	// XTRIM
	s("XTRIM", "s")
	s("XTRIM", "s", "MAXLEN")
	s("XTRIM", "s", "FOO", "1")
	s("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1")
	s("XTRIM", "s", "LIMIT", "1")
	s("XTRIM", "nokey", "MAXLEN", "1")
	s("XTRIM", "nokey", "MAXLEN", "x")
	s("XTRIM", "str", "MAXLEN", "1")
	s("XTRIM", "s", "MAXLEN", "~", "1")
	s("XTRIM", "s", "MINID", "=", "13")
	s("XINFO", "STREAM", "s")
	s("XTRIM", "s", "MAXLEN", "0")
	s("XINFO", "STREAM", "s")
	s("XINFO", "STREAM", "s", "FULL")

	// node structure: approximate trimming and rax shape with small nodes
	s("CONFIG", "SET", "stream-node-max-entries", "7")
	s("DEL", "big")
	for i := 1; i <= 300; i++ {
		args := []string{"XADD", "big", fmt.Sprintf("%d-%d", 1000+i*37, i%3), "field", strconv.Itoa(i)}
		if i%11 == 0 {
			args = append(args, "extra", strings.Repeat("z", i))
		}
		s(args...)
	}
	s("XINFO", "STREAM", "big")
	for i := 5; i < 300; i += 13 {
		s("XDEL", "big", fmt.Sprintf("%d-%d", 1000+i*37, i%3))
	}
	s("XINFO", "STREAM", "big")
	s("XTRIM", "big", "MAXLEN", "~", "250")
	s("XTRIM", "big", "MAXLEN", "~", "100", "LIMIT", "30")
	s("XTRIM", "big", "MINID", "~", "5000")
	s("XTRIM", "big", "MAXLEN", "=", "150")
	s("XINFO", "STREAM", "big")
	s("XINFO", "STREAM", "big", "FULL", "COUNT", "0")
	// An explicit ID: with "*" each server takes its own clock's
	// millisecond, which shows in the DEBUG DIGEST-VALUE below.
	s("XADD", "big", "MAXLEN", "~", "20", "9999999999999-0", "a", "b")
	s("XLEN", "big")
	s("CONFIG", "SET", "stream-node-max-entries", "100")
	s("CONFIG", "SET", "stream-node-max-bytes", "200")
	s("DEL", "bytes")
	for i := 1; i <= 60; i++ {
		s("XADD", "bytes", strconv.Itoa(i), "f", strings.Repeat("v", i%17), "n", strconv.Itoa(i*1000))
	}
	s("XINFO", "STREAM", "bytes")
	s("XTRIM", "bytes", "MAXLEN", "~", "30")
	s("XINFO", "STREAM", "bytes")
	s("CONFIG", "SET", "stream-node-max-bytes", "4096")
	s("DEBUG", "DIGEST-VALUE", "big", "bytes", "s")
	s("OBJECT", "ENCODING", "big")
	s("TYPE", "big")

	// consumer groups
	s("DEL", "x")
	for i := 1; i <= 6; i++ {
		s("XADD", "x", strconv.Itoa(100+i), "f", strconv.Itoa(i))
	}
	s("XGROUP", "HELP")
	s("XGROUP", "HELP", "x")
	s("XGROUP", "CREATE", "nokey", "g", "$")
	s("XGROUP", "CREATE", "str", "g", "$")
	s("XGROUP", "CREATE", "x", "g", "bad")
	s("XGROUP", "CREATE", "x", "g", "-")
	s("XGROUP", "CREATE", "x", "g", "0", "ENTRIESREAD", "-2")
	s("XGROUP", "CREATE", "x", "g", "0", "ENTRIESREAD", "x")
	s("XGROUP", "CREATE", "x", "g", "0", "ENTRIESREAD")
	s("XGROUP", "CREATE", "x", "g", "0", "FOO")
	s("XGROUP", "CREATE", "x", "g", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM")
	s("XGROUP", "CREATE", "x", "g1", "0")
	s("XGROUP", "CREATE", "x", "g1", "0")
	s("XGROUP", "CREATE", "x", "g2", "$", "ENTRIESREAD", "3")
	s("XGROUP", "CREATE", "x", "a0", "103")
	s("XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM")
	s("XINFO", "STREAM", "mk")
	s("XGROUP", "SETID", "x", "nog", "0")
	s("XGROUP", "SETID", "nokey", "g1", "0")
	s("XGROUP", "SETID", "x", "g1", "0", "MKSTREAM")
	s("XGROUP", "SETID", "x", "g1", "0", "ENTRIESREAD")
	s("XGROUP", "SETID", "x", "a0", "-")
	s("XGROUP", "SETID", "x", "a0", "+", "ENTRIESREAD", "6")
	s("XGROUP", "SETID", "x", "a0", "$")
	s("XGROUP", "CREATECONSUMER", "x", "nog", "c")
	s("XGROUP", "CREATECONSUMER", "x", "g1", "zed")
	s("XGROUP", "CREATECONSUMER", "x", "g1", "zed")
	s("XGROUP", "DELCONSUMER", "x", "g1", "nobody")
	s("XGROUP", "DELCONSUMER", "x", "nog", "nobody")
	s("XGROUP", "DESTROY", "x", "nog")
	s("XGROUP", "DESTROY", "nokey", "nog")
	s("XGROUP", "FOO", "x", "g1")
	s("XINFO", "GROUPS", "x")

	// XREADGROUP / XREAD
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x")
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x", "$")
	s("XREADGROUP", "GROUP", "nog", "alice", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "nokey", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "str", ">")
	s("XREADGROUP", "COUNT", "1", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "x", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "BLOCK", "-1", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "BLOCK", "x", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "FOO", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x", "bad")
	s("XREAD", "GROUP", "g1", "alice", "STREAMS", "x", ">")
	s("XREAD", "NOACK", "STREAMS", "x", "0")
	s("XREAD", "STREAMS", "x", ">")
	s("XREAD", "STREAMS", "x", "+")
	s("XREAD", "STREAMS", "x", "-")
	s("XREAD", "COUNT", "2", "STREAMS", "x", "nokey", "0", "0")
	s("XREAD", "COUNT", "-5", "STREAMS", "x", "102")
	s("XREAD", "STREAMS", "x", "str", "0", "0")
	s("XREAD", "STREAMS", "x", "$")
	s("XREAD", "STREAMS", "nokey", "$")
	s("XREAD", "BLOCK", "10", "STREAMS", "x", "$")
	s("XREAD", "STREAMS")
	s("XREAD", "COUNT", "1")
	s("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "1", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "carol", "NOACK", "COUNT", "1", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x", "0")
	s("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "1", "STREAMS", "x", "101")
	s("XREADGROUP", "GROUP", "g1", "dave", "STREAMS", "x", "0")
	s("XREADGROUP", "GROUP", "g2", "alice", "STREAMS", "x", "x", ">", ">")
	s("XREADGROUP", "GROUP", "a0", "alice", "STREAMS", "x", ">")
	s("XREADGROUP", "GROUP", "a0", "alice", "BLOCK", "5", "STREAMS", "x", ">")
	s("XINFO", "GROUPS", "x")
	s("XINFO", "CONSUMERS", "x", "g1")
	s("XINFO", "STREAM", "x", "FULL")
	// XPENDING
	s("XPENDING", "x", "g1")
	s("XPENDING", "x", "a0")
	s("XPENDING", "x", "g1", "-", "+", "10")
	s("XPENDING", "x", "g1", "-", "+", "10", "alice")
	s("XPENDING", "x", "g1", "-", "+", "10", "nobody")
	s("XPENDING", "x", "g1", "(101", "(104", "10")
	s("XPENDING", "x", "g1", "-", "+", "-3")
	s("XPENDING", "x", "g1", "-", "+", "1")
	s("XPENDING", "x", "g1", "IDLE", "0", "-", "+", "10")
	s("XPENDING", "x", "g1", "IDLE", "999999999", "-", "+", "10")
	s("XPENDING", "x", "g1", "IDLE", "x", "-", "+", "10")
	s("XPENDING", "x", "g1", "IDLE", "5", "-", "+")
	s("XPENDING", "x", "g1", "-", "+")
	s("XPENDING", "x", "g1", "-", "+", "x")
	s("XPENDING", "x", "g1", "bad", "+", "1")
	s("XPENDING", "x", "g1", "-", "(0-0", "1")
	s("XPENDING", "x", "g1", "-", "+", "1", "a", "b", "c", "d")
	s("XPENDING", "x", "nog")
	s("XPENDING", "nokey", "g")
	s("XPENDING", "str", "g")
	// XCLAIM
	s("XCLAIM", "x", "nog", "c", "0", "101")
	s("XCLAIM", "str", "g", "c", "0", "101")
	s("XCLAIM", "x", "g1", "c", "x", "101")
	s("XCLAIM", "x", "g1", "c", "0", "101", "FOO")
	s("XCLAIM", "x", "g1", "c", "0", "101", "IDLE", "x")
	s("XCLAIM", "x", "g1", "c", "0", "101", "TIME", "x")
	s("XCLAIM", "x", "g1", "c", "0", "101", "RETRYCOUNT", "x")
	s("XCLAIM", "x", "g1", "c", "0", "101", "LASTID", "x")
	s("XCLAIM", "x", "g1", "bob", "0", "101", "TIME", "12345", "RETRYCOUNT", "7")
	s("XCLAIM", "x", "g1", "bob", "0", "101", "102", "999", "TIME", "12345", "JUSTID")
	s("XCLAIM", "x", "g1", "eve", "0", "105", "106", "TIME", "5000", "FORCE", "LASTID", "200")
	s("XCLAIM", "x", "g1", "eve", "99999999", "101")
	s("XCLAIM", "x", "g1", "eve", "0", "103", "TIME", "-5")
	s("XINFO", "STREAM", "x", "FULL")
	s("XDEL", "x", "102")
	s("XCLAIM", "x", "g1", "eve", "0", "102", "103")
	s("XPENDING", "x", "g1")
	// XAUTOCLAIM
	s("XAUTOCLAIM", "x", "g1", "frank", "x", "0")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "bad")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "(18446744073709551615-18446744073709551615")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "0", "COUNT", "0")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "0", "COUNT", "x")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "0", "COUNT", "8070450532247928833")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "0", "FOO")
	s("XAUTOCLAIM", "x", "nog", "frank", "0", "0")
	s("XAUTOCLAIM", "nokey", "g", "frank", "0", "0")
	s("XDEL", "x", "104")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "0", "COUNT", "2")
	s("XAUTOCLAIM", "x", "g1", "frank", "0", "(101", "COUNT", "1", "JUSTID")
	s("XAUTOCLAIM", "x", "g1", "frank", "99999999", "0")
	s("XAUTOCLAIM", "x", "g1", "gina", "0", "0", "JUSTID")
	s("XINFO", "STREAM", "x", "FULL", "COUNT", "1")
	// XACK
	s("XACK", "nokey", "g", "bad")
	s("XACK", "x", "nog", "bad")
	s("XACK", "str", "g", "1")
	s("XACK", "x", "g1", "101", "bad")
	s("XACK", "x", "g1", "101", "101", "103", "999")
	s("XPENDING", "x", "g1", "-", "+", "10")
	s("XGROUP", "DELCONSUMER", "x", "g1", "gina")
	s("XINFO", "CONSUMERS", "x", "g1")
	s("XINFO", "CONSUMERS", "x", "nog")
	s("XINFO", "GROUPS", "nokey")
	s("XINFO", "GROUPS", "str")
	s("XINFO", "STREAM", "x", "FOO")
	s("XINFO", "STREAM", "x", "FULL", "FOO", "1")
	s("XINFO", "STREAM", "x", "FULL", "COUNT", "x")
	s("XINFO", "STREAM", "x", "FULL", "COUNT")
	s("XINFO", "STREAM", "x", "FULL", "COUNT", "-1")
	s("XINFO", "HELP")
	s("XINFO", "HELP", "x")
	s("XINFO", "FOO", "x")
	s("XGROUP", "DESTROY", "x", "g2")
	s("XINFO", "GROUPS", "x")
	// COPY keeps groups, deep
	s("COPY", "x", "xcopy")
	s("XINFO", "STREAM", "xcopy", "FULL")
	s("XACK", "xcopy", "g1", "105", "106")
	s("XPENDING", "x", "g1")
	s("XPENDING", "xcopy", "g1")
	s("DEBUG", "DIGEST-VALUE", "x", "xcopy")
	// read counters and lag (the suite's cases)
	s("DEL", "l")
	for i := 1; i <= 5; i++ {
		s("XADD", "l", strconv.Itoa(i), "data", "x")
	}
	s("XDEL", "l", "3")
	s("XGROUP", "CREATE", "l", "g1", "0")
	s("XGROUP", "CREATE", "l", "g2", "0")
	for range 4 {
		s("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "l", ">")
		s("XINFO", "GROUPS", "l")
	}
	s("XADD", "l", "6", "data", "f")
	s("XINFO", "GROUPS", "l")
	s("XTRIM", "l", "MINID", "=", "3")
	s("XINFO", "GROUPS", "l")
	s("XTRIM", "l", "MINID", "=", "5")
	s("XINFO", "GROUPS", "l")
	s("XGROUP", "SETID", "l", "g2", "4", "ENTRIESREAD", "2")
	s("XINFO", "GROUPS", "l")
	// XSETID
	s("XSETID", "nokey", "1")
	s("XSETID", "str", "1")
	s("XSETID", "l", "bad")
	s("XSETID", "l", "1")
	s("XSETID", "l", "100", "0")
	s("XSETID", "l", "100", "ENTRIESADDED", "-1")
	s("XSETID", "l", "100", "ENTRIESADDED", "x")
	s("XSETID", "l", "100", "ENTRIESADDED", "1")
	s("XSETID", "l", "100", "MAXDELETEDID", "200")
	s("XSETID", "l", "100", "MAXDELETEDID", "+")
	s("XSETID", "l", "100", "ENTRIESADDED", "50", "MAXDELETEDID", "50")
	s("XINFO", "STREAM", "l")
	s("XADD", "l", "MAXLEN", "0", "101", "a", "b")
	s("XSETID", "l", "0-0")
	s("XINFO", "STREAM", "l")
	// auto IDs, compared by shape
	s("DEL", "auto")
	d.sameShape("XADD", "auto", "*", "a", "1")
	d.sameShape("XADD", "auto", "MAXLEN", "~", "0", "*", "a", "2")
	d.sameShape("XRANGE", "auto", "-", "+")
	d.sameShape("XINFO", "STREAM", "auto")
}

func TestStreamDifferentialScript(t *testing.T) {
	d := newStreamDiff(t)
	streamScript(d)
	d.both("FLUSHALL")
	d.both("HELLO", "3")
	streamScript(d)
	t.Logf("%d replies compared", d.compared)
}

// TestStreamRandomDifferential sends random stream commands on explicit
// IDs (so that both servers hold the same data) to shoal and Redis, with
// small nodes so that tombstones, node removal and approximate trims are
// exercised, and compares every reply plus the keys' digests and XINFO.
func TestStreamRandomDifferential(t *testing.T) {
	d := newStreamDiff(t)
	d.both("CONFIG", "SET", "stream-node-max-entries", "5")
	rng := rand.New(rand.NewPCG(11, 13))
	keys := []string{"r1", "r2"}
	next := map[string]int{}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	id := func(k string) string {
		n := next[k]
		return fmt.Sprintf("%d-%d", 1+rng.IntN(max(n/2, 1)), rng.IntN(3))
	}
	groups := []string{"ga", "gb"}
	consumers := []string{"c1", "c2", "c3"}
	for step := range 3000 {
		k := pick(keys...)
		var args []string
		switch rng.IntN(16) {
		case 0, 1, 2, 3:
			next[k] += 1 + rng.IntN(3)
			args = []string{"XADD", k}
			if rng.IntN(6) == 0 {
				args = append(args, "MAXLEN", pick("~", "="), strconv.Itoa(rng.IntN(30)))
			}
			args = append(args, fmt.Sprintf("%d-%d", next[k], rng.IntN(2)), "f", strconv.Itoa(step))
			if rng.IntN(3) == 0 {
				args = append(args, pick("f", "g"), strings.Repeat("v", rng.IntN(20)))
			}
		case 4:
			args = []string{"XDEL", k, id(k), id(k)}
		case 5:
			args = []string{"XRANGE", k, pick("-", id(k), "("+id(k)), pick("+", id(k)), "COUNT", strconv.Itoa(rng.IntN(5))}
		case 6:
			args = []string{"XREVRANGE", k, pick("+", id(k)), pick("-", id(k))}
		case 7:
			if rng.IntN(2) == 0 {
				args = []string{"XTRIM", k, "MAXLEN", pick("~", "="), strconv.Itoa(rng.IntN(40))}
			} else {
				args = []string{"XTRIM", k, "MINID", pick("~", "="), id(k)}
			}
		case 8:
			args = []string{"XGROUP", "CREATE", k, pick(groups...), pick("0", "$", id(k)), "MKSTREAM"}
		case 9, 10:
			args = []string{"XREADGROUP", "GROUP", pick(groups...), pick(consumers...), "COUNT", strconv.Itoa(1 + rng.IntN(4))}
			if rng.IntN(4) == 0 {
				args = append(args, "NOACK")
			}
			args = append(args, "STREAMS", k, pick(">", ">", "0", id(k)))
		case 11:
			args = []string{"XACK", k, pick(groups...), id(k), id(k)}
		case 12:
			args = []string{"XCLAIM", k, pick(groups...), pick(consumers...), "0", id(k), id(k), "TIME", "1000", pick("FORCE", "JUSTID", "RETRYCOUNT")}
			if args[len(args)-1] == "RETRYCOUNT" {
				args = append(args, "3")
			}
		case 13:
			args = []string{"XAUTOCLAIM", k, pick(groups...), pick(consumers...), "0", pick("0", id(k)), "COUNT", strconv.Itoa(1 + rng.IntN(3))}
		case 14:
			args = []string{"XPENDING", k, pick(groups...), "-", "+", "20"}
			if rng.IntN(2) == 0 {
				args = append(args, pick(consumers...))
			}
		default:
			args = []string{"XINFO", pick("GROUPS", "STREAM"), k}
		}
		d.same(args...)
		if step%100 == 99 {
			for _, k := range keys {
				d.same("XINFO", "STREAM", k, "FULL", "COUNT", "0")
				d.same("DEBUG", "DIGEST-VALUE", k)
				d.same("XPENDING", k, "ga")
			}
		}
	}
	t.Logf("%d replies compared", d.compared)
}
