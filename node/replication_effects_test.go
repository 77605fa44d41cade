package node

import (
	"bufio"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/resp"
	"github.com/stretchr/testify/require"
)

// streamCapture is a replica connection that records the commands of a
// master's replication stream (PSYNC ? -1, the RDB, then every command),
// skipping the keep-alives.
type streamCapture struct {
	t    *testing.T
	conn net.Conn
	rd   *resp.StreamReader
}

func captureStream(t *testing.T, addr string) *streamCapture {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testIOTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(testIOTimeout))
	rd := resp.NewStreamReader(bufio.NewReader(conn), resp.StreamLimits{})
	for _, cmd := range [][]string{{"REPLCONF", "capa", "psync2"}, {"PSYNC", "?", "-1"}} {
		if _, err := conn.Write(resp.AppendCommand(nil, cmd...)); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadLine()
		for keepAlives := 0; err == nil && line == "" && cmd[0] == "PSYNC" && keepAlives < 30; keepAlives++ {
			line, err = rd.ReadLine() // a keep-alive newline (lineAfterKeepAlives)
		}
		if err != nil {
			t.Fatal(err)
		}
		if cmd[0] == "PSYNC" && !strings.HasPrefix(line, "+FULLRESYNC") {
			t.Fatalf("PSYNC: %q", line)
		}
	}
	if _, err := rd.ReadPayload(func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return &streamCapture{t: t, conn: conn, rd: rd}
}

// read returns the stream's commands until one equal to the marker
// "SET __end__ x" (excluded), normalized: timestamps and stream IDs are
// blurred so shoal's and Redis's streams compare, and unless framed the
// SELECTs and the MULTI/EXEC wrapping are left out.
func (sc *streamCapture) read(framed bool) []string {
	sc.t.Helper()
	var out []string
	var args [][]byte
	for {
		_ = sc.conn.SetReadDeadline(time.Now().Add(testIOTimeout))
		var err error
		args, _, err = sc.rd.ReadCommand(args)
		if err != nil {
			sc.t.Fatalf("reading the stream: %v (so far %q)", err, out)
		}
		var parts []string
		for _, a := range args {
			parts = append(parts, string(a))
		}
		line := strings.Join(parts, " ")
		switch strings.ToUpper(parts[0]) {
		case "PING", "REPLCONF":
			continue
		case "SELECT", "MULTI", "EXEC":
			if !framed {
				continue
			}
		}
		if line == "SET __end__ x" {
			return out
		}
		out = append(out, normalizeEffect(line))
	}
}

var (
	unixMsRE    = regexp.MustCompile(`\b1[0-9]{12}\b`)
	streamIDRE  = regexp.MustCompile(`<ts>-[0-9]+`)
	floatTailRE = regexp.MustCompile(`(\d+\.\d{10})\d+`)
)

func normalizeEffect(s string) string {
	s = unixMsRE.ReplaceAllString(s, "<ts>")
	s = streamIDRE.ReplaceAllString(s, "<id>")
	return floatTailRE.ReplaceAllString(s, "$1")
}

// effectScript is run against both masters; its stream must match.
var effectScript = [][]string{
	{"SET", "s1", "v", "EX", "100"},
	{"SET", "s2", "v", "PX", "100000", "GET"},
	{"SET", "s1", "w", "NX"}, // nothing
	{"SETEX", "s3", "100", "v"},
	{"PSETEX", "s4", "100000", "v"},
	{"GETEX", "s1", "EX", "200"},
	{"GETEX", "s1", "PERSIST"},
	{"GETEX", "s1", "PERSIST"}, // nothing
	{"GETEX", "s1"},            // nothing
	{"GETDEL", "s4"},
	{"GETDEL", "s4"}, // nothing
	{"GETSET", "s4", "x"},
	{"INCRBYFLOAT", "f", "1.5"},
	{"INCRBYFLOAT", "f", "0.1"},
	{"HINCRBYFLOAT", "h", "x", "2.5"},
	{"EXPIRE", "s2", "100"},
	{"EXPIRE", "s2", "100", "NX"}, // nothing
	{"EXPIRE", "nokey", "100"},    // nothing
	{"PEXPIRE", "s2", "50000", "GT"},
	{"PERSIST", "s2"},
	{"PERSIST", "s2"}, // nothing
	{"EXPIRE", "s2", "-1"},
	{"SADD", "set1", "a"},
	{"SPOP", "set1"},
	{"SPOP", "set1"}, // nothing
	{"SADD", "set2", "a", "b", "c"},
	{"SPOP", "set2", "10"},
	{"RPUSH", "l", "a", "b", "c", "d"},
	{"BLPOP", "l", "0"},
	{"BRPOP", "l", "0"},
	{"LMPOP", "1", "l", "LEFT", "COUNT", "5"},
	{"LPOP", "l"}, // nothing
	{"RPUSH", "l", "a", "b"},
	{"BLMOVE", "l", "l2", "LEFT", "RIGHT", "0"},
	{"BRPOPLPUSH", "l", "l2", "0"},
	{"BLMPOP", "0", "1", "l2", "RIGHT", "COUNT", "1"},
	{"ZADD", "z", "1", "a", "2", "b", "3", "c"},
	{"BZPOPMIN", "z", "0"},
	{"BZPOPMAX", "z", "0"},
	{"ZADD", "z", "4", "d"},
	{"ZMPOP", "1", "z", "MIN", "COUNT", "5"},
	{"ZMPOP", "2", "z", "nozset", "MAX", "COUNT", "5"}, // nothing
	{"LMPOP", "2", "nolist", "nolist2", "LEFT"},        // nothing
	{"XADD", "st", "*", "f", "v"},
	{"XADD", "st", "MAXLEN", "~", "1", "*", "f", "v"},
	{"XGROUP", "CREATE", "st", "g", "0"},
	{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "st", ">"},
	{"XREADGROUP", "GROUP", "g", "c2", "NOACK", "COUNT", "1", "STREAMS", "st", ">"},
	{"XTRIM", "st", "MAXLEN", "~", "0"},
	{"DEL", "nokey", "nokey2"}, // nothing
	{"SADD", "set3", "a"},
	{"SADD", "set3", "a"},   // nothing
	{"SREM", "set3", "zz"},  // nothing
	{"HDEL", "h", "zz"},     // nothing
	{"ZREM", "z", "zz"},     // nothing
	{"ZREM", "nokey", "zz"}, // nothing
	{"SREM", "set3", "a"},
}

