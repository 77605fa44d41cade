package node

import (
	"bytes"
	"fmt"
	"math/bits"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// handle runs one command on the connection's goroutine and queues its
// reply; the serving loop flushes the queued replies of a pipelined read
// batch in one write (node/conn.go).
func (s *Server) handle(c *Client, args [][]byte) {
	if c.closeAfter {
		return // QUIT was received: nothing after it runs (as in Redis)
	}
	c.Out = c.Out[:0]
	c.run(args)
	c.endCommandAsking()
	if len(c.Out) > 0 {
		switch c.replyMode {
		case replyOn:
			if c.ps.push != nil { // a subscriber: replies and pushes share one queue (node/pubsub.go)
				c.flushStats() // the queue's writer may send the reply at once
				c.ps.push.enqueue(c.Out, s)
			} else if n := c.wblockBytes + len(c.wbuf) + len(c.Out); n >= c.obufCheckAt && c.checkOutput(n, true) {
				// Closed for its output buffer limit (node/output.go):
				// the reply is dropped.
			} else if len(c.Out) < outputBlockMin {
				c.wbuf = append(c.wbuf, c.Out...)
			} else {
				c.queueLargeReply()
			}
			c.stats.outBytes += int64(len(c.Out)) // published by flushStats
		case replySkipThis:
			c.replyMode = replyOn
		}
	} else if c.replyMode == replySkipThis {
		c.replyMode = replyOn
	}
	if c.replyMode == replySkip {
		c.replyMode = replySkipThis
	}
	if cap(c.Out) > 64*1024 {
		c.Out = nil // do not keep a big reply's buffer for the connection's life
	}
	if c.obufClosing {
		c.Out = c.Out[:0]
		c.connDone = true // closed for its output buffer limit: nothing more runs
		return
	}
	if c.closeAfter {
		if c.ps.push != nil {
			c.ps.push.flushNow()
		}
		c.closeConn()
	}
}

// run executes one request: lookup, arity, protection and auth checks, key
// extraction, slot locking, the handler, statistics. A panic inside the
// handler is recovered, logged with the command name and answered -ERR.
func (c *Client) run(args [][]byte) {
	if len(args) == 0 {
		return
	}
	s := c.srv
	start := c.cmdStart

	// Pipelines repeat one command: reuse the last lookup when the name's
	// bytes are the same (containers resolve their subcommand every time).
	var spec *CommandSpec
	unknownSub := false
	if c.lastSpec != nil && bytes.Equal(args[0], c.lastName) {
		spec = c.lastSpec
	} else {
		spec, unknownSub = s.table.lookup(args)
		if spec != nil && !unknownSub && spec.Parent == nil && !spec.isContainer() {
			c.lastSpec = spec
			c.lastName = append(c.lastName[:0], args[0]...)
		}
	}
	if spec == nil {
		c.rejectUnknown(args)
		c.flagTransaction()
		return
	}
	if unknownSub {
		c.Error(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", args[1], strings.ToUpper(string(args[0]))))
		c.flagTransaction()
		return
	}
	if c.lastCmd.Load() != spec {
		c.lastCmd.Store(spec)
	}
	acc := c.statsFor(spec)
	if !spec.arityOK(len(args)) {
		acc.rejected++
		c.ErrArity(spec.fullName)
		c.flagTransaction()
		return
	}
	if spec.Flags&FlagProtected != 0 && !c.protectedAllowed(spec) {
		acc.rejected++
		c.flagTransaction()
		return
	}
	if !c.authenticated && spec.Flags&FlagNoAuth == 0 {
		acc.rejected++
		c.Error("NOAUTH Authentication required.")
		c.flagTransaction()
		return
	}
	// Keys → slots, ascending (the lock order).
	c.keyBuf, c.slotBuf = c.commandSlots(spec, args)
	if c.srv.cluster != nil && !c.isMasterLink() {
		if !c.routeCommand(spec, args) {
			acc.rejected++
			c.flagTransaction()
			return
		}
	}
	roleGen := s.repl.roleGen.Load()
	if !c.replicationAllows(spec) { // replica / min-replicas (node/replication.go)
		acc.rejected++
		c.flagTransaction()
		return
	}
	if !c.pubsubContextAllows(spec) { // RESP2 subscribe context (node/cmd_pubsub.go)
		acc.rejected++
		c.flagTransaction()
		return
	}
	if c.multi != nil && !spec.runsInMulti() {
		if c.busyRejects(spec) { // a script is busy (node/multi.go)
			acc.rejected++
			c.flagTransaction()
			return
		}
		c.queue(spec, args)
		return
	}
	s.pause.wait(spec)
	// The execution gate: wait while an exclusive EXEC or a script runs,
	// or answer -BUSY (node/multi.go).
	if !c.enterRun(spec) {
		acc.rejected++
		return
	}
	if s.repl.roleGen.Load() != roleGen && !c.rejudgedAfterRoleChange(spec, args) {
		c.leaveRun()
		acc.rejected++
		return
	}

	db := c.srv.ks.DB(int(c.dbIndex.Load()))
	c.SetDB(db)
	c.errored = false
	db.LockSlots(c.slotBuf)
	if c.srv.cluster != nil && len(c.slotBuf) > 0 && !c.isMasterLink() && (c.routeRecheck || c.srv.cluster.Slots().Load() != c.routeTable) &&
		!c.routeCommandLocked(spec, args) {
		// An open slot, or a slot table that changed since routing: the
		// check under the lock decided against running here.
		db.UnlockSlots(c.slotBuf)
		c.SetDB(nil)
		c.leaveRun()
		acc.rejected++
		return
	}
	masterLink := c.isMasterLink()
	if masterLink {
		// The master link acts on keys its master still has, expired here
		// or not (store/replica.go).
		db.SeeExpired(c.slotBuf, true)
	}
	c.callHandler(spec, args)
	c.propagateEffects(spec, args)
	if masterLink {
		db.SeeExpired(c.slotBuf, false)
	}
	db.UnlockSlots(c.slotBuf)
	c.SetDB(nil)
	c.leaveRun()
	// A blocking command that found nothing to serve waits here, holding no
	// lock; the wait is not execution time (node/blocking.go).
	var blockedFor time.Duration
	if c.bs.pending != nil {
		c.flushStats() // counted before the client's earlier replies go out
		blockedFor = c.awaitUnblock()
	}
	end := time.Since(s.start) // the one clock read per command (see startBatch)
	c.cmdStart = end
	dur := end - start - blockedFor
	acc.calls++
	acc.usec += int64(dur / time.Microsecond)
	acc.observe(dur)
	if st := s.slotStats; st != nil && len(c.slotBuf) == 1 { // node/cmd_slotstats.go
		st.record(c.slotBuf[0], args, dur, len(c.Out))
	}
	if c.errored {
		acc.failed++
	}
	s.slowlog.maybeRecord(c, spec, args, c.batchAt.Add(start-c.batchStart), dur)
	// Serve the clients blocked on keys this command made ready, before its
	// reply is sent (node/blocking.go).
	if len(c.bs.ready) > 0 {
		c.enterRunWaiting() // not while a script or exclusive EXEC runs (node/multi.go)
		c.serveReadyKeys()
		c.leaveRun()
	}
}

// cmdStatAcc gathers the statistics of a run of one command on one
// connection (pipelines repeat a command). They reach the command's shared
// counters when the connection runs another command, before it blocks and
// before its replies are written: every reply a client can have seen has
// its command counted (and INFO, another command, sees the counts of the
// commands before it), at a fraction of the atomic operations — four per
// command were a tenth of a pipelined GET.
type cmdStatAcc struct {
	spec                          *CommandSpec
	calls, usec, rejected, failed int64
	lat                           [latencyBucketCount]int64
	latUsed                       uint32 // the buckets of lat that are not zero
	outBytes                      int64  // reply bytes queued since the last flush (any command)
}

// observe counts one call of duration d in its latency bucket (the
// buckets of latencyBuckets.observe).
func (a *cmdStatAcc) observe(d time.Duration) {
	i := latencyBucket(d)
	a.lat[i]++
	a.latUsed |= 1 << i
}

// statsFor returns the accumulator for spec, first publishing the one of
// the previous command if it was another — or if this one is not a "fast"
// command: INFO, LATENCY, CONFIG RESETSTAT and the like read or reset the
// counters, and INFO after INFO counts the first one, as in Redis.
func (c *Client) statsFor(spec *CommandSpec) *cmdStatAcc {
	if c.stats.spec != spec || spec.Flags&FlagFast == 0 {
		c.flushStats()
		c.stats.spec = spec
	}
	return &c.stats
}

// flushStats adds the accumulated statistics to the command's shared
// counters and the client's processed-commands total. Called by the
// connection's goroutine.
func (c *Client) flushStats() {
	a := &c.stats
	if a.outBytes != 0 {
		c.outBytes.Add(a.outBytes)
		a.outBytes = 0
	}
	if a.spec == nil {
		return
	}
	sh := &a.spec.stats[c.id%statShards]
	if a.calls != 0 {
		sh.calls.Add(a.calls)
		sh.usec.Add(a.usec)
	}
	if a.rejected != 0 {
		sh.rejected.Add(a.rejected)
	}
	if a.failed != 0 {
		sh.failed.Add(a.failed)
	}
	if n := a.calls + a.rejected; n != 0 {
		c.cmdsProcessed.Add(n)
	}
	for m := a.latUsed; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		sh.lat[i].Add(a.lat[i])
		a.lat[i] = 0
	}
	// The spec stays: a command that flushes mid-run (before blocking)
	// goes on counting into the same accumulator.
	a.calls, a.usec, a.rejected, a.failed, a.latUsed = 0, 0, 0, 0, 0
}

// startBatch reads the clock for a batch of requests read together: the
// time of the client's last interaction (Redis too stamps it once per
// read) and the start of the batch's first command. Each later command of
// the batch starts where the one before it ended, so a command costs one
// clock read, not two (a clock read was a tenth of a pipelined GET's CPU).
func (c *Client) startBatch() {
	now := time.Now()
	c.batchAt = now
	c.batchStart = now.Sub(c.srv.start)
	c.cmdStart = c.batchStart
	c.lastInteraction.Store(now.UnixMilli())
}

// commandSlots returns the positions of the command's keys and their slots,
// sorted ascending without duplicates (the order locks are taken in). It
// reuses the client's buffers.
func (c *Client) commandSlots(spec *CommandSpec, args [][]byte) ([]int, []uint16) {
	keys, err := commandKeys(spec, args, c.keyBuf[:0])
	if spec.Flags&FlagPubsub != 0 && len(spec.KeySpecs) > 0 {
		keys = shardChannelPositions(spec, args, keys) // routed like keys (node/cmd_pubsub.go)
	}
	sl := c.slotBuf[:0]
	if err == nil {
		for _, p := range keys {
			sl = append(sl, slots.KeySlot(args[p]))
		}
		if len(sl) > 1 {
			slices.Sort(sl)
			sl = slices.Compact(sl)
		}
	}
	return keys, sl
}

// callHandler runs the handler. A panic is recovered: logged with the
// command name and a stack, counted, and answered -ERR in place of whatever
// partial reply the handler had written.
func (c *Client) callHandler(spec *CommandSpec, args [][]byte) {
	start := len(c.Out)
	defer func() {
		if r := recover(); r != nil {
			c.srv.stats.panics.Add(1)
			c.srv.log.Error("panic while executing a command",
				zap.String("command", spec.fullName), zap.Any("panic", r), zap.Stack("stack"))
			c.Out = c.Out[:start]
			c.Error(fmt.Sprintf("ERR internal error executing '%s': %v", spec.fullName, r))
		}
	}()
	spec.Handler(&c.Ctx, args)
}

// rejectUnknown writes Redis 7.0's unknown-command error.
func (c *Client) rejectUnknown(args [][]byte) {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	c.Error(fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b.String()))
}

