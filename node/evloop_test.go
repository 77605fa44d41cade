package node

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// loopServed reports whether client id is served by an event loop now.
func loopServed(s *Server, id int64) bool {
	for _, l := range s.loops {
		l.mu.Lock()
		_, ok := l.clients[uint64(id)]
		l.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// adopted returns the loop's connections.
func (l *eventLoop) adopted() []*Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Client, 0, len(l.clients))
	for _, c := range l.clients {
		out = append(out, c)
	}
	return out
}

// clientID returns the connection's CLIENT ID.
func (tc *testConn) clientID() int64 {
	tc.t.Helper()
	raw := tc.do("CLIENT", "ID")
	var id int64
	for _, ch := range strings.TrimSuffix(strings.TrimPrefix(raw, ":"), "\r\n") {
		id = id*10 + int64(ch-'0')
	}
	return id
}

func TestEventLoopServesPlainClients(t *testing.T) {
	s := startTestServer(t)
	if len(s.loops) == 0 {
		t.Skip("no event loop on this system")
	}
	c := dialTest(t, s)
	// What clients send first (go-redis: HELLO, CLIENT SETNAME, CLIENT
	// SETINFO, unknown to 7.0) keeps them on the loop too.
	require.Equal(t, "+OK\r\n", c.do("CLIENT", "SETNAME", "loop"))
	require.Contains(t, c.do("CLIENT", "SETINFO", "lib-name", "x"), "-ERR unknown subcommand")
	require.True(t, strings.HasPrefix(c.do("HELLO", "2"), "*"))
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v"))
	id := c.clientID()
	require.True(t, loopServed(s, id), "a plain client is not on the event loop")
	// A pipeline in one write: every reply, in order.
	var req []byte
	for range 100 {
		req = append(req, encodeCommand("INCR", "n")...)
	}
	c.writeRaw(req)
	for i := range 100 {
		require.Equal(t, ":"+strconv.Itoa(i+1)+"\r\n", c.read())
	}
	require.True(t, loopServed(s, id))
	require.True(t, strings.HasPrefix(c.do("CONFIG", "GET", "maxmemory"), "*2")) // admin: not on the loop
	require.False(t, loopServed(s, id), "the connection stayed on the loop after a command it does not run")
	require.Equal(t, "$1\r\nv\r\n", c.do("GET", "k"))
}

