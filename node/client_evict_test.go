package node

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

// clientField returns field f of the CLIENT LIST line of the client named
// name, and whether that client is listed.
func clientField(t *testing.T, ctl *testConn, name, f string) (string, bool) {
	t.Helper()
	for _, line := range strings.Split(bulkBody(t, ctl.do("CLIENT", "LIST")), "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok && k == f {
				return v, true
			}
		}
		t.Fatalf("no field %s in %q", f, line)
	}
	return "", false
}

func clientFieldInt(t *testing.T, ctl *testConn, name, f string) int64 {
	t.Helper()
	v, ok := clientField(t, ctl, name, f)
	if !ok {
		t.Fatalf("no client named %s", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", f, v, err)
	}
	return n
}

// namedClient connects a client and names it.
func namedClient(t *testing.T, s *Server, name string) *testConn {
	t.Helper()
	tc := dialTest(t, s)
	if got := tc.do("CLIENT", "SETNAME", name); got != "+OK\r\n" {
		t.Fatalf("CLIENT SETNAME: %q", got)
	}
	return tc
}

// serverClient returns the server's side of the connection named name.
func serverClient(t testing.TB, s *Server, name string) *Client {
	t.Helper()
	for _, c := range s.Clients() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no client named %s", name)
	return nil
}

// waitEvicted waits until the client named name is no longer listed, then
// checks INFO evicted_clients.
func waitEvicted(t *testing.T, ctl *testConn, name, evicted string) {
	t.Helper()
	testharness.WaitFor(t, 10*time.Second, "the eviction of "+name, func() bool {
		_, listed := clientField(t, ctl, name, "id")
		return !listed
	})
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != evicted {
		t.Fatalf("evicted_clients %s, want %s", got, evicted)
	}
}

// partialCommand writes a command whose first argument announces n bytes
// and sends have of them: the server holds them in its query buffer. A
// write error is not checked: the server may evict the client meanwhile.
func partialCommand(tc *testConn, n, have int) {
	_ = tc.c.SetWriteDeadline(time.Now().Add(testIOTimeout))
	_, _ = tc.c.Write([]byte("*2\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", have)))
}

// closedByServer reports whether the server closes tc's connection within
// a few seconds: reading (and dropping replies) ends with EOF or a reset,
// not a timeout.
func closedByServer(tc *testConn) bool {
	_ = tc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, tc.r)
	var ne interface{ Timeout() bool }
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

func TestClientEvictionLimit(t *testing.T) {
	for _, tc := range []struct{ clients, maxmemory, want int64 }{
		{0, 0, 0},
		{0, 1 << 30, 0},
		{-10, 0, 0}, // a percentage of no maxmemory is off
		{-10, 100 << 20, 10 << 20},
		{-7, 6 << 20, 6 << 20 * 7 / 100},
		{-1, 1 << 20, clientEvictionFloor},
		{1, 0, clientEvictionFloor},
		{3000000, 0, 3000000},
	} {
		if got := clientEvictionLimit(tc.clients, tc.maxmemory); got != tc.want {
			t.Errorf("clientEvictionLimit(%d, %d) = %d, want %d", tc.clients, tc.maxmemory, got, tc.want)
		}
	}
	for _, tc := range []struct {
		usage int64
		want  int32
	}{{0, 1}, {1 << 15, 2}, {1<<15 - 1, 1}, {3 << 20, 22 - 15 + 1}, {1 << 40, clientMemBuckets}} {
		if got := clientMemBucket(tc.usage); got != tc.want {
			t.Errorf("clientMemBucket(%d) = %d, want %d", tc.usage, got, tc.want)
		}
	}
}