// protectedAllowed applies enable-debug-command / enable-module-command
// (no | yes | local) and writes Redis's refusal when not allowed.
func (c *Client) protectedAllowed(spec *CommandSpec) bool {
	top := spec
	if spec.Parent != nil {
		top = spec.Parent
	}
	what, directive := "DEBUG", "enable-debug-command"
	if top.Name == "module" {
		what, directive = "MODULE", "enable-module-command"
	}
	switch c.srv.cfg.String(directive) {
	case "yes":
		return true
	case "local":
		if c.isLocal() {
			return true
		}
	}
	c.Error(fmt.Sprintf("ERR %s command not allowed. If the %s option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", what, directive))
	return false
}

func (c *Client) isLocal() bool {
	ta, ok := c.guard.Conn.RemoteAddr().(*net.TCPAddr)
	return !ok || ta.IP.IsLoopback()
}

// noteError counts an error reply in INFO errorstats.
func (c *Client) noteError(msg string) {
	c.errored = true
	s := c.srv
	s.stats.totalErrorReplies.Add(1)
	code := msg
	if i := strings.IndexByte(msg[:min(len(msg), 32)], ' '); i > 0 {
		code = msg[:i]
	} else {
		code = "ERR"
	}
	s.stats.countError(code)
}

// clientPause implements CLIENT PAUSE: while active, commands of the paused
// class wait (WRITE: commands that may write; ALL: every command except
// the ones clients need to unpause).
type clientPause struct {
	// active is set while a pause may be in force, so that every command
	// does not take mu (one mutex shared by all connections) to learn that
	// nothing is paused. It is set under mu before until; a command that
	// reads it false started before the pause did, as in Redis.
	active atomic.Bool
	mu     sync.Mutex
	until  time.Time
	all    bool
	wake   chan struct{} // closed when the pause ends or changes
}

