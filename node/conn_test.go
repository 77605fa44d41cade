package node

import (
	"bytes"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/resp/resptest"
	"github.com/stretchr/testify/require"
)

// cmdstatCalls returns calls= of cmdstat_<name> in an INFO reply, or -1.
func cmdstatCalls(t *testing.T, info, name string) string {
	t.Helper()
	m := regexp.MustCompile(`cmdstat_` + name + `:calls=(\d+),`).FindStringSubmatch(info)
	if m == nil {
		return "-1"
	}
	return m[1]
}

// TestPipelinedStatsAreCountedBeforeReplies pins what the per-connection
// statistics accumulator (node/dispatch_stats.go) must keep from Redis: a command
// whose reply a client has seen is counted in INFO on any connection; INFO
// later in the same pipeline counts the commands before it; INFO after INFO
// counts the first; rejected calls are counted too.
func TestPipelinedStatsAreCountedBeforeReplies(t *testing.T) {
	s := startTestServer(t)
	a, b := dialTest(t, s), dialTest(t, s)

	// 16 pipelined GETs on a: once their replies are read, b sees 16 calls.
	var req []byte
	for range 16 {
		req = append(req, encodeCommand("GET", "k")...)
	}
	a.writeRaw(req)
	for range 16 {
		a.read()
	}
	if got := cmdstatCalls(t, b.do("INFO", "commandstats"), "get"); got != "16" {
		t.Fatalf("after 16 GET replies, another client's INFO counts %s GET calls", got)
	}

	// SET, SET, INFO in one pipeline: INFO counts both SETs.
	a.writeRaw(append(append(encodeCommand("SET", "k", "1"), encodeCommand("SET", "k", "2")...), encodeCommand("INFO", "commandstats")...))
	a.read()
	a.read()
	if got := cmdstatCalls(t, bulkBody(t, a.read()), "set"); got != "2" {
		t.Fatalf("INFO after two pipelined SETs counts %s", got)
	}

	// INFO after INFO counts the first INFO (the one running is not counted yet).
	a.writeRaw(append(encodeCommand("INFO", "commandstats"), encodeCommand("INFO", "commandstats")...))
	first, second := bulkBody(t, a.read()), bulkBody(t, a.read())
	if n1, n2 := cmdstatCalls(t, first, "info"), cmdstatCalls(t, second, "info"); n2 == "-1" || n1 == n2 {
		t.Fatalf("INFO then INFO: calls %s then %s", n1, n2)
	}

	// A rejected call (wrong arity) shows up as rejected_calls.
	if r := a.do("GET"); !strings.HasPrefix(r, "-ERR wrong number of arguments") {
		t.Fatalf("GET without a key: %q", r)
	}
	info := b.do("INFO", "commandstats")
	if !regexp.MustCompile(`cmdstat_get:calls=16,.*rejected_calls=1,`).MatchString(info) {
		t.Fatalf("rejected GET not counted: %q", info)
	}
	if !bytes.Contains([]byte(b.do("INFO", "stats")), []byte("total_commands_processed:")) {
		t.Fatal("INFO stats has no total_commands_processed")
	}
}

// TestQueuedArgumentsSurviveLaterBatches runs a transaction whose commands
// arrive in many small reads (7 bytes each): every batch is handed back for
// reuse unless a command kept its arguments, and the queued SETs must still
// hold their own keys and values when EXEC runs them batches later.
func TestQueuedArgumentsSurviveLaterBatches(t *testing.T) {
	srv := newFuzzServer(t)
	var in []byte
	in = append(in, encodeCommand("MULTI")...)
	for _, kv := range [][2]string{{"alpha", "one"}, {"beta", "two"}, {"gamma", "three"}} {
		in = append(in, encodeCommand("SET", kv[0], kv[1])...)
		in = append(in, encodeCommand("PING", "filler-"+kv[0])...) // queued too
	}
	in = append(in, encodeCommand("EXEC")...)
	in = append(in, encodeCommand("MGET", "alpha", "beta", "gamma")...)
	for _, chunk := range []int{7, 1, len(in)} {
		srv.ks.FlushAll()
		fc := resptest.NewConn(in, chunk)
		c := newFuzzClient(srv, fc)
		_ = srv.serveRequests(c, resumeRead)
		out := fc.Out.String()
		want := "*6\r\n+OK\r\n$12\r\nfiller-alpha\r\n+OK\r\n$11\r\nfiller-beta\r\n+OK\r\n$12\r\nfiller-gamma\r\n" +
			"*3\r\n$3\r\none\r\n$3\r\ntwo\r\n$5\r\nthree\r\n"
		if !strings.HasSuffix(out, want) {
			t.Fatalf("chunk %d: replies %q\nwant them to end with %q", chunk, out, want)
		}
	}
}

// TestRequestWithCloseIsAnsweredAndClosed: a client that sends its requests
// and closes its side at once (printf ... | nc -q0) gets every reply, then
// the end of the stream: the server sees the FIN that came with the data
// (internal/rawsock's reader waits for new readiness only after a read that
// left the socket empty, FIN included).
func TestRequestWithCloseIsAnsweredAndClosed(t *testing.T) {
	s := startTestServer(t)
	for round := range 20 {
		c, err := net.DialTimeout("tcp", s.Addr().String(), testIOTimeout)
		require.NoError(t, err)
		_, err = c.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"))
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
		require.NoError(t, c.SetReadDeadline(time.Now().Add(testIOTimeout)))
		got, err := io.ReadAll(c) // to the server's end of stream
		require.NoError(t, err, "round %d: no end of stream from the server (read %q)", round, got)
		require.Equal(t, "+PONG\r\n$2\r\nhi\r\n", string(got), "round %d", round)
		_ = c.Close()
	}
}
