package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/resp/resptest"
	"github.com/tidwall/redcon"
)

// testLimits are small bounds (proto-max-bulk-len 1mb,
// client-query-buffer-limit 4mb) for an authenticated client.
func testLimits() *ConnLimits {
	lim := &ConnLimits{Shared: &Limits{}}
	lim.Shared.ProtoMaxBulkLen.Store(1 << 20)
	lim.Shared.QueryBufLimit.Store(4 << 20)
	return lim
}

func newTestReader(in []byte, chunk int) (*RequestReader, *resptest.Conn) {
	fc := resptest.NewConn(in, chunk)
	return NewRequestReader(fc, testLimits()), fc
}

// readAll reads batches until the reader fails (bounded), returning what
// was handed out, the argument count, and the final error.
func readAll(g *RequestReader) (out []byte, args int, err error) {
	for i := 0; i < 1_000_000; i++ {
		b, n, err := g.ReadBatch()
		if err != nil {
			return out, args, err
		}
		out, args = append(out, b...), args+n
		g.Recycle()
	}
	return out, args, errors.New("no end after a million batches")
}

// TestRequestProtocolErrors pins Redis's protocol error texts: the reader
// writes the line once and fails with ErrProtocolClosed.
func TestRequestProtocolErrors(t *testing.T) {
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
		"*1\r\n$2000000\r\n":                                 "invalid bulk length",   // over proto-max-bulk-len (1mb here)
		"*1\r\n\r\n":                                         "expected '$', got ' '", // CR and LF become spaces, as in Redis
		"*1\r\n\n\r\n":                                       "expected '$', got ' '",
		"*2\r\n$1\r\na\r\n\r\n":                              "expected '$', got ' '",
	}
	for in, want := range cases {
		g, fc := newTestReader([]byte(in), 0)
		_, _, err := readAll(g)
		if !errors.Is(err, ErrProtocolClosed) {
			t.Fatalf("input %.40q: no protocol error (err=%v)", in, err)
		}
		if got := fc.Out.String(); got != "-ERR Protocol error: "+want+"\r\n" {
			t.Fatalf("input %.40q: got %q, want %q", in, got, want)
		}
	}
}

// TestRequestUnauthenticatedAndQueryLimits checks the limits that depend on
// the client (Redis's smaller bounds before AUTH) and
// client-query-buffer-limit, which closes without a reply.
func TestRequestUnauthenticatedAndQueryLimits(t *testing.T) {
	unauth := func(g *RequestReader) {
		lim := testLimits()
		lim.AuthRequired = func() bool { return true }
		g.SetLimits(lim)
	}
	many := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	big := "*1\r\n$16385\r\n" + strings.Repeat("x", 16385) + "\r\n"
	for in, want := range map[string]string{
		many: "unauthenticated multibulk length",
		big:  "unauthenticated bulk length",
	} {
		g, fc := newTestReader([]byte(in), len(in))
		unauth(g)
		if _, _, err := readAll(g); !errors.Is(err, ErrProtocolClosed) || fc.Out.String() != "-ERR Protocol error: "+want+"\r\n" {
			t.Fatalf("%.20q: err %v, wrote %q, want %q", in, err, fc.Out.String(), want)
		}
		// Authenticated, the same input is one command.
		g, fc = newTestReader([]byte(in), len(in))
		out, _, err := readAll(g)
		if err != io.EOF || string(out) != in || fc.Out.Len() != 0 {
			t.Fatalf("%.20q authenticated: err %v, out %d bytes, wrote %q", in, err, len(out), fc.Out.String())
		}
	}

	// Two 700 KiB arguments: each within proto-max-bulk-len, together over a
	// 1 MiB client-query-buffer-limit, whether read at once or in pieces.
	arg := strings.Repeat("v", 700<<10)
	in := AppendCommand(nil, "SET", arg, arg)
	for _, chunk := range []int{len(in), 4096} {
		g, fc := newTestReader(in, chunk)
		g.lim.Shared.QueryBufLimit.Store(1 << 20)
		out, _, err := readAll(g)
		if !errors.Is(err, ErrQueryBufLimit) || len(out) != 0 || fc.Out.Len() != 0 {
			t.Fatalf("chunk %d: err %v, out %d bytes, wrote %q", chunk, err, len(out), fc.Out.String())
		}
	}
}