// A blocking command in the middle of a pipelined batch: the commands
// before it run on the loop, the rest on the connection's goroutine after
// it is served, in order.
func TestEventLoopHandsOverABlockingCommandMidBatch(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	var req []byte
	req = append(req, encodeCommand("SET", "a", "1")...)
	req = append(req, encodeCommand("BLPOP", "q", "0")...)
	req = append(req, encodeCommand("GET", "a")...)
	c.writeRaw(req)
	require.Equal(t, "+OK\r\n", c.read())
	other := dialTest(t, s)
	testharness.WaitFor(t, 10*time.Second, "the BLPOP blocks", func() bool {
		return strings.Contains(other.do("INFO", "clients"), "blocked_clients:1")
	})
	require.Equal(t, ":1\r\n", other.do("RPUSH", "q", "x"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nx\r\n", c.read())
	require.Equal(t, "$1\r\n1\r\n", c.read())
}

// Replies that do not fit the socket go out from the connection's own
// goroutine: the loop goes on serving others meanwhile.
func TestEventLoopDoesNotWaitForAClientThatDoesNotRead(t *testing.T) {
	s := startTestServer(t)
	slow := dialTest(t, s)
	big := strings.Repeat("x", 8000) // under the loop's write chunk: written by the loop
	require.Equal(t, "+OK\r\n", slow.do("SET", "big", big))
	var req []byte
	for range 2000 { // ~16 MB of replies that slow does not read yet
		req = append(req, encodeCommand("GET", "big")...)
	}
	go func() { _, _ = slow.c.Write(req) }()
	fast := dialTest(t, s)
	for range 20 {
		require.Equal(t, "+PONG\r\n", fast.do("PING"))
	}
	// slow gets every reply once it reads.
	want := []byte("$8000\r\n" + big + "\r\n")
	_ = slow.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	got := make([]byte, len(want))
	for i := range 2000 {
		_, err := io.ReadFull(slow.r, got)
		require.NoError(t, err, "reply %d", i)
		require.True(t, bytes.Equal(want, got), "reply %d differs", i)
	}
}

// CLIENT KILL from another client closes a connection the loop serves, and
// the loop unregisters it.
func TestEventLoopClientKilled(t *testing.T) {
	s := startTestServer(t)
	victim := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", victim.do("PING"))
	id := s.nextClientID.Load()
	require.True(t, loopServed(s, id))
	killer := dialTest(t, s)
	require.Equal(t, ":1\r\n", killer.do("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)))
	_ = victim.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	_, err := victim.r.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	// The loop unregisters the connection on its next turn, which may come
	// after CLIENT LIST stops showing it (3 runs in 15 under a CPU hog,
	// run beside the output-buffer eviction test).
	testharness.WaitFor(t, 10*time.Second, "the killed client is gone from the list and the loop", func() bool {
		return !strings.Contains(killer.do("CLIENT", "LIST"), "id="+strconv.FormatInt(id, 10)+" ") && !loopServed(s, id)
	})
}

// An idle timeout set while clients sit idle on the loop still closes them
// (their goroutines' read deadlines enforce it).
func TestEventLoopIdleTimeoutSetLater(t *testing.T) {
	s := startTestServer(t)
	idle := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", idle.do("PING"))
	admin := dialTest(t, s)
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "timeout", "1"))
	_ = idle.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	_, err := idle.r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle client was not closed")
}

// A script holding its key's slot keeps the loop from waiting for that
// slot: a loop client's command on it goes to the client's goroutine, and
// the loop answers the others meanwhile (SCRIPT KILL from one of them
// would get through).
func TestEventLoopDoesNotWaitForAScriptsSlots(t *testing.T) {
	s := startTestServer(t)
	waiter := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", waiter.do("PING"))
	waiterID := s.nextClientID.Load()
	other := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", other.do("PING"))
	script := dialTest(t, s)
	require.True(t, strings.HasPrefix(script.do("CONFIG", "GET", "maxmemory"), "*2")) // off the loop
	// EVAL runs on its client's goroutine, under k's slot lock, for many
	// rounds of EXISTS.
	script.send("EVAL", "for i = 1, 200000 do if redis.call('EXISTS', KEYS[1]) == 2 then break end end return 1", "1", "k")
	testharness.WaitFor(t, 10*time.Second, "the script holds its slot", func() bool { return s.scriptSlotHolds.Load() > 0 })
	waiter.send("GET", "k") // waits for the script, off the loop
	require.Equal(t, "+PONG\r\n", other.do("PING"))
	require.Equal(t, ":1\r\n", script.read())
	require.Equal(t, "$-1\r\n", waiter.read())
	require.False(t, loopServed(s, waiterID))
}

// A script the loop runs past busy-reply-threshold moves the loop's other
// clients to goroutines of their own: SCRIPT KILL gets through.
func TestEventLoopBusyScriptCanBeKilled(t *testing.T) {
	s := startTestServer(t, "--busy-reply-threshold", "100")
	killer := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", killer.do("PING"))
	runner := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", runner.do("PING"))
	runnerID := s.nextClientID.Load()
	runner.send("EVAL", "while true do end", "0")
	testharness.WaitFor(t, 10*time.Second, "the script runs on the loop", func() bool {
		for _, l := range s.loops {
			l.mu.Lock()
			cur := l.current
			l.mu.Unlock()
			if cur != nil && cur.id == runnerID {
				return true
			}
		}
		return false
	})
	var reply string
	testharness.WaitFor(t, 10*time.Second, "SCRIPT KILL is accepted", func() bool {
		reply = killer.do("SCRIPT", "KILL")
		return reply == "+OK\r\n"
	})
	require.Contains(t, runner.read(), "Script killed by user with SCRIPT KILL")
	require.Equal(t, "+PONG\r\n", runner.do("PING"))
}

// The cron moves a loop's other clients off a serve that does not end.
func TestEventLoopStuckServeIsEvacuated(t *testing.T) {
	s := startTestServer(t)
	if len(s.loops) == 0 {
		t.Skip("no event loop")
	}
	a := dialTest(t, s)
	require.Equal(t, "+PONG\r\n", a.do("PING"))
	l := s.loops[0]
	// The reply is out before the loop ends a's serve: wait for the end,
	// then mark a serve under way as the loop would.
	testharness.WaitFor(t, 10*time.Second, "the loop is between serves", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.current != nil {
			return false
		}
		l.current = &Client{}
		l.served++
		return true
	})
	now := time.Now()
	l.checkStuck(now)
	require.Len(t, l.adopted(), 1, "evacuated at the first look")
	l.checkStuck(now.Add(loopStuckAfter))
	require.Empty(t, l.adopted(), "a serve that lasted loopStuckAfter left clients on the loop")
	l.mu.Lock()
	l.current = nil
	l.mu.Unlock()
	require.Equal(t, "+PONG\r\n", a.do("PING")) // served by its own goroutine
}

// A batch that ran waits for the turn's write phase; evacuated before it
// (here by a busy script served after it in the same turn), its replies go
// out from its goroutine instead of being lost.
func TestEventLoopRepliesAwaitingTheWritePhaseSurviveEvacuation(t *testing.T) {
	s := startTestServer(t, "--busy-reply-threshold", "100")
	if len(s.loops) != 1 {
		t.Skip("one event loop needed")
	}
	holder, answered, runner, killer := dialTest(t, s), dialTest(t, s), dialTest(t, s), dialTest(t, s)
	for _, c := range []*testConn{holder, answered, runner, killer} {
		require.Equal(t, "+PONG\r\n", c.do("PING"))
	}
	holderID := holder.clientID()
	t.Cleanup(func() { // the script must not outlive a failure: the server's stop waits for it
		killer.send("SCRIPT", "KILL")
		_ = killer.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	})
	// Hold the loop in holder's GET (its slot locked here), so that the
	// next two requests arrive together and are served in one turn.
	db := s.ks.DB(0)
	held := []uint16{slots.KeySlot([]byte("held"))}
	db.LockSlots(held)
	holder.send("GET", "held")
	l := s.loops[0]
	testharness.WaitFor(t, 10*time.Second, "the loop waits in holder's GET", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.current != nil && int64(l.current.id) == holderID
	})
	answered.send("SET", "other", "v")
	time.Sleep(20 * time.Millisecond) // answered first in the poller's ready list
	runner.send("EVAL", "while true do end", "0")
	time.Sleep(20 * time.Millisecond)
	db.UnlockSlots(held)
	require.Equal(t, "$-1\r\n", holder.readWithin(5*time.Second))
	testharness.WaitFor(t, 10*time.Second, "the script runs", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.current != nil && int64(l.current.id) != holderID
	})
	// The SET ran before the script, in its turn: its reply comes while the
	// script still runs.
	require.Equal(t, "+OK\r\n", answered.readWithin(5*time.Second))
	testharness.WaitFor(t, 10*time.Second, "SCRIPT KILL is accepted", func() bool {
		return killer.readWithinDo(5*time.Second, "SCRIPT", "KILL") == "+OK\r\n"
	})
	require.Contains(t, runner.readWithin(5*time.Second), "Script killed by user with SCRIPT KILL")
	require.Equal(t, "$1\r\nv\r\n", answered.do("GET", "other"))
}

