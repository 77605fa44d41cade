package node

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp/resptest"
)

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

// newFuzzClient registers an authenticated client reading from fc, which
// runs the real request path (guard → redcon's parser → dispatcher →
// handlers → one write per batch) without sockets.
func newFuzzClient(s *Server, fc *resptest.Conn) *Client {
	g := s.newGuard(fc)
	c := s.bindClient(&Client{srv: s, guard: g, id: s.nextClientID.Add(1), created: time.Now(),
		addr: fc.RemoteAddr().String(), laddr: fc.LocalAddr().String(), authenticated: true})
	c.Proto = 2
	c.multiLen.Store(-1)
	g.SetLimits(c.limitsView())
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
		fc := resptest.NewConn(data, 0)
		c := newFuzzClient(srv, fc)
		before := srv.stats.panics.Load()
		_ = srv.serveRequests(c, resumeRead)
		if srv.stats.panics.Load() != before {
			t.Fatalf("a command of %q panicked", data)
		}
		// Replies, well-formed RESP, then the guard's protocol error line if
		// any, last.
		out := fc.Out.Bytes()
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