// TestRequestBatchesWholeCommands checks what ReadBatch hands out: whole
// canonical commands only (the input arrives 7 bytes at a time), inline
// commands rewritten as multibulk, empty ones dropped, and a batch's bytes
// left untouched by later reads (queued commands alias them).
func TestRequestBatchesWholeCommands(t *testing.T) {
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*0\r\nPING x\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$4\r\nPING\r\n$1\r\nx\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	g, _ := newTestReader([]byte(in), 0)
	var batches [][]byte
	var snapshots []string
	var all []byte
	for i := 0; i < 1000; i++ {
		b, nargs, err := g.ReadBatch()
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
			requireSameSplit(t, b, args, rest)
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

// TestRequestFastPathMatchesStateMachine feeds the same random request
// streams (canonical commands, odd but valid forms, inline commands) to a
// reader in one read, where whole canonical commands take the fast path,
// and one byte per read, where the state machine parses everything: the
// canonical bytes and argument counts handed out must be the same.
func TestRequestFastPathMatchesStateMachine(t *testing.T) {
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
			g, _ := newTestReader(in, chunk)
			out, total, _ := readAll(g)
			return string(out), total
		}
		fastOut, fastArgs := run(len(in))
		slowOut, slowArgs := run(1)
		if fastOut != slowOut || fastArgs != slowArgs {
			t.Fatalf("input %q:\none read:  %q (%d args)\nbytewise:  %q (%d args)", in, fastOut, fastArgs, slowOut, slowArgs)
		}
	}
}

// TestRequestCanonicalisesInline checks Redis's inline quoting rules.
func TestRequestCanonicalisesInline(t *testing.T) {
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

// loopConn serves the same bytes on every Read (a steady pipeline).
type loopConn struct {
	resptest.Conn
	payload []byte
}

func (l *loopConn) Read(p []byte) (int, error) { return copy(p, l.payload), nil }

// TestRequestSteadyPipelineAllocatesNothing: once warmed up, a read of
// whole canonical commands handed back with Recycle costs no allocation
// (the two batch buffers alternate).
func TestRequestSteadyPipelineAllocatesNothing(t *testing.T) {
	var payload []byte
	for range 16 {
		payload = AppendCommand(payload, "GET", "key:000001")
	}
	assertBatchesAllocateNothing(t, NewRequestReader(&loopConn{payload: payload}, testLimits()), payload, 32)
}

// assertBatchesAllocateNothing reads batches from g, each of which must be
// want (of args arguments), and fails if a warmed-up batch read and
// recycled allocates.
func assertBatchesAllocateNothing(t *testing.T, g *RequestReader, want []byte, args int) {
	t.Helper()
	step := func() {
		b, n, err := g.ReadBatch()
		if err != nil || !bytes.Equal(b, want) || n != args {
			t.Fatalf("batch of %d bytes, %d args, err %v", len(b), n, err)
		}
		g.Recycle()
	}
	for range 4 {
		step()
	}
	if a := testing.AllocsPerRun(50, step); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}

// FuzzRequestReader feeds arbitrary bytes to the reader in one read and
// in small reads: the canonical bytes, argument counts, protocol error line
// and final error must be the same either way, every batch must split into
// whole commands, and anything written must be one protocol error line.
func FuzzRequestReader(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET a 1\r\nINCRBY a 5\r\n\r\n*0\r\n*-1\r\n",
		"set \"a\\x41\" 'b c'\r\nkeys *\r\n",
		"*3000000000\r\n",
		"*2\r\n$-5\r\n",
		"*1\r\nfoo\r\n",
		"*02\r\n$01\r\nax\n$1\r\nbyz",
		"set \"\"\"k\"\"\" v\r\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	// Big arguments (bigArg): their own batches and direct reads, with
	// commands around them, an unchecked terminator, a truncated payload.
	bigv := strings.Repeat("v", bigArg+5)
	f.Add([]byte("PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$"+fmt.Sprint(len(bigv))+"\r\n"+bigv+"xy*1\r\n$4\r\nPING\r\n"), uint8(200))
	f.Add([]byte("*2\r\n$"+fmt.Sprint(len(bigv))+"\r\n"+bigv+"\r\n$"+fmt.Sprint(len(bigv))+"\r\n"+bigv[:100]), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if len(data) > 1<<16 {
			return
		}
		type result struct {
			out   string
			args  int
			wrote string
			err   error
		}
		run := func(chunk int) result {
			g, fc := newTestReader(data, chunk)
			var r result
			for i := 0; i < 1_000_000; i++ {
				b, n, err := g.ReadBatch()
				if err != nil {
					r.err = err
					break
				}
				if len(b) == 0 || n <= 0 {
					t.Fatalf("empty batch (%d args)", n)
				}
				args := 0
				for rest := b; len(rest) > 0; {
					complete, a, _, next, err := redcon.ReadNextCommand(rest, nil)
					if err != nil || !complete || len(a) == 0 {
						t.Fatalf("batch %q does not split: %v", b, err)
					}
					requireSameSplit(t, rest, a, next)
					args += len(a)
					rest = next
				}
				if args != n {
					t.Fatalf("batch %q: %d args, reader said %d", b, args, n)
				}
				r.out, r.args = r.out+string(b), r.args+n
				g.Recycle()
			}
			r.wrote = fc.Out.String()
			return r
		}
		whole := run(len(data) + 1)
		pieces := run(1 + int(chunk)%16)
		if whole != pieces {
			t.Fatalf("input %q:\none read: %+v\npieces:   %+v", data, whole, pieces)
		}
		switch {
		case errors.Is(whole.err, ErrProtocolClosed):
			if !strings.HasPrefix(whole.wrote, "-ERR Protocol error: ") || strings.IndexAny(whole.wrote, "\r\n") != len(whole.wrote)-2 {
				t.Fatalf("protocol error line %q", whole.wrote)
			}
		case whole.err == io.EOF:
			if whole.wrote != "" {
				t.Fatalf("wrote %q without a protocol error", whole.wrote)
			}
		default:
			t.Fatalf("unexpected error %v", whole.err)
		}
	})
}