// TestReplicationEffectsMatchRedis runs the same commands on a shoal master
// and a redis-server master and compares what each propagates.
func TestReplicationEffectsMatchRedis(t *testing.T) {
	streams := streamsOfShoalAndRedis(t, false, func(addr string, tc *testConn) {
		for _, cmd := range effectScript {
			tc.do(cmd...)
		}
		// A blocked pop served later is propagated as the pop.
		blocked := dialTestAddr(t, addr)
		blocked.send("BLPOP", "later", "0")
		time.Sleep(50 * time.Millisecond)
		tc.do("RPUSH", "later", "x")
		blocked.read()
	})
	shoal, redis := streams[0], streams[1]
	if strings.Join(shoal, "\n") != strings.Join(redis, "\n") {
		t.Fatalf("streams differ\nshoal:\n  %s\nredis:\n  %s", strings.Join(shoal, "\n  "), strings.Join(redis, "\n  "))
	}
}

// streamsOfShoalAndRedis runs fn against a shoal master and a redis-server
// master (addr, a connection) and returns what each propagated, up to the
// "SET __end__ x" sent after fn (framed: SELECT, MULTI and EXEC kept).
func streamsOfShoalAndRedis(t *testing.T, framed bool, fn func(addr string, tc *testConn)) [2][]string {
	t.Helper()
	redisAddr := startRealRedis(t)
	ms := startReplServer(t)
	var streams [2][]string
	for i, addr := range []string{ms.Addr().String(), redisAddr} {
		sc := captureStream(t, addr)
		tc := dialTestAddr(t, addr)
		fn(addr, tc)
		tc.do("SET", "__end__", "x")
		streams[i] = sc.read(framed)
	}
	return streams
}

// TestTransactionAcrossDatabasesStreamMatchesRedis: a transaction that
// changes databases leaves the stream in its last database, as Redis's
// does; the next command needs no SELECT (unit/multi "MULTI / EXEC is
// propagated correctly (multiple commands with SELECT)").
func TestTransactionAcrossDatabasesStreamMatchesRedis(t *testing.T) {
	streams := streamsOfShoalAndRedis(t, true, func(_ string, tc *testConn) {
		for _, cmd := range [][]string{{"SET", "a", "1"}, {"MULTI"}, {"SELECT", "1"}, {"SET", "x", "1"},
			{"SELECT", "2"}, {"SET", "y", "1"}, {"EXEC"}, {"SET", "z", "1"}, {"SELECT", "0"}} {
			tc.do(cmd...)
		}
	})
	require.Equal(t, streams[1], streams[0], "shoal's stream (actual) against Redis's (expected)")
	require.Equal(t, []string{"SELECT 0", "SET a 1", "SELECT 1", "MULTI", "SET x 1", "SELECT 2", "SET y 1", "EXEC", "SET z 1", "SELECT 0"}, streams[0])
}

// TestReplicationEffectsApplyOnReplica: the same commands on a master with a
// shoal replica leave both with the same dataset.
func TestReplicationEffectsApplyOnReplica(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	for _, cmd := range effectScript {
		m.do(cmd...)
	}
	m.do("XADD", "st", "*", "f", "v")
	m.do("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "st", ">")
	m.do("XCLAIM", "st", "g", "c4", "0", "0-1", "JUSTID")
	m.do("XAUTOCLAIM", "st", "g", "c5", "0", "0")
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
	// The pending entries and their owners (entries-read may differ, as
	// with Redis 7.0: XCLAIM's LASTID does not carry it).
	if a, b := m.do("XPENDING", "st", "g"), r.do("XPENDING", "st", "g"); a != b {
		t.Fatalf("XPENDING master %q replica %q", a, b)
	}
}
