package node

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/config"
)

// Client output buffers and client-output-buffer-limit (Redis 7.0's
// checkClientOutputBufferLimits and closeClientOnOutputBufferLimitReached).
//
// The replies of one read batch accumulate in c.wbuf and leave with one
// write at the end of the batch (node/conn.go). The limits count what the
// server holds for a client and has not written yet: the batch's replies
// (plus the reply being built) while they accumulate, the part not yet
// written while a write is under way, and a subscriber's push queue
// (node/pubsub.go).
//
// Hot path: appending a reply costs one compare against c.obufCheckAt, the
// smallest size at which something must be decided — the hard limit, the
// soft limit, or, with no hard limit, outputFlushAt (the batch is then
// written early so that it stays bounded). The threshold is read once per
// batch from an atomic that a config hook refreshes.
//
// With a hard limit a batch is never written early: Redis processes a
// whole read before it writes, so a pipeline whose replies pass the hard
// limit gets nothing and is closed; shoal does the same, and the memory a
// client can hold is its hard limit plus one reply.
//
// A write that blocks (the client does not read) holds the connection's
// goroutine, which then stops reading requests: the pipeline waits in the
// kernel, not in the server. What the blocked write still holds is
// published in obuf.held; the cron checks it against the limits every tick
// (the soft limit's duration, a limit lowered by CONFIG SET) and closes the
// socket, which ends the write, as Redis's clientsCron does.

// outputState is what other goroutines (CLIENT LIST, INFO, the cron) see of
// a client's output buffer.
type outputState struct {
	// held is the number of bytes held for the client and not yet
	// written: a write under way, a subscriber's queue, or a batch at the
	// moment it passed a limit. CLIENT LIST's omem.
	held atomic.Int64
	// softSince is when (unix seconds) the soft limit was first seen
	// passed without a break since; 0 when it is not passed.
	softSince atomic.Int64
}

const (
	// outputFlushAt: with no hard limit, a batch's replies are written
	// once they reach this size, so that a pipeline of large replies
	// holds at most about this much (Redis would hold them all).
	outputFlushAt = 1 << 20
	// outputWriteChunk: a larger write is split so that held (omem)
	// follows its progress and the soft limit sees a reader that drains.
	outputWriteChunk = 256 << 10
	// outputKeepCap is the reply buffer capacity kept between batches.
	outputKeepCap = 256 << 10
	// outputBlockMin: a reply this large is queued as it was built
	// instead of being copied into wbuf, so that a batch of large replies
	// costs their own size and no growing copies of a buffer.
	outputBlockMin = 64 << 10
	// outputRecheckStep: once past the threshold, the limits are looked
	// at again every this many bytes (and at the hard limit exactly).
	outputRecheckStep = 64 << 10
	// outputPeakSlots is Redis's CLIENTS_PEAK_MEM_USAGE_SLOTS: INFO's
	// client_recent_max_output_buffer is the largest value seen in the
	// last that many seconds.
	outputPeakSlots = 8
)

// outputLimitReached is checkClientOutputBufferLimits: the hard limit is
// reached as soon as used gets to it; the soft limit once used has stayed at
// or above it for more than its seconds (counted in whole seconds, as
// Redis's server.unixtime). A zero limit is no limit. It updates softSince.
func outputLimitReached(lim config.ClientBufferLimit, used uint64, softSince *atomic.Int64, now int64) bool {
	hard := lim.HardBytes > 0 && used >= lim.HardBytes
	soft := false
	if lim.SoftBytes > 0 && used >= lim.SoftBytes {
		if since := softSince.Load(); since == 0 {
			softSince.Store(now) // first time seen: the clock starts
		} else {
			soft = now-since > lim.SoftSeconds
		}
	} else if softSince.Load() != 0 {
		softSince.Store(0)
	}
	return hard || soft
}

// outputCheckAt is the batch size at which the dispatcher must look at the
// limits of normal clients (see above).
func outputCheckAt(lim config.ClientBufferLimit) int64 {
	at := uint64(outputFlushAt)
	if lim.HardBytes > 0 {
		at = lim.HardBytes
	}
	if lim.SoftBytes > 0 {
		at = min(at, lim.SoftBytes)
	}
	return int64(min(at, math.MaxInt64))
}