// A client whose query buffer passes maxmemory-clients is evicted, counted
// and logged; a NO-EVICT client is not, though its memory counts.
func TestClientEvictionQueryBuffer(t *testing.T) {
	s := startTestServer(t, "--maxmemory-clients", "1mb")
	ctl := namedClient(t, s, "control")
	big := namedClient(t, s, "big")
	partialCommand(big, 3<<20, 2<<20)
	if !closedByServer(big) {
		t.Fatal("the client past maxmemory-clients was not disconnected")
	}
	waitEvicted(t, ctl, "big", "1")

	if got := ctl.do("CLIENT", "NO-EVICT", "on"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-EVICT on: %q", got)
	}
	safe := namedClient(t, s, "safe")
	if got := safe.do("CLIENT", "NO-EVICT", "on"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-EVICT on: %q", got)
	}
	partialCommand(safe, 3<<20, 2<<20)
	testharness.WaitFor(t, 10*time.Second, "the NO-EVICT client's query buffer", func() bool {
		return clientFieldInt(t, ctl, "safe", "qbuf") == 2<<20
	})
	if flags, _ := clientField(t, ctl, "safe", "flags"); flags != "e" {
		t.Fatalf("flags %q, want e", flags)
	}
	if mem := clientFieldInt(t, ctl, "safe", "tot-mem"); mem < 3<<20 {
		t.Fatalf("tot-mem %d, want at least the announced argument", mem)
	}
	// Its memory counts against the limit (as in Redis), but it is never
	// chosen. The control client, the only evictable one, was small and
	// NO-EVICT is set on it as well before the total went over.
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients %s, want still 1", got)
	}
	normal, _ := strconv.ParseInt(infoField(t, ctl, "memory", "mem_clients_normal"), 10, 64)
	if normal < 3<<20 {
		t.Fatalf("mem_clients_normal %d, want the NO-EVICT client's buffer counted", normal)
	}
	time.Sleep(300 * time.Millisecond) // a few cron ticks, each of which evicts if it can
	if _, listed := clientField(t, ctl, "safe", "qbuf"); !listed {
		t.Fatal("a NO-EVICT client was evicted")
	}
}

// tot-mem in CLIENT LIST is the figure eviction accounts.
func TestClientEvictionTotMemIsAccounted(t *testing.T) {
	s := startTestServer(t, "--maxmemory-clients", "64mb")
	ctl := namedClient(t, s, "control")
	other := namedClient(t, s, "other")
	partialCommand(other, 200_000, 100_000)
	testharness.WaitFor(t, 10*time.Second, "the partial command", func() bool {
		return clientFieldInt(t, ctl, "other", "qbuf") == 100_000
	})
	c := serverClient(t, s, "other")
	listed := clientFieldInt(t, ctl, "other", "tot-mem")
	if acc := c.mem.accounted.Load() >> 2; acc != listed {
		t.Fatalf("accounted %d, CLIENT LIST tot-mem %d", acc, listed)
	}
	if listed < 200_000 {
		t.Fatalf("tot-mem %d, want at least the announced argument", listed)
	}
	if argv := clientFieldInt(t, ctl, "other", "argv-mem"); argv != 0 {
		t.Fatalf("argv-mem %d, want 0 (no argument read whole yet)", argv)
	}
}

// Lowering maxmemory-clients evicts at once, largest clients first, only
// until the total is below the limit.
func TestClientEvictionOrderOnConfigSet(t *testing.T) {
	s := startTestServer(t)
	ctl := namedClient(t, s, "control")
	if got := ctl.do("CLIENT", "NO-EVICT", "on"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-EVICT on: %q", got)
	}
	sizes := map[string]int{"small": 100_000, "medium": 600_000, "large": 2_500_000}
	for name, n := range sizes {
		partialCommand(namedClient(t, s, name), n, 10)
	}
	mem := map[string]int64{}
	testharness.WaitFor(t, 10*time.Second, "the partial commands", func() bool {
		for name, n := range sizes {
			v := clientFieldInt(t, ctl, name, "tot-mem")
			if v < int64(n) {
				return false
			}
			mem[name] = v
		}
		return true
	})
	ctlMem := clientFieldInt(t, ctl, "control", "tot-mem")
	// Room for all but the largest.
	limit := mem["small"] + mem["medium"] + ctlMem + 10_000
	if got := ctl.do("CONFIG", "SET", "maxmemory-clients", strconv.FormatInt(limit, 10)); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	for name, want := range map[string]bool{"small": true, "medium": true, "large": false} {
		if _, listed := clientField(t, ctl, name, "qbuf"); listed != want {
			t.Fatalf("%s listed=%v, want %v", name, listed, want)
		}
	}
	// Room for the smallest only.
	limit = mem["small"] + ctlMem + 10_000
	_ = ctl.do("CONFIG", "SET", "maxmemory-clients", strconv.FormatInt(limit, 10))
	for name, want := range map[string]bool{"small": true, "medium": false} {
		if _, listed := clientField(t, ctl, name, "qbuf"); listed != want {
			t.Fatalf("%s listed=%v, want %v", name, listed, want)
		}
	}
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "2" {
		t.Fatalf("evicted_clients %s, want 2", got)
	}
}

