package node

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/tidwall/redcon"
)

// fakeConn is an in-memory net.Conn that serves a fixed input and records
// what is written to it, so the fuzz target runs the real request path
// (guard → redcon's parser → dispatcher → handlers → one write per batch)
// without sockets.
type fakeConn struct {
	in    *bytes.Reader
	out   bytes.Buffer
	chunk int // bytes per Read; 0 means 7
}

func (f *fakeConn) Read(p []byte) (int, error) {
	// Hand the input out in small pieces so that every partial-read state
	// of the guard is exercised.
	chunk := f.chunk
	if chunk == 0 {
		chunk = 7
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return f.in.Read(p)
}
func (f *fakeConn) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fakeConn) Close() error                { return nil }
func (f *fakeConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379} }
func (f *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// newFuzzServer builds a server that is never listening; commands run on
// clients made by newFuzzClient.
func newFuzzServer(t testing.TB) *Server {
	cfg, err := config.Load([]string{"--enable-debug-command", "no", "--databases", "4"})
	if err != nil {
		t.Fatal(err)
	}
	// Keep the fuzzer from asking for huge strings or long sleeps.
	if err := cfg.Set("proto-max-bulk-len", "1mb", "client-query-buffer-limit", "4mb"); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newFuzzClient(s *Server, fc *fakeConn) *Client {
	g := newRespGuard(fc, &guardLimits{shared: &s.limits})
	c := s.bindClient(&Client{srv: s, guard: g, id: s.nextClientID.Add(1), created: time.Now(),
		addr: fc.RemoteAddr().String(), laddr: fc.LocalAddr().String(), authenticated: true})
	c.Proto = 2
	c.multiLen.Store(-1)
	g.lim = c.limitsView()
	return c
}

// FuzzRequest feeds arbitrary bytes to the request path and checks that no
// command panics, that every reply is well-formed RESP, and that a protocol
// error is the last thing on the connection.
func FuzzRequest(f *testing.F) {
	seeds := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET a 1\r\nINCRBY a 5\r\nAPPEND a xyz\r\nGETRANGE a 0 -1\r\n",
		"set \"a\\x41\" 'b c'\r\nkeys *\r\nscan 0 match * count 5\r\n",
		"*3000000000\r\n",
		"*2\r\n$-5\r\n",
		"*1\r\nfoo\r\n",
		"hello 3\r\nset k v ex 10\r\nttl k\r\nexpire k 100 gt\r\n",
		"mset a 1 b 2 c 3\r\nmget a b c d\r\nrename a z\r\ncopy z y\r\nobject encoding y\r\n",
		"setrange k 100 x\r\nlcs a b idx withmatchlen\r\nincrbyfloat f 1.5e3\r\n",
		"config get *max*\r\nclient list\r\ncommand info get set\r\ncommand getkeys set a b\r\n",
		"select 2\r\nswapdb 0 2\r\nflushall\r\ndbsize\r\nrandomkey\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	srv := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		fc := &fakeConn{in: bytes.NewReader(data)}
		c := newFuzzClient(srv, fc)
		before := srv.stats.panics.Load()
		_ = srv.serveRequests(c)
		if srv.stats.panics.Load() != before {
			t.Fatalf("a command of %q panicked", data)
		}
		// Replies, well-formed RESP, then the guard's protocol error line if
		// any, last (Redis's line may hold a raw '\r' or '\n': "got '\n'").
		out := fc.out.Bytes()
		if i := bytes.Index(out, []byte("-ERR Protocol error: ")); i >= 0 {
			if bytes.Index(out[i:], []byte("\r\n")) != len(out)-i-2 {
				t.Fatalf("bytes after the protocol error: %q", out[i:])
			}
			out = out[:i]
		}
		if !validRESP(out) {
			t.Fatalf("malformed replies to %q: %q", data, out)
		}
		srv.ks.FlushAll()
	})
}

