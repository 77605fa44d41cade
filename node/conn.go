package node

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/shoal-db/shoal/resp"
	"go.uber.org/zap"
)

// Serving connections.
//
// Each accepted socket gets one goroutine (serveClient) that loops: one
// socket read through the connection's request guard (resp.RequestReader) → every complete command of
// that read split into arguments by resp.SplitCanonical, which steps over
// the canonical form the guard produced instead of parsing it again as
// redcon.ReadNextCommand did → each command run by the dispatcher → the replies
// of the whole batch written with one redcon.Writer flush. The arguments
// alias the batch's buffer and the batch's one argument array; both serve
// the next batch unless a command kept its arguments (keepArgs), so a
// steady pipeline allocates nothing per read, where redcon.Serve copied
// every command (a fifth of the CPU of a -P 16 benchmark).

// serveListener accepts clients on ln until it fails for good (closed or
// retired and the server stopped), then closes the connections it accepted
// that are still open, as redcon.Serve did.
func (s *Server) serveListener(ln net.Listener) {
	var mu sync.Mutex
	open := make(map[*Client]struct{})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for c := range open {
			_ = c.guard.Conn.Close()
		}
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (EMFILE, ECONNABORTED): retry after a
			// pause that grows, so that it does not spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-s.stopCron:
				return
			}
			continue
		}
		backoff = 0
		g, ok := nc.(*resp.RequestReader)
		if !ok {
			_ = nc.Close()
			continue
		}
		c := s.accept(g)
		if c == nil {
			_ = g.Conn.Close()
			continue
		}
		mu.Lock()
		open[c] = struct{}{}
		mu.Unlock()
		c.release = func() {
			mu.Lock()
			delete(open, c)
			mu.Unlock()
		}
		s.logAccepted(c)
		if !s.loopAdopt(c) { // node/evloop.go
			go s.serveClient(c, resumeRead)
		}
	}
}

// serveClient runs c's connection on its own goroutine until it ends,
// then unregisters c. from is where it takes over a batch the event loop
// began (node/evloop.go), or resumeRead for a new connection.
func (s *Server) serveClient(c *Client, from resumePoint) {
	if err := s.serveRequests(c, from); err != errBackToLoop {
		s.endClient(c, err)
	}
}

// errBackToLoop ends a connection's goroutine that gave it back to an
// event loop (loopReturn).
var errBackToLoop = errors.New("back to the event loop")

// logAccepted logs a client's arrival at loglevel debug/verbose, as
// Redis's "Accepted <addr>" line.
func (s *Server) logAccepted(c *Client) {
	if s.log.Core().Enabled(zap.DebugLevel) {
		s.log.Debug("Accepted "+c.addr, zap.Int64("client_id", c.id))
	}
}

// endClient closes c's connection, which ended with err, and unregisters c.
func (s *Server) endClient(c *Client, err error) {
	c.flushStats()
	_ = c.guard.Conn.Close()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, errConnDone) {
		err = nil
	}
	if s.log.Core().Enabled(zap.DebugLevel) {
		s.log.Debug("Client closed connection", zap.Int64("client_id", c.id), zap.String("addr", c.addr), zap.Error(err))
	}
	s.closed(c, err)
	if c.release != nil {
		c.release()
	}
}

// errPushWrite ends the loop when writing a client's push queue failed.
var errPushWrite = errors.New("writing the push queue failed")

// errConnDone ends the loop after QUIT, CLIENT KILL of oneself and the like.
var errConnDone = errors.New("connection done")

// resumePoint is where a connection's goroutine starts in the read → run
// → write cycle: at a read, or in a batch the event loop began.
type resumePoint uint8

const (
	resumeRead   resumePoint = iota // read the next batch
	resumeRun                       // run the rest of the current batch (c.batch)
	resumeAnswer                    // write the current batch's replies
)

// batchState is the read batch a connection is running: the commands not
// run yet and the batch's argument array.
type batchState struct {
	rest     []byte
	all      [][]byte
	commands int
}

// serveRequests is the read → run → write loop. It returns why it ended.
func (s *Server) serveRequests(c *Client, from resumePoint) error {
	for {
		if from == resumeRead {
			batch, nargs, err := c.guard.ReadBatch()
			if err != nil {
				return err
			}
			s.beginBatch(c, batch, nargs)
			from = resumeRun
		}
		if from == resumeRun {
			if err := s.runCommands(c, false); err != nil {
				return err
			}
			s.endCommands(c)
			if c.batch.commands > 1 {
				// A pipelined batch's replies wait for one turn of the other
				// connections whose batches are ready, as Redis writes every
				// client's replies together once per event-loop turn: the
				// clients then find many replies per wake-up instead of one
				// connection's, which on a machine the clients share cut the
				// server's CPU per request by 9-25% and raised rps by 10-42%
				// in the -P 16 benchmarks (bench-notify, -evict, -tls,
				// -tracking). A lone command (-P 1) is answered at once: there
				// the yield bought nothing and cost CPU.
				runtime.Gosched()
			}
		}
		// The AOF holds what the replies tell (node/aof.go), also for
		// replies an event loop left to this goroutine (resumeAnswer).
		s.aofBeforeReplies()
		from = resumeRead
		if err := c.flushReplies(); err != nil {
			return err
		}
		if err := s.afterReplies(c); err != nil {
			return err
		}
		if s.loopReturn(c) { // node/evloop.go
			return errBackToLoop
		}
	}
}