// BenchmarkRequestReaderPipeline: one read of 16 pipelined GETs, parsed
// (fast path) and handed out as a batch.
func BenchmarkRequestReaderPipeline(b *testing.B) {
	var payload []byte
	for range 16 {
		payload = AppendCommand(payload, "GET", "key:000001")
	}
	g := NewRequestReader(&loopConn{payload: payload}, testLimits())
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := g.ReadBatch(); err != nil {
			b.Fatal(err)
		}
		g.Recycle()
	}
}

// TestRequestPartialCommandAccounting: while a command is incomplete, qbuf
// counts the partial argument's payload received (as Redis's query buffer
// does), argv-mem the arguments already read whole, and a big argument's
// buffer is its announced size at once; OnPartial runs before each read
// that waits for more of the command.
func TestRequestPartialCommandAccounting(t *testing.T) {
	const big = 100_000
	payload := strings.Repeat("v", big/2)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + fmt.Sprint(big) + "\r\n" + payload // half of the value
	g, _ := newTestReader([]byte(in), 4096)
	partials := 0
	g.lim.OnPartial = func() { partials++ }
	_, _, err := readAll(g)
	if err != io.EOF {
		t.Fatalf("err %v, want EOF", err)
	}
	if got := g.QueryBuffered(); got != big/2 {
		t.Fatalf("qbuf %d, want %d (the value's payload so far)", got, big/2)
	}
	if got := g.PartialArgv(); got != 4 { // SET, k
		t.Fatalf("argv %d, want 4", got)
	}
	if held := g.MemoryHeld(); held < big+ReadSize || held > big+ReadSize+4096 {
		t.Fatalf("held %d, want the value's size plus the read buffer", held)
	}
	if want := len(in) / 4096; partials < want {
		t.Fatalf("OnPartial ran %d times, want at least %d", partials, want)
	}
}