// A connection handed to its goroutine goes back to the loop after
// loopReturnAfter batches the loop would have run, not before.
func TestEventLoopTakesBackAConnectionItHandedOff(t *testing.T) {
	s := startTestServer(t)
	if len(s.loops) == 0 {
		t.Skip("no event loop")
	}
	c := dialTest(t, s)
	id := c.clientID()
	require.True(t, loopServed(s, id))
	require.True(t, strings.HasPrefix(c.do("CONFIG", "GET", "maxmemory"), "*2")) // admin: handed off
	require.False(t, loopServed(s, id))
	// A client that keeps sending what the loop does not run stays off it.
	for range 3 {
		for range loopReturnAfter - 1 {
			require.Equal(t, "+PONG\r\n", c.do("PING"))
		}
		require.True(t, strings.HasPrefix(c.do("CONFIG", "GET", "maxmemory"), "*2"))
		require.False(t, loopServed(s, id))
	}
	for i := range loopReturnAfter {
		require.Equal(t, ":"+strconv.Itoa(i+1)+"\r\n", c.do("INCR", "n"))
	}
	testharness.WaitFor(t, 10*time.Second, "the loop serves the connection again", func() bool { return loopServed(s, id) })
	// Served by the loop: pipelines in order, and a second hand-off works.
	c.send("INCR", "n")
	c.send("GET", "n")
	require.Equal(t, ":9\r\n", c.read())
	require.Equal(t, "$1\r\n9\r\n", c.read())
	c.send("BLPOP", "list", "0")
	testharness.WaitFor(t, 10*time.Second, "BLPOP blocks off the loop", func() bool { return !loopServed(s, id) })
	other := dialTest(t, s)
	require.Equal(t, ":1\r\n", other.do("RPUSH", "list", "x"))
	require.Equal(t, "*2\r\n$4\r\nlist\r\n$1\r\nx\r\n", c.read())
}