// A reply the client does not read counts until it is written; the cron
// evicts a client whose blocked write holds more than the limit.
func TestClientEvictionOutputBuffer(t *testing.T) {
	s := startTestServer(t, "--maxmemory-clients", "4mb")
	ctl := namedClient(t, s, "control")
	if got := ctl.do("SETRANGE", "k", strconv.Itoa(32<<20), "v"); got != ":33554433\r\n" {
		t.Fatalf("SETRANGE: %q", got)
	}
	reader := namedClient(t, s, "reader")
	reader.send("GET", "k") // and never read
	waitEvicted(t, ctl, "reader", "1")
}

// Queued MULTI commands count (multi-mem); a transaction that queues past
// the limit is evicted.
func TestClientEvictionMultiQueue(t *testing.T) {
	s := startTestServer(t, "--maxmemory-clients", "1mb")
	ctl := namedClient(t, s, "control")
	tx := namedClient(t, s, "tx")
	if got := tx.do("MULTI"); got != "+OK\r\n" {
		t.Fatalf("MULTI: %q", got)
	}
	value := strings.Repeat("v", 300_000)
	if got := tx.do("SET", "k", value); got != "+QUEUED\r\n" {
		t.Fatalf("SET: %q", got)
	}
	if mm := clientFieldInt(t, ctl, "tx", "multi-mem"); mm < 300_000 || mm > 300_100 {
		t.Fatalf("multi-mem %d, want the queued arguments", mm)
	}
	var more []byte
	for i := 0; i < 4; i++ {
		more = append(more, encodeCommand("SET", "k", value)...)
	}
	// Not checked: the server may close the socket while this is sent.
	_ = tx.c.SetWriteDeadline(time.Now().Add(testIOTimeout))
	_, _ = tx.c.Write(more)
	if !closedByServer(tx) {
		// The replies of the queued commands come first; the socket must
		// close before all of them.
		t.Fatal("the transaction past maxmemory-clients was not disconnected")
	}
	waitEvicted(t, ctl, "tx", "1")
}

// DEBUG REPLYBUFFER RESIZING 0 keeps a reply buffer's size after a burst
// (Redis's tests use it so that tot-mem stays put); 1 drops it again.
func TestDebugReplyBufferResizing(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	ctl := namedClient(t, s, "control")
	if got := ctl.do("SET", "k", strings.Repeat("v", 30_000)); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	burst := namedClient(t, s, "burst")
	pipeline := func() {
		var req []byte
		for i := 0; i < 12; i++ { // 360 kB of replies in one batch
			req = append(req, encodeCommand("GET", "k")...)
		}
		burst.writeRaw(req)
		for i := 0; i < 12; i++ {
			burst.read()
		}
	}
	if got := ctl.do("DEBUG", "REPLYBUFFER", "RESIZING", "0"); got != "+OK\r\n" {
		t.Fatalf("DEBUG REPLYBUFFER RESIZING 0: %q", got)
	}
	pipeline()
	if mem := clientFieldInt(t, ctl, "burst", "tot-mem"); mem < 360_000 {
		t.Fatalf("tot-mem %d after the burst with resizing off, want the kept buffer", mem)
	}
	if got := ctl.do("DEBUG", "REPLYBUFFER", "RESIZING", "1"); got != "+OK\r\n" {
		t.Fatalf("DEBUG REPLYBUFFER RESIZING 1: %q", got)
	}
	pipeline()
	// The buffer is dropped once the write returns, just after the client
	// has read the last reply.
	testharness.WaitFor(t, 10*time.Second, "the burst's buffer dropped", func() bool {
		return clientFieldInt(t, ctl, "burst", "tot-mem") < 200_000
	})
	if got := ctl.do("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"); !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("PEAK-RESET-TIME: %q, want an error (not supported)", got)
	}
}