// Pause starts or extends a pause.
func (p *clientPause) Pause(d time.Duration, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	p.active.Store(true)
	if until.After(p.until) {
		p.until = until
	}
	p.all = p.all || all
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
}

// Unpause ends the pause.
func (p *clientPause) Unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

// endLocked ends the pause and wakes the waiting clients; p.mu is held.
func (p *clientPause) endLocked() {
	p.until = time.Time{}
	p.all = false
	p.active.Store(false)
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// wait blocks while spec is paused.
func (p *clientPause) wait(spec *CommandSpec) {
	if !p.active.Load() {
		return
	}
	for {
		p.mu.Lock()
		if p.until.IsZero() {
			p.mu.Unlock()
			return
		}
		left := time.Until(p.until)
		affected := p.all || spec.Flags&(FlagWrite|FlagMayReplicate) != 0
		if spec.fullName == "client|unpause" || spec.fullName == "client|pause" {
			affected = false
		}
		if left <= 0 {
			p.endLocked() // expired: the first command to notice ends it
			p.mu.Unlock()
			return
		}
		wake := p.wake
		p.mu.Unlock()
		if !affected {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// rejudgedAfterRoleChange judges again a command that passed the checks
// before this node became a replica (it changes role with the gate closed,
// so a running command finished first), in processCommand's order: in
// cluster mode the new slot table redirects it first (a write paused by a
// manual failover gets MOVED to the new master, as in Redis, not
// READONLY), then the replica rules. It has answered the client when it
// returns false.
func (c *Client) rejudgedAfterRoleChange(spec *CommandSpec, args [][]byte) bool {
	if c.srv.cluster != nil && !c.isMasterLink() && !c.routeCommand(spec, args) {
		return false
	}
	return c.replicationAllows(spec)
}