// beginBatch starts running a batch ReadBatch handed out.
func (s *Server) beginBatch(c *Client, batch []byte, nargs int) {
	c.startBatch()
	c.executing.Store(true)
	c.batchBytes = len(batch)
	c.obufCheckAt = int(s.limits.outputCheckAt.Load())
	s.stats.readBatches.Add(1)
	// The batch's argument array, of its exact size: the last batch's
	// if that one was given back (see keepArgs).
	var all [][]byte
	if cap(c.spareArgs) >= nargs {
		all = c.spareArgs[:0]
	} else {
		all = make([][]byte, 0, nargs)
	}
	c.spareArgs = nil
	c.argsKept = false
	c.batch = batchState{rest: batch, all: all}
}

// runCommands runs the commands of the current batch not run yet. In the
// event loop (loop) it stops before a command the loop does not run
// (loopRuns) and returns errHandoff, the command still first in c.batch.
func (s *Server) runCommands(c *Client, loop bool) error {
	b := &c.batch
	for len(b.rest) > 0 {
		args, rest, ok := resp.SplitCanonical(b.rest, b.all[len(b.all):])
		if !ok {
			// The guard hands out whole canonical commands only.
			return errors.New("request split failed")
		}
		if loop && !s.loopRuns(c, args) {
			return errHandoff // split again, in the same place, by the goroutine
		}
		b.rest = rest
		if len(args) <= cap(b.all)-len(b.all) {
			b.all = b.all[:len(b.all)+len(args)] // parsed in place
		}
		if s.evictClients(c) { // Redis's evictClients in processCommand (node/client_evict.go)
			return errConnDone
		}
		s.handle(c, args[:len(args):len(args)])
		b.commands++
		if c.connDone {
			return errConnDone
		}
		c.publishOwnedMemory() // the reply and what the command kept
		s.updateClientMemory(c)
	}
	return nil
}

// endCommands ends the running of a batch whose commands all ran.
func (s *Server) endCommands(c *Client) {
	c.flushStats() // before the replies: what a client saw is counted
	c.executing.Store(false)
}

// afterReplies completes a batch whose replies are written.
func (s *Server) afterReplies(c *Client) error {
	if c.evictAfterReplies.Load() {
		return errConnDone // evicted while it ran: its replies went first (node/client_evict.go)
	}
	c.publishOwnedMemory() // the replies are written
	s.updateClientMemory(c)
	if !c.argsKept || c.multi == nil {
		// Nothing refers to the batch any more: its buffers serve the
		// next one (a steady pipeline allocates nothing per batch). A
		// transaction queued and ended (EXEC, DISCARD) within the batch
		// let go of its queue, which is cleared.
		clear(c.batch.all)
		c.spareArgs = c.batch.all[:0]
		c.guard.Recycle()
	}
	c.batch = batchState{}
	return nil
}

// keepArgs records that the running command keeps references to its
// arguments after it returns (MULTI queues the command), so its batch's
// buffers must not be reused. Handlers otherwise copy what they keep
// (bytes.Clone, string(...)): the arguments alias the connection's buffers.
func (c *Client) keepArgs() { c.argsKept = true }

// flushReplies writes the replies queued for the connection, if any. While
// the write is under way the bytes not yet written are published as
// c.obuf.held (CLIENT LIST omem, the cron's limit check, node/output.go).
func (c *Client) flushReplies() error {
	if c.ps.push != nil {
		// Replies and pushes share the push queue (node/pubsub.go):
		// written here, on the connection's goroutine, once per batch.
		if !c.ps.push.flushNow() {
			return errPushWrite
		}
		return nil
	}
	b := c.wbuf
	if len(c.wblocks) > 0 {
		return c.flushBlocks()
	}
	if len(b) == 0 {
		return nil
	}
	var err error
	if len(b) <= outputWriteChunk {
		c.obuf.held.Store(int64(len(b)))
		err = writeConn(c.guard.Conn, b)
	} else {
		err = c.writeTracked(b, 0)
	}
	c.wroteAll()
	if (cap(b) > outputKeepCap && !c.srv.replyBufKeep.Load()) || err != nil {
		c.wbuf = nil // do not keep a burst's buffer
	} else {
		c.wbuf = b[:0]
	}
	return err
}

// closeConn flushes the queued replies and closes the socket; the serving
// loop stops after the running command.
func (c *Client) closeConn() {
	c.flushStats()
	_ = c.flushReplies()
	c.connDone = true
	_ = c.guard.Conn.Close()
}