// A client listing itself sees its read in qbuf (Redis's query buffer
// holds it while its commands run) and its arguments in argv-mem.
func TestClientInfoSelfQueryBuffer(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	line := bulkBody(t, tc.do("CLIENT", "INFO"))
	for _, want := range []string{" qbuf=26 ", " argv-mem=10 ", " multi-mem=0 ", " omem=0 "} {
		if !strings.Contains(line, want) {
			t.Fatalf("CLIENT INFO %q lacks %q", line, want)
		}
	}
}

// BenchmarkClientMemoryHooks is the per-command cost of the accounting:
// the eviction check before a command, the owner's publication and the
// update after it (a steady client: nothing changes).
func BenchmarkClientMemoryHooks(b *testing.B) {
	s := startTestServer(b, "--maxmemory-clients", "64mb")
	tc := dialTest(b, s)
	if got := tc.do("CLIENT", "SETNAME", "bench"); got != "+OK\r\n" {
		b.Fatalf("CLIENT SETNAME: %q", got)
	}
	c := serverClient(b, s, "bench")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s.evictClients(c) {
			b.Fatal("evicted")
		}
		c.publishOwnedMemory()
		s.updateClientMemory(c)
	}
}

// CLIENT LIST flags come in Redis's order (checked against redis-server
// 7.0.15: a RESP3 subscriber in MULTI is Px, a transaction whose watched key
// was touched xd, a NO-EVICT client e).
func TestClientListFlagOrder(t *testing.T) {
	s := startTestServer(t)
	ctl := namedClient(t, s, "control")
	a := namedClient(t, s, "a")
	a.do("HELLO", "3")
	a.do("SUBSCRIBE", "ch")
	a.do("MULTI")
	b := namedClient(t, s, "b")
	b.do("WATCH", "k")
	ctl.do("SET", "k", "1")
	b.do("MULTI")
	for name, want := range map[string]string{"a": "Px", "b": "xd", "control": "N"} {
		if got, _ := clientField(t, ctl, name, "flags"); got != want {
			t.Fatalf("%s: flags=%s, want %s", name, got, want)
		}
	}
}

// A client evicted by another goroutine while it runs commands is closed
// after their replies are written (Redis evicts in beforeSleep, after the
// turn's replies): here it is evicted while DEBUG SLEEP runs, and still
// gets the +OK.
func TestClientEvictedWhileRunningGetsItsReplies(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	tc := namedClient(t, s, "busy")
	busy := serverClient(t, s, "busy")
	tc.send("DEBUG", "SLEEP", "0.5")
	// (DEBUG SLEEP stops the whole server: the client is watched directly.)
	testharness.WaitFor(t, 10*time.Second, "busy running DEBUG SLEEP", func() bool {
		spec := busy.lastCmd.Load()
		return spec != nil && spec.FullName() == "debug" && busy.executing.Load()
	})
	busy.evictLater()
	if busy.killed.Load() {
		t.Fatal("a running client was closed before its replies")
	}
	if got := tc.read(); got != "+OK\r\n" {
		t.Fatalf("the running client lost its reply: %q", got)
	}
	if !closedByServer(tc) {
		t.Fatal("the evicted client was not closed after its replies")
	}
}

// A client eviction finds running (evictLater only flags it) and whose
// reply then waits in a write it never reads is closed by the cron: its own
// goroutine, in the write, would never see the flag, and it is out of the
// eviction buckets (CI saw such a reader outlive its eviction by 30 s).
func TestClientEvictedWhileRunningClosedByCron(t *testing.T) {
	s := startTestServer(t)
	ctl := namedClient(t, s, "control")
	if got := ctl.do("SETRANGE", "k", strconv.Itoa(32<<20), "v"); got != ":33554433\r\n" {
		t.Fatalf("SETRANGE: %q", got)
	}
	reader := namedClient(t, s, "reader")
	reader.send("GET", "k") // and never read
	rc := serverClient(t, s, "reader")
	testharness.WaitFor(t, 10*time.Second, "the reply waiting in a write", func() bool {
		return !rc.executing.Load() && rc.obuf.held.Load() > 0
	})
	rc.evictAfterReplies.Store(true) // as evictLater leaves a client it found running
	// Not read from reader: reading would let the write end.
	testharness.WaitFor(t, 5*time.Second, "the cron closing the evicted reader", func() bool {
		_, listed := clientField(t, ctl, "reader", "id")
		return !listed
	})
}
