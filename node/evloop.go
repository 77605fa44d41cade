package node

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/internal/rawsock"
	"go.uber.org/zap"
)

// The event loop.
//
// A plain TCP connection (not TLS, not the unix socket) is served by one of
// the server's event loops from its first request: one goroutine that waits
// on an epoll set of its connections (rawsock.Poller) and, for each one with
// input, reads one batch, runs it and writes its replies without waiting,
// as redis-server's event loop does. A goroutine per connection is woken,
// scheduled and parked for every request of a client that waits for each
// reply: on a 3+3 cluster that scheduling made shoal's CPU per request
// 1.2-1.4× Redis's, where the same program with an event loop matched it.
//
// The loop runs only what cannot wait: commands flagged fast, write or
// readonly (and EXEC, DISCARD) that are not blocking, pub/sub or admin
// commands, from clients
// that are not subscribers, tracking, replicas or blocked, while no CLIENT
// PAUSE and no idle timeout is in force (scripts run on it too). Before
// anything else (a BLPOP, a SUBSCRIBE, CONFIG, CLIENT PAUSE in force,
// replies that do not fit the socket, a large reply) the loop hands the
// connection to a goroutine of its own, at the point it reached
// (resumePoint); that goroutine gives it back after loopReturnAfter
// batches in a row the loop would have run (loopReturn).
// Anything the loop runs may still wait on a lock (a slot lock, the
// execution gate, an AOF fsync), as redis-server's thread would.
//
// Concurrency: a connection belongs to its loop's goroutine from loopAdopt
// until detach (c.loopConn set, the socket's read side held by the loop),
// then to the goroutine serveClient runs, until loopReturn adopts it
// again. Other goroutines close a loop's connection as any other
// (Conn.Close shuts the socket down; the loop then reads the end of the
// stream and ends the client).
type eventLoop struct {
	srv    *Server
	poller *rawsock.Poller

	mu      sync.Mutex
	clients map[uint64]*Client // the connections the loop serves, by client ID (their poller token)
	current *Client            // the connection being served (not evacuated)
	served  uint64             // serves begun
	// The cron's view of a serve that does not end (checkStuck).
	seenServed uint64
	seenAt     time.Time

	stopped       bool      // the loop has ended: it adopts no connection (l.mu)
	queued, ready []*Client // connections with input left over for the next turn, this turn's
	answering     []*Client // connections whose replies this turn's write phase writes
}

// startEventLoops starts the server's event loops, one per io-threads core,
// unless SHOAL_EVENT_LOOP=off (every connection on its own goroutine, for
// comparison) or the system has none.
func (s *Server) startEventLoops() {
	if os.Getenv("SHOAL_EVENT_LOOP") == "off" || len(s.loops) > 0 {
		return
	}
	n := max(1, int(s.cfg.Int("io-threads")))
	for range n {
		p, err := rawsock.NewPoller()
		if err != nil {
			s.log.Warn("no event loop: every connection is served by its own goroutine", zap.Error(err))
			return
		}
		l := &eventLoop{srv: s, poller: p, clients: make(map[uint64]*Client)}
		s.loops = append(s.loops, l)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			l.run()
		}()
	}
	go func() {
		<-s.stopCron
		for _, l := range s.loops {
			l.poller.Stop()
		}
	}()
}

// loopAdopt hands a connection to an event loop: a new one, or one its
// goroutine served until now (loopReturn). False leaves it to the caller
// (no loop, not a plain TCP socket, an idle timeout in force, the loops
// stopped).
func (s *Server) loopAdopt(c *Client) bool {
	if len(s.loops) == 0 || s.limits.IdleTimeout.Load() > 0 {
		return false
	}
	conn, ok := c.guard.Conn.(*rawsock.Conn)
	if !ok || !conn.EnterLoop() {
		return false
	}
	l := s.loops[int(s.nextLoop.Add(1))%len(s.loops)]
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		conn.ExitLoop()
		return false
	}
	c.loopConn = conn
	// A connection coming back may have left a stale entry in the loop's
	// queue (evacuated while queued): the flags start afresh, and begin
	// skips what would serve it twice in a turn.
	c.loopQueued, c.loopAnswering = false, false
	l.clients[uint64(c.id)] = c
	l.mu.Unlock()
	if err := l.poller.Add(conn, uint64(c.id)); err != nil {
		l.detach(c)
		return false
	}
	return true
}

// loopReturnAfter is how many batches in a row a connection's goroutine
// serves, with nothing the event loop would not run, before it gives the
// connection back to a loop: a client that sent one SCRIPT LOAD, CONFIG GET
// or BLPOP goes back to being served as cheaply as the others, and one
// that keeps sending such commands does not move back and forth.
const loopReturnAfter = 8