// applyOutputLimits refreshes the hot path's copy of the normal class's
// threshold (a config hook).
func (s *Server) applyOutputLimits() {
	lims := s.cfg.ClientOutputBufferLimits()
	s.limits.output.Store(&lims)
	s.limits.outputCheckAt.Store(outputCheckAt(lims[config.ClientNormal]))
}

// outputClass is the client-output-buffer-limit class of a client that
// has a socket: pubsub while subscribed, normal otherwise (Redis handles
// the master link as normal; replica links are limited by replication).
func (c *Client) outputClass() int {
	if c.subscribed() {
		return config.ClientPubSub
	}
	return config.ClientNormal
}

// checkOutput runs when the replies held for c reach c.obufCheckAt. used
// is what the server holds: the batch's replies plus the reply being
// built. A client past its limit is closed at once and true returned; the
// caller stops adding to its replies. Otherwise, with no hard limit and
// mayFlush (between commands), the batch's earlier replies are written once
// used reaches outputFlushAt.
func (c *Client) checkOutput(used int, mayFlush bool) bool {
	if c.obufClosing {
		return true
	}
	if c.guard == nil || c.kind() == clientReplica || c.kind() == clientMaster {
		// A connection-less client (scripts, serving a blocked client) or
		// a replication link: no client output limit applies.
		c.obufCheckAt = math.MaxInt
		return false
	}
	lim := c.srv.cfg.ClientOutputBufferLimits()[c.outputClass()]
	if outputLimitReached(lim, uint64(used), &c.obuf.softSince, time.Now().Unix()) {
		c.closeForOutputLimit(used)
		return true
	}
	// The event loop does not wait for a socket: it hands the connection
	// to its goroutine before the next command instead (loopRuns).
	if mayFlush && lim.HardBytes == 0 && used >= outputFlushAt && c.wblockBytes+len(c.wbuf) > 0 && c.loopConn == nil {
		c.flushStats() // what a client saw is counted
		if err := c.flushReplies(); err != nil {
			c.kill()
			c.connDone = true
		}
		c.obufCheckAt = int(c.srv.limits.outputCheckAt.Load())
		return false
	}
	// Look again after outputRecheckStep more bytes (a long reply must not
	// pay this for each element), or exactly at the hard limit.
	next := used + outputRecheckStep
	if lim.HardBytes > uint64(used) {
		next = int(min(uint64(next), lim.HardBytes))
	}
	c.obufCheckAt = next
	return false
}

// closeForOutputLimit is closeClientOnOutputBufferLimitReached's
// asynchronous branch: nothing more is written to the client, the socket is
// closed, and its serving loop ends after the running command (a
// transaction still runs to its end, as in Redis).
func (c *Client) closeForOutputLimit(used int) {
	c.obufClosing = true
	c.obuf.held.Store(int64(used)) // the log line's omem
	c.srv.noteOutputPeak(int64(used))
	c.srv.log.Warn("Client " + c.InfoLine() + " scheduled to be closed ASAP for overcoming of output buffer limits.")
	c.wbuf, c.wblocks, c.wblockBytes = nil, nil, 0
	c.Out = c.Out[:0]
	c.kill()
	c.obuf.held.Store(0)
}

// replyOverLimit is for replies that grow inside one command (EXEC's
// queued commands, sampling with repetition): it reports whether the client
// was closed for passing its output buffer limit — its partial reply is
// then dropped — so that the command stops adding to a reply nobody reads.
func (c *Client) replyOverLimit() bool { return c.replyOverLimitWith(0) }

// replyOverLimitWith is replyOverLimit for a command that gathers its
// reply before writing it: pending bytes are still to be added to c.out.
func (c *Client) replyOverLimitWith(pending int) bool {
	if used := c.wblockBytes + len(c.wbuf) + len(c.Out) + pending; used >= c.obufCheckAt && !c.obufClosing {
		c.checkOutput(used, false)
	}
	if c.obufClosing {
		c.Out = c.Out[:0]
	}
	return c.obufClosing
}

// queueLargeReply queues the reply just built (c.out) as a block of its
// own, after the small replies before it; c.out starts a new buffer.
func (c *Client) queueLargeReply() {
	if len(c.wbuf) > 0 {
		c.wblocks = append(c.wblocks, c.wbuf)
		c.wblockBytes += len(c.wbuf)
		c.wbuf = nil // its array belongs to the block now
	}
	c.wblocks = append(c.wblocks, c.Out)
	c.wblockBytes += len(c.Out)
	c.Out = nil
}