// validRESP reports whether b is a sequence of complete RESP2/RESP3 values.
func validRESP(b []byte) bool {
	for len(b) > 0 {
		n, ok := respValueLen(b, 0)
		if !ok {
			return false
		}
		b = b[n:]
	}
	return true
}

func respValueLen(b []byte, depth int) (int, bool) {
	if depth > 64 || len(b) < 3 {
		return 0, false
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return 0, false
	}
	line := string(b[1:i])
	n := i + 2
	switch b[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return n, !bytes.ContainsAny([]byte(line), "\r\n")
	case '$', '=', '!':
		l, err := strconv.Atoi(line)
		if err != nil {
			return 0, false
		}
		if l == -1 && b[0] == '$' {
			return n, true
		}
		if l < 0 || len(b) < n+l+2 || string(b[n+l:n+l+2]) != "\r\n" {
			return 0, false
		}
		return n + l + 2, true
	case '*', '%', '~', '>', '|':
		l, err := strconv.Atoi(line)
		if err != nil {
			return 0, false
		}
		if l == -1 && b[0] == '*' {
			return n, true
		}
		if l < 0 {
			return 0, false
		}
		if b[0] == '%' || b[0] == '|' {
			l *= 2
		}
		for k := 0; k < l; k++ {
			m, ok := respValueLen(b[n:], depth+1)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	}
	return 0, false
}

// TestGuardProtocolErrors pins Redis's protocol error texts.
func TestGuardProtocolErrors(t *testing.T) {
	srv := newFuzzServer(t)
	cases := map[string]string{
		"*3000000000\r\n":                                    "invalid multibulk length",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n":             "expected '$', got 'f'",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n":             "invalid bulk length",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n":      "invalid bulk length",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n":          "invalid bulk length",
		"*1\r\nfoo\r\n":                                      "expected '$', got 'f'",
		"set \"\"\"test-key\"\"\" test-value\r\nping\r\n":    "unbalanced quotes in request",
		string(bytes.Repeat([]byte("x"), 70000)):             "too big inline request",
		"*" + string(bytes.Repeat([]byte("1"), 70000)):       "too big mbulk count string",
		"*1\r\n$" + string(bytes.Repeat([]byte("1"), 70000)): "too big bulk count string",
	}
	for in, want := range cases {
		fc := &fakeConn{in: bytes.NewReader([]byte(in))}
		c := newFuzzClient(srv, fc)
		var err error
		for i := 0; i < 100000 && err == nil; i++ {
			_, _, err = c.guard.readBatch()
		}
		if err == nil || err == io.EOF {
			t.Fatalf("input %.40q: no protocol error (err=%v)", in, err)
		}
		if got := fc.out.String(); got != "-ERR Protocol error: "+want+"\r\n" {
			t.Fatalf("input %.40q: got %q, want %q", in, got, want)
		}
	}
}

// TestGuardBatchesWholeCommands checks what readBatch hands out: whole
// canonical commands only (the input arrives 7 bytes at a time), inline
// commands rewritten as multibulk, empty ones dropped, and a batch's bytes
// left untouched by later reads (queued commands alias them).
func TestGuardBatchesWholeCommands(t *testing.T) {
	srv := newFuzzServer(t)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*0\r\nPING x\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$4\r\nPING\r\n$1\r\nx\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	fc := &fakeConn{in: bytes.NewReader([]byte(in))}
	c := newFuzzClient(srv, fc)
	var batches [][]byte
	var snapshots []string
	var all []byte
	for i := 0; i < 1000; i++ {
		b, nargs, err := c.guard.readBatch()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		batches, snapshots = append(batches, b), append(snapshots, string(b))
		for len(b) > 0 { // every batch splits into complete commands
			complete, args, _, rest, err := redcon.ReadNextCommand(b, nil)
			if err != nil || !complete || len(args) == 0 {
				t.Fatalf("batch %q: complete=%v args=%q err=%v", b, complete, args, err)
			}
			all = append(all, b[:len(b)-len(rest)]...)
			nargs -= len(args)
			b = rest
		}
		if nargs != 0 {
			t.Fatalf("batch %q: argument count off by %d", batches[len(batches)-1], nargs)
		}
	}
	if string(all) != want {
		t.Fatalf("got %q, want %q", all, want)
	}
	if len(batches) < 2 {
		t.Fatalf("7-byte reads gave %d batch(es)", len(batches))
	}
	for i, b := range batches {
		if string(b) != snapshots[i] {
			t.Fatalf("batch %d changed after later reads: %q, was %q", i, b, snapshots[i])
		}
	}
}

// TestGuardFastPathMatchesStateMachine feeds the same random request
// streams (canonical commands, odd but valid forms, inline commands) to a
// guard in one read, where whole canonical commands take the fast path, and
// one byte per read, where the state machine parses everything: the
// canonical bytes and argument counts handed out must be the same.
func TestGuardFastPathMatchesStateMachine(t *testing.T) {
	srv := newFuzzServer(t)
	rnd := rand.New(rand.NewPCG(7, 9))
	for round := 0; round < 300; round++ {
		var in []byte
		for range 1 + rnd.IntN(20) {
			argc := 1 + rnd.IntN(5)
			switch rnd.IntN(6) {
			case 0: // inline
				in = append(in, "SET k v\r\n"...)
				continue
			case 1: // a leading zero and a bad terminator: valid for Redis, not canonical
				in = append(in, fmt.Sprintf("*0%d\r\n", argc)...)
			default:
				in = append(in, fmt.Sprintf("*%d\r\n", argc)...)
			}
			for range argc {
				arg := bytes.Repeat([]byte{byte('a' + rnd.IntN(26))}, rnd.IntN(40))
				in = append(in, fmt.Sprintf("$%d\r\n", len(arg))...)
				in = append(in, arg...)
				if rnd.IntN(8) == 0 {
					in = append(in, "xy"...) // Redis skips the two bytes unchecked
				} else {
					in = append(in, "\r\n"...)
				}
			}
		}
		run := func(chunk int) (string, int) {
			fc := &fakeConn{in: bytes.NewReader(in), chunk: chunk}
			c := newFuzzClient(srv, fc)
			var out []byte
			total := 0
			for i := 0; i < 100000; i++ {
				b, n, err := c.guard.readBatch()
				if err != nil {
					break
				}
				out, total = append(out, b...), total+n
			}
			return string(out), total
		}
		fastOut, fastArgs := run(len(in))
		slowOut, slowArgs := run(1)
		if fastOut != slowOut || fastArgs != slowArgs {
			t.Fatalf("input %q:\none read:  %q (%d args)\nbytewise:  %q (%d args)", in, fastOut, fastArgs, slowOut, slowArgs)
		}
	}
}

// TestGuardCanonicalisesInline checks Redis's inline quoting rules.
func TestGuardCanonicalisesInline(t *testing.T) {
	cases := map[string][]string{
		`set "a\x41\n" 'b\'c'`: {"set", "aA\n", "b'c"},
		`  a   b  `:            {"a", "b"},
		`a"b c"`:               {"ab c"},
		`""`:                   {""},
	}
	for in, want := range cases {
		got, ok := splitInline([]byte(in))
		if !ok {
			t.Fatalf("%q: split failed", in)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: got %q want %q", in, got, want)
		}
		for i := range want {
			if string(got[i]) != want[i] {
				t.Fatalf("%q: arg %d got %q want %q", in, i, got[i], want[i])
			}
		}
	}
	for _, bad := range []string{`"abc`, `'abc`, `"a"b`, `'a'b`} {
		if _, ok := splitInline([]byte(bad)); ok {
			t.Fatalf("%q: expected unbalanced quotes", bad)
		}
	}
}