// loopReturn gives c, which its goroutine serves, back to an event loop
// after loopReturnAfter batches the loop could have run, if the loop may
// serve it and no input it sent is read and waiting (the poller reports
// only what arrives from now on). The goroutine must leave c alone once it
// returns true.
func (s *Server) loopReturn(c *Client) bool {
	if len(s.loops) == 0 {
		return false
	}
	if c.offLoopBatches++; c.offLoopBatches < loopReturnAfter {
		return false
	}
	c.offLoopBatches = 0
	return s.loopServes(c) && !c.guard.Ready() && c.wblockBytes+len(c.wbuf) == 0 && s.loopAdopt(c)
}

// offLoopCommand is dispatch's look at a command about to run on c's own
// goroutine while event loops exist. One the loop would not run restarts
// the count of batches before c goes back to the loop (loopReturn). One
// that may look at other clients (CLIENT LIST, INFO, CONFIG, DEBUG...)
// lets an event loop readied with it go first: what the loop's clients
// sent before it is then read and run before it, as redis-server's one
// event loop would have (the runtime readies goroutines woken together in
// reverse order).
func (c *Client) offLoopCommand(spec *command.Spec) {
	if !loopRunsSpec(spec) {
		c.offLoopBatches = 0
	}
	if spec.Flags&(command.FlagFast|command.FlagWrite|command.FlagReadonly) == 0 {
		runtime.Gosched()
	}
}

// loopsHandOffAll makes every event loop hand its connections to
// goroutines of their own (an idle timeout, which the goroutines' read
// deadlines enforce, was set).
func (s *Server) loopsHandOffAll() {
	for _, l := range s.loops {
		l.handOffAll()
	}
}

// run serves the loop's connections until the server stops; the
// connections left then go to goroutines of their own, which see them
// closed and end them.
func (l *eventLoop) run() {
	if err := l.poller.Run(l.turn); err != nil {
		l.srv.log.Error("event loop failed: its connections go to goroutines of their own", zap.Error(err))
	}
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.handOffAll()
}

// turn serves the connections the poller reported ready and the ones left
// with input by the last turn, one batch each, then writes all their
// replies (answer). It reports whether some have input left.
//
// The replies are written together at the end of the turn, as Redis writes
// every client's replies in beforeSleep: a client that answers each reply
// with its next request (redis-benchmark, a pool of application threads)
// then finds the replies of many connections in one wake-up and sends their
// next requests together, and the next turn finds them ready together.
// Written one by one as each batch ran, the replies scattered the requests:
// on a 3+3 cluster under GET -P 1 a master served 1.6 requests per wake-up,
// where redis-server served 4 (and 10 times fewer context switches).
func (l *eventLoop) turn(tokens []uint64, _ bool) bool {
	if len(tokens) > 0 {
		l.mu.Lock()
		for _, t := range tokens {
			if c := l.clients[t]; c != nil && !c.loopQueued {
				c.loopQueued = true
				l.queued = append(l.queued, c)
			}
		}
		l.mu.Unlock()
	}
	l.ready, l.queued = l.queued, l.ready[:0]
	for i, c := range l.ready {
		l.ready[i] = nil
		if l.begin(c, true) {
			l.finish(c, l.serve(c))
		}
	}
	// The effects of the turn's commands go to the replicas in one write
	// each, before the replies (PropagateLater).
	l.srv.flushLater()
	if len(l.answering) > 0 {
		l.srv.aofBeforeReplies() // the AOF holds what the replies tell (node/aof.go)
		for i, c := range l.answering {
			l.answering[i] = nil
			if l.begin(c, false) {
				l.answer(c)
				l.finish(c, false)
			}
		}
		l.answering = l.answering[:0]
	}
	return len(l.queued) > 0
}

// begin makes c the connection being served (which nobody evacuates), for
// its batch (serving) or its replies; false if c is no longer the loop's
// (handed off, ended or evacuated since it was queued).
func (l *eventLoop) begin(c *Client, serving bool) bool {
	l.mu.Lock()
	// A batch that ran this turn has its replies written first: a second
	// entry of c in the queue (loopAdopt) does not run another one.
	ours := c.loopConn != nil && !(serving && c.loopAnswering)
	if ours {
		if serving {
			c.loopQueued = false
		} else {
			c.loopAnswering = false
		}
		l.current = c
		l.served++
	}
	l.mu.Unlock()
	return ours
}

// finish ends begin's serve of c; answerLater queues c for the write
// phase (its batch ran). Evacuated before that, c's goroutine writes the
// replies (handOffAll).
func (l *eventLoop) finish(c *Client, answerLater bool) {
	l.mu.Lock()
	l.current = nil
	if answerLater && c.loopConn != nil {
		c.loopAnswering = true
		l.answering = append(l.answering, c)
	}
	l.mu.Unlock()
}