// batchOutput returns the batch's output as one buffer and empties it (a
// new subscriber's push queue takes it over).
func (c *Client) batchOutput() []byte {
	if len(c.wblocks) == 0 {
		b := c.wbuf
		c.wbuf = nil
		return b
	}
	b := make([]byte, 0, c.wblockBytes+len(c.wbuf))
	for _, blk := range c.wblocks {
		b = append(b, blk...)
	}
	b = append(b, c.wbuf...)
	c.wbuf, c.wblocks, c.wblockBytes = nil, nil, 0
	return b
}

// flushBlocks writes a batch that has large replies queued as blocks.
func (c *Client) flushBlocks() error {
	left := c.wblockBytes + len(c.wbuf)
	var err error
	for i, blk := range c.wblocks {
		if err == nil {
			left -= len(blk)
			err = c.writeTracked(blk, left)
		}
		c.wblocks[i] = nil
	}
	if err == nil && len(c.wbuf) > 0 {
		err = c.writeTracked(c.wbuf, 0)
	}
	c.wblocks, c.wblockBytes = c.wblocks[:0], 0
	c.wroteAll()
	if (cap(c.wbuf) > outputKeepCap && !c.srv.replyBufKeep.Load()) || err != nil {
		c.wbuf = nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
	return err
}

// writeTracked writes b in pieces of at most outputWriteChunk, publishing
// before each how much is held (what is left of b, plus after bytes queued
// behind it).
func (c *Client) writeTracked(b []byte, after int) error {
	for len(b) > 0 {
		c.obuf.held.Store(int64(len(b) + after))
		n := min(len(b), outputWriteChunk)
		if err := writeConn(c.guard.Conn, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// wroteAll notes that nothing is held any more: the soft limit's clock
// stops.
func (c *Client) wroteAll() {
	c.obuf.held.Store(0)
	if c.obuf.softSince.Load() != 0 {
		c.obuf.softSince.Store(0)
	}
}

// noteOutputPeak records an output buffer size for INFO's
// client_recent_max_output_buffer.
func (s *Server) noteOutputPeak(n int64) {
	slot := &s.outputPeak[time.Now().Unix()%outputPeakSlots]
	for {
		cur := slot.Load()
		if n <= cur || slot.CompareAndSwap(cur, n) {
			return
		}
	}
}

// recentMaxOutput is the largest output buffer seen in the last
// outputPeakSlots seconds (Redis's getExpansiveClientsInfo).
func (s *Server) recentMaxOutput() int64 {
	var m int64
	for i := range s.outputPeak {
		m = max(m, s.outputPeak[i].Load())
	}
	return m
}

// outputCron is clientsCron's output part, run every cron tick: it samples
// every client's held output for client_recent_max_output_buffer and closes
// a client whose held output has passed its limit (a write or a push queue
// that does not drain: the soft limit's duration, or a limit lowered since).
func (s *Server) outputCron(now time.Time) {
	sec := now.Unix()
	// Redis zeroes the next second's slot, so that a slot only holds what
	// was seen in its own second.
	s.outputPeak[(sec+1)%outputPeakSlots].Store(0)
	s.mu.Lock()
	s.cronClients = s.cronClients[:0]
	for _, c := range s.clients {
		s.cronClients = append(s.cronClients, c)
	}
	s.mu.Unlock()
	lims := s.cfg.ClientOutputBufferLimits()
	for i, c := range s.cronClients {
		s.cronClients[i] = nil
		s.updateClientMemory(c) // clientsCron's accounting (node/client_evict.go)
		if c.evictAfterReplies.Load() && !c.executing.Load() && !c.killed.Load() {
			// Evicted while it ran (evictLater), its commands have ended
			// since, and it is still open: its replies are stuck in a write
			// it does not read (its own goroutine checks the flag only once
			// they are written), and it is out of the eviction buckets for
			// good. Redis writes what the socket takes, then frees it.
			c.kill()
			continue
		}
		used := c.obuf.held.Load()
		if used == 0 || c.killed.Load() || c.kind() == clientReplica || c.kind() == clientMaster {
			continue
		}
		s.noteOutputPeak(used)
		if outputLimitReached(lims[c.outputClass()], uint64(used), &c.obuf.softSince, sec) {
			s.log.Warn("Client " + c.InfoLine() + " closed for overcoming of output buffer limits.")
			c.kill()
		}
	}
}
