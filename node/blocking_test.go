package node

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// waitBlockedClients waits (bounded) until n clients are blocked on keys.
func waitBlockedClients(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.blockedClients() != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients: %d, want %d", s.blockedClients(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// readWithin reads one reply, failing if none comes within d.
func (tc *testConn) readWithin(d time.Duration) string {
	tc.t.Helper()
	_ = tc.c.SetReadDeadline(time.Now().Add(d))
	var out bytes.Buffer
	if err := testharness.ReadRaw(tc.r, &out); err != nil {
		tc.t.Fatalf("no reply within %v (so far %q): %v", d, out.String(), err)
	}
	return out.String()
}

// expectNoReply checks that nothing arrives within d.
func (tc *testConn) expectNoReply(d time.Duration) {
	tc.t.Helper()
	_ = tc.c.SetReadDeadline(time.Now().Add(d))
	if b, err := tc.r.Peek(1); err == nil {
		tc.t.Fatalf("unexpected reply starting with %q", b)
	}
	// The deadline error is sticky on the bufio.Reader only until the next
	// read with a fresh deadline, which read() sets.
}

func TestBlockingFIFOAndServedBeforeWriterReply(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	var waiters []*testConn
	for i := range 3 {
		c := dialTest(t, s)
		c.send("BLPOP", "q", "0")
		waitBlockedClients(t, s, i+1)
		waiters = append(waiters, c)
	}
	require.Equal(t, ":2\r\n", w.do("RPUSH", "q", "a", "b"))
	// Served before RPUSH's reply: nothing left, one client still waits.
	require.Equal(t, ":0\r\n", w.do("LLEN", "q"))
	require.Equal(t, 1, s.blockedClients())
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\na\r\n", waiters[0].read())
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nb\r\n", waiters[1].read())
	require.Equal(t, ":1\r\n", w.do("LPUSH", "q", "c"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nc\r\n", waiters[2].read())
	require.Equal(t, 0, s.blockedClients())
	require.Equal(t, ":0\r\n", w.do("EXISTS", "q"))
}

func TestBlockingMultipleKeysAndRightPop(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	c := dialTest(t, s)
	c.send("BRPOP", "k1", "k2", "k1", "0") // a key given twice counts once
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":3\r\n", w.do("RPUSH", "k2", "x", "y", "z"))
	require.Equal(t, "*2\r\n$2\r\nk2\r\n$1\r\nz\r\n", c.read())
	// No longer waiting on k1 either.
	require.Equal(t, ":1\r\n", w.do("RPUSH", "k1", "v"))
	require.Equal(t, ":1\r\n", w.do("LLEN", "k1"))
	// The client works normally afterwards.
	require.Equal(t, "+PONG\r\n", c.do("PING"))
}

func TestBlockingTimeouts(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	for _, tcase := range []struct {
		args []string
		want string
	}{
		{[]string{"BLPOP", "none", "0.1"}, "*-1\r\n"},
		{[]string{"BRPOP", "none", "none2", "0.1"}, "*-1\r\n"},
		{[]string{"BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.1"}, "*-1\r\n"},
		{[]string{"BRPOPLPUSH", "none", "dst", "0.1"}, "*-1\r\n"},
		{[]string{"BLMPOP", "0.1", "2", "none", "none2", "LEFT", "COUNT", "2"}, "*-1\r\n"},
	} {
		start := time.Now()
		require.Equal(t, tcase.want, c.do(tcase.args...), "%q", tcase.args)
		el := time.Since(start)
		require.GreaterOrEqual(t, el, 100*time.Millisecond, "%q", tcase.args)
		require.Less(t, el, 3*time.Second, "%q", tcase.args)
	}
	require.Equal(t, 0, s.blockedClients())
	c.do("HELLO", "3")
	require.Equal(t, "_\r\n", c.do("BLPOP", "none", "0.01"))
	require.Equal(t, "_\r\n", c.do("BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.01"))
	require.Equal(t, ":0\r\n", c.do("EXISTS", "dst"))
}

func TestBlockingDisconnectWhileBlocked(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	gone := dialTest(t, s)
	gone.send("BLPOP", "q", "0")
	waitBlockedClients(t, s, 1)
	stays := dialTest(t, s)
	stays.send("BLPOP", "q", "0")
	waitBlockedClients(t, s, 2)
	_ = gone.c.Close()
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("RPUSH", "q", "v"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n", stays.read())
	// With nobody left, the next element stays.
	require.Equal(t, ":1\r\n", w.do("RPUSH", "q", "w"))
	require.Equal(t, ":1\r\n", w.do("LLEN", "q"))
	// CLIENT KILL of a blocked client also removes it.
	victim := dialTest(t, s)
	id := strings.TrimSpace(strings.TrimPrefix(victim.do("CLIENT", "ID"), ":"))
	victim.send("BLPOP", "other", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("CLIENT", "KILL", "ID", id))
	waitBlockedClients(t, s, 0)
}

func TestBlockingMoveAcrossSlots(t *testing.T) {
	s := startTestServer(t)
	require.NotEqual(t, slots.KeySlot([]byte("src")), slots.KeySlot([]byte("dst")))
	w := dialTest(t, s)
	mover := dialTest(t, s)
	popper := dialTest(t, s)
	// mover waits on src and pushes to dst; popper waits on dst: one push
	// to src serves both, in one round, before the writer's reply.
	mover.send("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
	waitBlockedClients(t, s, 1)
	popper.send("BLPOP", "dst", "0")
	waitBlockedClients(t, s, 2)
	require.Equal(t, ":1\r\n", w.do("RPUSH", "src", "v"))
	require.Equal(t, 0, s.blockedClients())
	require.Equal(t, "$1\r\nv\r\n", mover.read())
	require.Equal(t, "*2\r\n$3\r\ndst\r\n$1\r\nv\r\n", popper.read())
	require.Equal(t, ":0\r\n", w.do("EXISTS", "src"))
	require.Equal(t, ":0\r\n", w.do("EXISTS", "dst"))

	// BRPOPLPUSH into a destination of another type: the waiter gets
	// WRONGTYPE and the element stays.
	require.Equal(t, "+OK\r\n", w.do("SET", "dst", "string"))
	mover.send("BRPOPLPUSH", "src", "dst", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("LPUSH", "src", "x"))
	require.Equal(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", mover.read())
	require.Equal(t, ":1\r\n", w.do("LLEN", "src"))

	// BLMOVE onto its own key rotates.
	require.Equal(t, ":1\r\n", w.do("DEL", "src"))
	mover.send("BLMOVE", "src", "src", "LEFT", "RIGHT", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("RPUSH", "src", "only"))
	require.Equal(t, "$4\r\nonly\r\n", mover.read())
	require.Equal(t, "*1\r\n$4\r\nonly\r\n", w.do("LRANGE", "src", "0", "-1"))
}

func TestBlockingLMPopServedWithCount(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	c := dialTest(t, s)
	c.send("BLMPOP", "0", "2", "a{x}", "b{x}", "RIGHT", "COUNT", "3")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":5\r\n", w.do("RPUSH", "b{x}", "1", "2", "3", "4", "5"))
	require.Equal(t, "*2\r\n$4\r\nb{x}\r\n*3\r\n$1\r\n5\r\n$1\r\n4\r\n$1\r\n3\r\n", c.read())
	require.Equal(t, ":2\r\n", w.do("LLEN", "b{x}"))
}

func TestClientUnblock(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	c := dialTest(t, s)
	id := strings.TrimSpace(strings.TrimPrefix(c.do("CLIENT", "ID"), ":"))
	require.Equal(t, ":0\r\n", w.do("CLIENT", "UNBLOCK", id))
	c.send("BLPOP", "q", "0")
	waitBlockedClients(t, s, 1)
	require.Contains(t, w.do("CLIENT", "LIST", "ID", id), " flags=b ")
	require.Contains(t, w.do("INFO", "clients"), "blocked_clients:1\r\n")
	require.Equal(t, ":1\r\n", w.do("CLIENT", "UNBLOCK", id))
	require.Equal(t, "*-1\r\n", c.read())
	require.Contains(t, w.do("INFO", "clients"), "blocked_clients:0\r\n")

	c.send("BLMOVE", "q", "d", "LEFT", "LEFT", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("CLIENT", "UNBLOCK", id, "TIMEOUT"))
	require.Equal(t, "*-1\r\n", c.read())

	c.send("BLPOP", "q", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("CLIENT", "UNBLOCK", id, "ERROR"))
	require.Equal(t, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n", c.read())
	require.Equal(t, ":0\r\n", w.do("CLIENT", "UNBLOCK", id, "ERROR"))
	require.Contains(t, w.do("INFO", "errorstats"), "errorstat_UNBLOCKED:count=1")
	require.Contains(t, w.do("INFO", "commandstats"), "cmdstat_blpop:calls=2,")
	require.Equal(t, "+PONG\r\n", c.do("PING"))
}

func TestBlockingPipelines(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	c := dialTest(t, s)
	// Replies to commands before the blocking one go out at once.
	c.writeRaw(append(encodeCommand("PING"), encodeCommand("BLPOP", "q", "0")...))
	require.Equal(t, "+PONG\r\n", c.readWithin(2*time.Second))
	waitBlockedClients(t, s, 1)
	// What the client sends while blocked runs after the blocked command.
	c.send("ECHO", "after")
	c.expectNoReply(100 * time.Millisecond)
	require.Equal(t, ":1\r\n", w.do("RPUSH", "q", "v"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n", c.read())
	require.Equal(t, "$5\r\nafter\r\n", c.read())
	// A blocking command followed by more commands in one write.
	c.writeRaw(append(encodeCommand("BLPOP", "q", "0"), encodeCommand("ECHO", "x")...))
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("LPUSH", "q", "v2"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$2\r\nv2\r\n", c.read())
	require.Equal(t, "$1\r\nx\r\n", c.read())
}

// TestBlockingConcurrentProducersConsumers checks that every pushed element
// is delivered exactly once under concurrency.
func TestBlockingConcurrentProducersConsumers(t *testing.T) {
	s := startTestServer(t)
	const consumers, producers, perProducer = 8, 4, 200
	keys := []string{"c1", "c2", "c3"}
	total := producers * perProducer
	results := make(chan string, total)
	var wg sync.WaitGroup
	for range consumers {
		c := dialTest(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				raw := c.do("BLPOP", keys[0], keys[1], keys[2], "0.5")
				if raw == "*-1\r\n" {
					return
				}
				results <- raw
			}
		}()
	}
	for p := range producers {
		c := dialTest(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				c.do("RPUSH", keys[(p+i)%len(keys)], fmt.Sprintf("%d-%d", p, i))
			}
		}()
	}
	wg.Wait()
	close(results)
	seen := map[string]bool{}
	for raw := range results {
		require.False(t, seen[raw], "delivered twice: %q", raw)
		seen[raw] = true
	}
	w := dialTest(t, s)
	left := 0
	for _, k := range keys {
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(w.do("LLEN", k), ":")))
		left += n
	}
	require.Equal(t, total, len(seen)+left)
	require.Equal(t, 0, s.blockedClients())
}

func TestBlockingDeniedReplies(t *testing.T) {
	s := startTestServer(t)
	c := s.bindClient(&Client{srv: s})
	c.Proto = 2
	c.multiLen.Store(0) // as inside MULTI: blocking variants answer at once
	run := func(args ...string) string {
		bargs := make([][]byte, len(args))
		for i, a := range args {
			bargs[i] = []byte(a)
		}
		c.Out = c.Out[:0]
		db := s.ks.DB(0)
		var sl []uint16
		for _, a := range args[1:] {
			sl = append(sl, slots.KeySlot([]byte(a)))
		}
		sortUnique(&sl)
		db.LockSlots(sl)
		c.SetDB(db)
		s.table.byName[strings.ToLower(args[0])].Handler(&c.Ctx, bargs)
		c.SetDB(nil)
		db.UnlockSlots(sl)
		require.Nil(t, c.bs.pending)
		return string(c.Out)
	}
	require.Equal(t, "*-1\r\n", run("BLPOP", "k{d}", "0"))
	require.Equal(t, "*-1\r\n", run("BLMPOP", "0", "1", "k{d}", "LEFT"))
	require.Equal(t, "$-1\r\n", run("BLMOVE", "k{d}", "d{d}", "LEFT", "LEFT", "0"))
	require.Equal(t, "$-1\r\n", run("BRPOPLPUSH", "k{d}", "d{d}", "0"))
	require.Equal(t, 0, s.blockedClients())
}

func sortUnique(s *[]uint16) {
	x := *s
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
	out := x[:0]
	for i, v := range x {
		if i == 0 || v != x[i-1] {
			out = append(out, v)
		}
	}
	*s = out
}

// TestBlockingNoGoroutineLeak blocks, times out, unblocks and disconnects
// clients, stops the server and checks that the goroutine count returns
// to where it was.
func TestBlockingNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		s := startTestServer(t)
		defer s.Shutdown() // before the goroutines are counted (Shutdown is idempotent)
		w := dialTest(t, s)
		for i := range 20 {
			c := dialTest(t, s)
			switch i % 4 {
			case 0:
				require.Equal(t, "*-1\r\n", c.do("BLPOP", "q", "0.01"))
			case 1:
				c.send("BLPOP", "q", "0")
				waitBlockedClients(t, s, 1)
				w.do("RPUSH", "q", "v")
				c.read()
			case 2:
				c.send("BLMOVE", "q", "d", "LEFT", "LEFT", "0")
				waitBlockedClients(t, s, 1)
				_ = c.c.Close()
				waitBlockedClients(t, s, 0)
			default:
				c.send("BLPOP", "q", "0")
				waitBlockedClients(t, s, 1)
			}
			if i%4 == 3 {
				_ = c.c.Close()
				waitBlockedClients(t, s, 0)
			}
		}
		_ = w.c.Close()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBlockingSignalsForOtherDatabases drives the hooks SWAPDB and MOVE /
// COPY ... DB use: keys in another database, and every waited key of two
// swapped databases.
func TestBlockingSignalsForOtherDatabases(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	c := dialTest(t, s)
	require.Equal(t, "+OK\r\n", c.do("SELECT", "9"))
	c.send("BRPOP", "k", "5")
	waitBlockedClients(t, s, 1)
	require.Equal(t, "+OK\r\n", w.do("SELECT", "1"))
	require.Equal(t, ":1\r\n", w.do("RPUSH", "k", "hello"))
	s.ks.SwapDB(1, 9)
	writer := s.bindClient(&Client{srv: s})
	writer.signalDBsSwapped(1, 9)
	writer.serveReadyKeys()
	require.Equal(t, "*2\r\n$1\r\nk\r\n$5\r\nhello\r\n", c.read())

	require.Equal(t, "+OK\r\n", c.do("SELECT", "2"))
	c.send("BLPOP", "m", "0")
	waitBlockedClients(t, s, 1)
	require.Equal(t, ":1\r\n", w.do("RPUSH", "m", "v"))
	require.Equal(t, ":1\r\n", w.do("MOVE", "m", "2"))
	writer.signalKeyReadyIn(s.ks.DB(2), []byte("m"))
	writer.serveReadyKeys()
	require.Equal(t, "*2\r\n$1\r\nm\r\n$1\r\nv\r\n", c.read())
	require.Equal(t, 0, s.blockedClients())
}

// TestBlockingKeyReadyAgainInSameRound: a BLMOVE served late in a round
// pushes into a key served earlier in the same round; that key's remaining
// waiters must be served too.
func TestBlockingKeyReadyAgainInSameRound(t *testing.T) {
	s := startTestServer(t)
	if !srvImplemented(s, "multi", "exec") {
		t.Skip("needs MULTI/EXEC")
	}
	w := dialTest(t, s)
	first, mover, second := dialTest(t, s), dialTest(t, s), dialTest(t, s)
	first.send("BLPOP", "b{r}", "0")
	waitBlockedClients(t, s, 1)
	mover.send("BLMOVE", "a{r}", "b{r}", "LEFT", "RIGHT", "0")
	waitBlockedClients(t, s, 2)
	second.send("BLPOP", "b{r}", "0")
	waitBlockedClients(t, s, 3)
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("RPUSH", "b{r}", "x"))
	require.Equal(t, "+QUEUED\r\n", w.do("RPUSH", "a{r}", "y"))
	require.Equal(t, "*2\r\n:1\r\n:1\r\n", w.do("EXEC"))
	require.Equal(t, 0, s.blockedClients())
	require.Equal(t, "*2\r\n$4\r\nb{r}\r\n$1\r\nx\r\n", first.read())
	require.Equal(t, "$1\r\ny\r\n", mover.read())
	require.Equal(t, "*2\r\n$4\r\nb{r}\r\n$1\r\ny\r\n", second.read())
}