// loopStuckAfter is how long one connection's turn may last before the
// cron moves the loop's other connections to goroutines of their own.
const loopStuckAfter = time.Second

// checkStuck is the cron's look at the loop: a serve that has not ended
// for loopStuckAfter (a command waiting for a lock another goroutine holds
// long, a slow command) must not hold the loop's other clients, who may be
// the ones to end it (SCRIPT KILL, CLIENT UNPAUSE).
func (l *eventLoop) checkStuck(now time.Time) {
	l.mu.Lock()
	stuck := l.current != nil && l.served == l.seenServed && now.Sub(l.seenAt) >= loopStuckAfter
	if l.current == nil || l.served != l.seenServed {
		l.seenServed, l.seenAt = l.served, now
	}
	l.mu.Unlock()
	if stuck {
		l.evacuate()
	}
}

// evacuate is handOffAll for a loop one client holds, logged. What the
// loop's commands propagated before the serve that holds it goes to the
// replicas now, as their replies go out (resumeAnswer).
func (l *eventLoop) evacuate() {
	l.srv.flushLater()
	if n := l.handOffAll(); n > 0 {
		l.srv.log.Warn("event loop held by one client: its other clients go to goroutines of their own",
			zap.Int("clients", n))
	}
}

// handOffAll hands every connection of the loop but the one being served
// to a goroutine of its own, and returns how many. It runs on any
// goroutine: the connections it takes are not being served (l.mu,
// current), and the loop skips them from then on (loopConn nil).
func (l *eventLoop) handOffAll() int {
	type takenClient struct {
		c    *Client
		conn *rawsock.Conn
		from resumePoint // its replies if they wait for the write phase
	}
	l.mu.Lock()
	var out []takenClient
	for _, c := range l.clients {
		if c != l.current {
			t := takenClient{c: c, conn: l.takeLocked(c), from: resumeRead}
			if c.loopAnswering {
				c.loopAnswering = false
				t.from = resumeAnswer
			}
			out = append(out, t)
		}
	}
	l.mu.Unlock()
	for _, t := range out {
		l.unwatch(t.conn)
		go l.srv.serveClient(t.c, t.from)
	}
	return len(out)
}

// evacuateLoops evacuates every event loop (a script turned busy: the
// clients that may kill it must be read).
func (s *Server) evacuateLoops() {
	for _, l := range s.loops {
		l.evacuate()
	}
}

// serve reads one batch of c's and runs it, or hands c to a goroutine
// where the loop must not go on. It reports whether the batch ran, its
// replies left for the turn's write phase (answer).
func (l *eventLoop) serve(c *Client) (answerLater bool) {
	s := l.srv
	if !s.loopServes(c) {
		l.handoff(c, resumeRead)
		return false
	}
	batch, nargs, err := c.guard.ReadBatch()
	if errors.Is(err, rawsock.ErrWouldBlock) {
		return false
	}
	if err != nil {
		l.end(c, err)
		return false
	}
	s.beginBatch(c, batch, nargs)
	if err := s.runCommands(c, true); err != nil {
		if errors.Is(err, errHandoff) {
			l.handoff(c, resumeRun)
		} else {
			l.end(c, err)
		}
		return false
	}
	s.endCommands(c)
	if !c.loopFlushable() {
		l.handoff(c, resumeAnswer)
		return false
	}
	return true
}

// answer writes the replies of c's batch without waiting, or hands c to a
// goroutine that waits for room for them, and queues c for the next turn
// if its socket still holds input.
func (l *eventLoop) answer(c *Client) {
	done, err := c.tryFlushReplies(c.loopConn)
	switch {
	case err != nil:
		l.end(c, err)
		return
	case !done:
		l.handoff(c, resumeAnswer) // its goroutine waits for room for the rest
		return
	}
	if err := l.srv.afterReplies(c); err != nil {
		l.end(c, err)
		return
	}
	if !c.loopConn.Drained() || c.guard.Ready() {
		c.loopQueued = true
		l.queued = append(l.queued, c)
	}
}

// errHandoff stops a batch the event loop runs before a command it leaves
// to the connection's own goroutine.
var errHandoff = errors.New("handed to the connection's goroutine")

// loopServes reports whether the event loop may go on serving c: a client
// that pushes or is pushed to, a replica or a blocked client, CLIENT PAUSE
// and an idle timeout need a goroutine that can wait. So does every client
// while a script holds its keys' slots: a command waiting for them would
// hold the loop until the script ends, and SCRIPT KILL from a client of
// the loop would never be read.
func (s *Server) loopServes(c *Client) bool {
	return c.ps.push == nil && !c.trk.enabled && c.repl == nil && c.bs.pending == nil &&
		!s.pause.active.Load() && s.limits.IdleTimeout.Load() == 0 && s.scriptSlotHolds.Load() == 0
}

