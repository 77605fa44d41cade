package node

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientListed reports whether CLIENT LIST (seen by tc) has a client named
// name, and its omem.
func clientListed(t *testing.T, tc *testConn, name string) (bool, int64) {
	t.Helper()
	for _, line := range strings.Split(bulkBody(t, tc.do("CLIENT", "LIST")), "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		m := regexp.MustCompile(` omem=(\d+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no omem in %q", line)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return true, n
	}
	return false, 0
}

// waitUnlisted waits (bounded) until the client named name is gone.
func waitUnlisted(t *testing.T, tc *testConn, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for i := 0; ; i++ {
		if ok, _ := clientListed(t, tc, name); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s still connected after %v", name, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectClosedWithNothing asserts that the connection ends without a byte.
func expectClosedWithNothing(t *testing.T, tc *testConn) {
	t.Helper()
	_ = tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	b, err := io.ReadAll(tc.r)
	if len(b) != 0 {
		t.Fatalf("a client past its hard limit received %d bytes (%.60q...)", len(b), b)
	}
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("connection did not end: %v", err)
	}
}

// TestOutputHardLimitPipeline is unit/obuf-limits' "No response for multi
// commands in pipeline" and "... for single command": a pipeline or a reply
// that passes the normal class's hard limit gets nothing and is closed (the
// server held all the replies before).
func TestOutputHardLimitPipeline(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "normal 100000 0 0")
	admin, rd := dialTest(t, s), dialTest(t, s)
	admin.do("SET", "bigkey", strings.Repeat("x", 10000))
	if r := rd.do("CLIENT", "SETNAME", "multicommands"); r != "+OK\r\n" {
		t.Fatalf("SETNAME: %q", r)
	}
	var req []byte
	for i := range 15 {
		n := strconv.Itoa(i)
		req = append(req, encodeCommand("SET", n, n)...)
		req = append(req, encodeCommand("GET", n)...)
		req = append(req, encodeCommand("DEL", n)...)
		req = append(req, encodeCommand("GET", "bigkey")...)
	}
	rd.writeRaw(req)
	expectClosedWithNothing(t, rd)
	waitUnlisted(t, admin, "multicommands", testIOTimeout)
	info := bulkBody(t, admin.do("INFO", "clients"))
	m := regexp.MustCompile(`client_recent_max_output_buffer:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO clients: %q", info)
	}
	if n, _ := strconv.Atoi(m[1]); n < 100000 {
		t.Fatalf("client_recent_max_output_buffer = %d, want >= the 100000 the client reached", n)
	}
	// "No response for single command": one reply past the limit.
	item := strings.Repeat("x", 1000)
	for range 150 {
		admin.do("LPUSH", "mylist", item)
	}
	one := dialTest(t, s)
	one.do("CLIENT", "SETNAME", "mybiglist")
	one.send("LRANGE", "mylist", "0", "-1")
	expectClosedWithNothing(t, one)
	waitUnlisted(t, admin, "mybiglist", testIOTimeout)
	// Without a limit the same pipeline is answered in full.
	admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
	ok := dialTest(t, s)
	ok.writeRaw(req)
	for i := range 15 * 4 {
		r := ok.read()
		if i%4 == 3 && len(r) != 10000+len("$10000\r\n\r\n") {
			t.Fatalf("reply %d: %d bytes", i, len(r))
		}
	}
}

// TestOutputHardLimitTransactionCompletes is "Execute transactions
// completely even if client output buffer limit is enforced": EXEC's reply
// passes the limit, the client is closed, every queued command ran.
func TestOutputHardLimitTransactionCompletes(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "normal 100000 0 0")
	admin, tx := dialTest(t, s), dialTest(t, s)
	item := strings.Repeat("x", 1000)
	for range 150 {
		admin.do("LPUSH", "mylist2", item)
	}
	tx.do("CLIENT", "SETNAME", "transactionclient")
	tx.do("SET", "k1", "v1")
	tx.do("MULTI")
	for _, cmd := range [][]string{{"SET", "k2", "v2"}, {"GET", "k2"}, {"LRANGE", "mylist2", "0", "-1"}, {"SET", "k3", "v3"}, {"DEL", "k1"}} {
		if r := tx.do(cmd...); r != "+QUEUED\r\n" {
			t.Fatalf("%v: %q", cmd, r)
		}
	}
	tx.send("EXEC")
	expectClosedWithNothing(t, tx)
	waitUnlisted(t, admin, "transactionclient", testIOTimeout)
	if r := admin.do("MGET", "k1", "k2", "k3"); r != "*3\r\n$-1\r\n$2\r\nv2\r\n$2\r\nv3\r\n" {
		t.Fatalf("after the closed EXEC: MGET k1 k2 k3 = %q", r)
	}
}

// TestOutputSoftLimitWhileWriteBlocked: a client that pipelines large
// replies and does not read holds a blocked write; omem shows what is held,
// and the cron closes it once the soft limit has been passed for longer
// than its seconds. The pipeline waits in the kernel meanwhile: the server
// holds about outputFlushAt, not the 32 MB asked for.
func TestOutputSoftLimitWhileWriteBlocked(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "normal 0 200000 1")
	admin, slow := dialTest(t, s), dialTest(t, s)
	admin.do("SET", "big", strings.Repeat("v", 1<<20))
	slow.do("CLIENT", "SETNAME", "slowreader")
	var req []byte
	for range 32 {
		req = append(req, encodeCommand("GET", "big")...)
	}
	start := time.Now()
	slow.writeRaw(req)
	sawHeld := false
	deadline := start.Add(testIOTimeout)
	for {
		listed, omem := clientListed(t, admin, "slowreader")
		if !listed {
			break
		}
		if omem >= 200000 {
			sawHeld = true
		}
		if omem > 2*outputFlushAt {
			t.Fatalf("the server holds %d bytes for a client that does not read", omem)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client over its soft limit is still connected after %v", testIOTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawHeld {
		t.Fatal("CLIENT LIST never showed the blocked write's bytes in omem")
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("closed after %v, before the soft limit's 1 s", d)
	}
}

// TestOutputHardLimitRandomSampling is "Obuf limit, HRANDFIELD with huge
// count stopped mid-run": with a hard limit the sampling stops when the
// reply passes it and the client is closed (without one, shoal refuses a
// reply that could not be built).
func TestOutputHardLimitRandomSampling(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "normal 1000000 0 0")
	admin, c := dialTest(t, s), dialTest(t, s)
	admin.do("HSET", "myhash", "a", "b")
	admin.do("SADD", "myset", "a")
	admin.do("ZADD", "myzset", "1", "a")
	for _, cmd := range [][]string{
		{"HRANDFIELD", "myhash", "-999999999"},
		{"SRANDMEMBER", "myset", "-999999999"},
		{"ZRANDMEMBER", "myzset", "-999999999"},
	} {
		c.send(cmd...)
		expectClosedWithNothing(t, c)
		c = dialTest(t, s)
	}
	admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
	if r := c.do("HRANDFIELD", "myhash", "-999999999"); r != "-ERR value is out of range\r\n" {
		t.Fatalf("HRANDFIELD with a huge count and no limit: %q", r)
	}
}

// TestLargeRepliesKeepOrder: large replies are queued as built, small ones
// copied between them; a batch mixing both (and one that turns into a
// subscriber) is answered in order, byte for byte.
func TestLargeRepliesKeepOrder(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	big := strings.Repeat("0123456789", 20000) // 200 kB: a block of its own
	c.do("SET", "big", big)
	bigReply := "$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	var req []byte
	var want []string
	for i := range 10 {
		req = append(req, encodeCommand("ECHO", "e"+strconv.Itoa(i))...)
		want = append(want, "$2\r\ne"+strconv.Itoa(i)+"\r\n")
		if i%3 != 2 {
			req = append(req, encodeCommand("GET", "big")...)
			want = append(want, bigReply)
		}
	}
	req = append(req, encodeCommand("SUBSCRIBE", "ch")...)
	want = append(want, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
	c.writeRaw(req)
	for i, w := range want {
		if got := c.read(); got != w {
			t.Fatalf("reply %d: got %d bytes (%.40q), want %d bytes (%.40q)", i, len(got), got, len(w), w)
		}
	}
}

// TestOutputHardLimitBlockedAndKeys: a blocked client served a reply past
// its hard limit is closed with nothing sent; KEYS stops (and closes the
// client) once its reply passes the limit.
func TestOutputHardLimitBlockedAndKeys(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "normal 100000 0 0")
	admin, blocked := dialTest(t, s), dialTest(t, s)
	blocked.do("CLIENT", "SETNAME", "blockedclient")
	blocked.send("BLPOP", "biglist", "0")
	deadline := time.Now().Add(testIOTimeout)
	for !strings.Contains(bulkBody(t, admin.do("INFO", "clients")), "blocked_clients:1\r\n") {
		if time.Now().After(deadline) {
			t.Fatal("BLPOP did not block")
		}
		time.Sleep(10 * time.Millisecond)
	}
	admin.do("LPUSH", "biglist", strings.Repeat("z", 200000))
	expectClosedWithNothing(t, blocked)
	waitUnlisted(t, admin, "blockedclient", testIOTimeout)

	for i := range 1000 {
		admin.do("SET", "long-key-name-prefix-of-100-chars-"+strings.Repeat("-", 66)+strconv.Itoa(i), "v")
	}
	k := dialTest(t, s)
	k.send("KEYS", "*")
	expectClosedWithNothing(t, k)
}

// TestOutputLimitLoweredWhileWriteBlocked: a limit lowered by CONFIG SET
// closes a client whose blocked write holds more (the cron's check, as
// Redis's clientsCron).
func TestOutputLimitLoweredWhileWriteBlocked(t *testing.T) {
	s := startTestServer(t)
	admin, slow := dialTest(t, s), dialTest(t, s)
	admin.do("SET", "big", strings.Repeat("v", 1<<20))
	slow.do("CLIENT", "SETNAME", "slowreader")
	var req []byte
	for range 64 {
		req = append(req, encodeCommand("GET", "big")...)
	}
	slow.writeRaw(req)
	deadline := time.Now().Add(testIOTimeout)
	for {
		listed, omem := clientListed(t, admin, "slowreader")
		if !listed {
			t.Fatal("the slow reader was closed with no limit set")
		}
		if omem >= 200000 {
			break // a write is blocked
		}
		if time.Now().After(deadline) {
			t.Fatal("no blocked write seen in omem")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 100000 0 0"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", r)
	}
	waitUnlisted(t, admin, "slowreader", testIOTimeout)
}