// An argument longer than bigArgReserve reserves only that much for its
// announcement; its buffer grows as its bytes come and ends at the
// command's exact size.
func TestRequestBigArgumentReserve(t *testing.T) {
	const big = bigArgReserve + 4<<20
	header := "*1\r\n$" + fmt.Sprint(big) + "\r\n"
	fc := resptest.NewConn([]byte(header+strings.Repeat("v", 1<<20)), 64<<10)
	lim := testLimits()
	lim.Shared.ProtoMaxBulkLen.Store(64 << 20)
	lim.Shared.QueryBufLimit.Store(64 << 20)
	g := NewRequestReader(fc, lim)
	if _, _, err := readAll(g); err != io.EOF {
		t.Fatalf("err %v, want EOF", err)
	}
	if held := g.MemoryHeld(); held > bigArgReserve+2*ReadSize+int64(len(header)) {
		t.Fatalf("held %d after a 1 MB start, want at most the reserve", held)
	}
	// The whole argument, in reads of an odd size.
	whole := header + strings.Repeat("v", big) + "\r\n"
	g = NewRequestReader(resptest.NewConn([]byte(whole), 100_003), lim)
	batch, _, err := g.ReadBatch()
	if err != nil || len(batch) != len(whole) {
		t.Fatalf("batch of %d bytes, err %v; want %d", len(batch), err, len(whole))
	}
	if cap(g.handed) != len(whole) {
		t.Fatalf("the argument's buffer has capacity %d, want exactly %d", cap(g.handed), len(whole))
	}
}

// readSizeConn records the size of every Read asked of it.
type readSizeConn struct {
	*resptest.Conn
	asked []int
}

func (c *readSizeConn) Read(p []byte) (int, error) {
	c.asked = append(c.asked, len(p))
	return c.Conn.Read(p)
}

// A command with a big argument is a batch of its own, and its payload is
// read from the socket straight into its room: reads as big as what the
// argument still owes, not the read buffer's size.
func TestRequestBigArgumentOwnBatchDirectRead(t *testing.T) {
	big := strings.Repeat("v", 100_000)
	var in []byte
	in = AppendCommand(in, "GET", "a")
	in = AppendCommand(in, "SET", "k1", big)
	in = AppendCommand(in, "SET", "k2", big, "EX", "10")
	in = AppendCommand(in, "GET", "b")
	fc := &readSizeConn{Conn: resptest.NewConn(in, 1<<20)}
	g := NewRequestReader(fc, testLimits())
	var got []byte
	var argc []int
	for range 10 {
		b, n, err := g.ReadBatch()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, argc = append(got, b...), append(argc, n)
		g.Recycle()
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("handed out %d bytes, not the %d sent", len(got), len(in))
	}
	if fmt.Sprint(argc) != "[2 3 5 2]" {
		t.Fatalf("batches of %v arguments, want [2 3 5 2]", argc)
	}
	direct := 0
	for _, n := range fc.asked {
		if n > ReadSize {
			direct++
		}
	}
	if direct < 2 || len(fc.asked) > 10 {
		t.Fatalf("reads asked %v: want each big payload read in one direct read", fc.asked)
	}
}

// cycleConn serves its payload over and over, chunk bytes per Read at most.
type cycleConn struct {
	resptest.Conn
	payload []byte
	pos     int
}

func (c *cycleConn) Read(p []byte) (int, error) {
	n := copy(p[:min(len(p), 40_000)], c.payload[c.pos:])
	c.pos = (c.pos + n) % len(c.payload)
	return n, nil
}

// TestRequestBigArgumentsPipelineAllocatesNothing: a steady stream of
// 100 KB SETs reuses the recycled big batch for the next argument.
func TestRequestBigArgumentsPipelineAllocatesNothing(t *testing.T) {
	payload := AppendCommand(nil, "SET", "key", strings.Repeat("v", 100_000))
	assertBatchesAllocateNothing(t, NewRequestReader(&cycleConn{payload: payload}, testLimits()), payload, 3)
}