// loopRuns reports whether the event loop may run the command args of c:
// not once the batch's replies are more than it writes (checkOutput would
// have written them before this command, waiting for the socket).
func (s *Server) loopRuns(c *Client, args [][]byte) bool {
	if !s.loopServes(c) || c.wblockBytes+len(c.wbuf) >= outputWriteChunk {
		return false
	}
	spec, unknownSub := c.lookupCommand(args)
	if spec == nil || unknownSub {
		return true // unknown: answered with an error at once
	}
	return loopRunsSpec(spec)
}

// loopRunsSpec reports whether spec is a command the event loop runs:
// what waits for nothing another client does.
func loopRunsSpec(spec *command.Spec) bool {
	if isScriptCall(spec) || (spec.Parent != nil && loopSubcommands[spec.FullName()]) {
		// A script waits for nothing; one that runs past
		// busy-reply-threshold evacuates the loop (checkBusy), so that
		// SCRIPT KILL and the -BUSY replies reach the other clients.
		return true
	}
	f := spec.Flags
	if f&(command.FlagBlocking|command.FlagPubsub|command.FlagAdmin) != 0 {
		return false
	}
	// EXEC and DISCARD end what MULTI (fast) began: the queued commands do
	// not block inside a transaction.
	return f&(command.FlagFast|command.FlagWrite|command.FlagReadonly) != 0 ||
		(spec.Parent == nil && (spec.Name == "exec" || spec.Name == "discard"))
}

// loopSubcommands are the connection set-up commands clients send first
// (go-redis: HELLO, CLIENT SETNAME, CLIENT SETINFO, which 7.0 does not
// know), which set a field and wait for nothing: a client that sends them
// stays on the loop.
var loopSubcommands = map[string]bool{
	"client|setname": true, "client|getname": true, "client|id": true, "client|info": true,
}

// detach takes c out of the loop; its goroutine reads from now on. It
// returns false if c was no longer the loop's (evacuated meanwhile).
func (l *eventLoop) detach(c *Client) bool {
	l.mu.Lock()
	conn := l.takeLocked(c)
	l.mu.Unlock()
	if conn == nil {
		return false
	}
	l.unwatch(conn)
	return true
}

// takeLocked takes c out of the loop's tables and returns its connection
// (nil if it was no longer the loop's); l.mu is held.
func (l *eventLoop) takeLocked(c *Client) *rawsock.Conn {
	conn := c.loopConn
	delete(l.clients, uint64(c.id))
	c.loopConn = nil
	return conn
}

// unwatch stops watching conn and gives its read side back.
func (l *eventLoop) unwatch(conn *rawsock.Conn) {
	_ = l.poller.Remove(conn) // fails once the socket is closed, which removed it
	conn.ExitLoop()
}

// handoff gives c to a goroutine of its own, which goes on from from.
func (l *eventLoop) handoff(c *Client, from resumePoint) {
	if l.detach(c) {
		go l.srv.serveClient(c, from)
	}
}

// end ends c's connection, which ended with err (c is the connection
// being served: nobody evacuates it).
func (l *eventLoop) end(c *Client, err error) {
	l.detach(c)
	l.srv.endClient(c, err)
}

// loopFlushable reports whether the batch's replies are all in wbuf and
// small enough for the loop to write (node/output.go keeps larger output
// in blocks that its goroutine writes, tracking them).
func (c *Client) loopFlushable() bool {
	return c.ps.push == nil && len(c.wblocks) == 0 && len(c.wbuf) <= outputWriteChunk
}

// tryFlushReplies writes the batch's replies without waiting. done is
// false when the socket took only part of them: the rest stays in wbuf for
// flushReplies.
func (c *Client) tryFlushReplies(conn *rawsock.Conn) (done bool, err error) {
	b := c.wbuf
	if len(b) == 0 {
		return true, nil
	}
	n, err := conn.TryWrite(b)
	if err != nil {
		c.wbuf = nil
		return false, err
	}
	if n < len(b) {
		c.wbuf = b[:copy(b, b[n:])]
		c.obuf.held.Store(int64(len(c.wbuf)))
		return false, nil
	}
	c.wroteAll()
	if cap(b) > outputKeepCap && !c.srv.replyBufKeep.Load() {
		c.wbuf = nil // do not keep a burst's buffer
	} else {
		c.wbuf = b[:0]
	}
	return true, nil
}
