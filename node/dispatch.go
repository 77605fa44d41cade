package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
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
	if s.tracking.clients.Load() != 0 {
		s.trackingLimit() // node/tracking.go
	}
	if c.trk.enabled {
		c.trackingBeforeCommand()
	}
	c.run(args)
	c.endCommandAsking()
	defer c.trackingAfterCommand() // after the reply is queued (node/tracking.go)
	if len(c.Out) > 0 && c.repl != nil && c.repl.link != nil {
		c.replicaGeneratedReply() // node/cmd_replication.go
		return
	}
	if len(c.Out) > 0 {
		switch c.replyMode {
		case replyOn:
			if c.ps.push != nil { // a subscriber: replies and pushes share one queue (node/pubsub.go)
				c.flushStats()                   // the queue's writer may send the reply at once
				c.ps.push.enqueueReply(c.Out, s) // written with the batch (flushReplies)
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
		c.closeConn()
	}
}

// run executes one request in the order of Redis's processCommand: the
// lookup, the checks that refuse a command before it is queued or run
// (admit), MULTI's queue, the execution gate and the slot locks
// (enterExecution), the handler (execute), then the statistics and the
// clients the command made ready (finishCall). A panic inside the handler
// is recovered, logged with the command name and answered -ERR.
//
// A refused command is answered by the check that refused it and counted
// in rejected_calls; one refused before it could be queued also makes an
// open transaction answer EXECABORT.
func (c *Client) run(args [][]byte) {
	if len(args) == 0 {
		return
	}
	start := c.cmdStart
	spec := c.resolveCommand(args)
	if spec == nil {
		c.flagTransaction() // no command to count the refusal against
		return
	}
	if c.lastCmd.Load() != spec {
		c.lastCmd.Store(spec)
	}
	if c.loopConn == nil && len(c.srv.loops) > 0 {
		c.offLoopCommand(spec)
	}
	acc := c.statsFor(spec)
	roleGen, ok := c.admit(spec, args)
	if !ok {
		acc.rejected++
		c.flagTransaction()
		return
	}
	if c.multi != nil && !runsInMulti(spec) {
		c.queue(spec, args)
		return
	}
	db, ok := c.enterExecution(spec, args, roleGen)
	if !ok {
		acc.rejected++ // past queueing: the transaction is not flagged
		return
	}
	c.execute(spec, args, db)
	c.leaveExecution(db)
	c.finishCall(acc, spec, args, start)
}

// recentSpecs remembers the last few top-level commands a client looked
// up, by their names' bytes as sent: pipelines repeat one command, and a
// transaction alternates a few (MULTI, SET, EXEC), so that most commands
// skip the lower-casing and the map lookup. The table does not change while
// the server runs.
type recentSpecs struct {
	entries [4]recentSpec
	next    uint8 // the entry replaced next
}

type recentSpec struct {
	spec *command.Spec
	n    uint8
	name [15]byte
}

// find returns the spec remembered under name, or nil.
func (r *recentSpecs) find(name []byte) *command.Spec {
	for i := range r.entries {
		e := &r.entries[i]
		if int(e.n) == len(name) && e.spec != nil && string(e.name[:e.n]) == string(name) {
			return e.spec
		}
	}
	return nil
}

// add remembers spec under name, replacing the oldest entry; a name longer
// than an entry holds is not remembered.
func (r *recentSpecs) add(name []byte, spec *command.Spec) {
	e := &r.entries[r.next]
	if len(name) > len(e.name) {
		return
	}
	e.spec, e.n = spec, uint8(copy(e.name[:], name))
	r.next = (r.next + 1) % uint8(len(r.entries))
}

// resolveCommand finds the command args name, among the client's recent
// lookups first (containers resolve their subcommand every time). It
// returns nil, having written Redis's error, for an unknown command or
// subcommand.
func (c *Client) resolveCommand(args [][]byte) *command.Spec {
	spec, unknownSub := c.lookupCommand(args)
	switch {
	case spec == nil:
		c.rejectUnknown(args)
		return nil
	case unknownSub:
		c.Error(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", args[1], strings.ToUpper(string(args[0]))))
		return nil
	}
	return spec
}

// lookupCommand is the table's lookup (as the command was called), among
// c's recent lookups first; a top-level command found is remembered.
func (c *Client) lookupCommand(args [][]byte) (spec *command.Spec, unknownSub bool) {
	if spec := c.recentSpecs.find(args[0]); spec != nil {
		return spec, false
	}
	spec, unknownSub = c.srv.table.lookup(args)
	if spec != nil && !unknownSub && spec.Parent == nil && !spec.IsContainer() {
		c.recentSpecs.add(args[0], spec)
	}
	return spec, unknownSub
}

// admit applies the checks that refuse a command before it is queued in a
// transaction or run, in processCommand's order: arity, the protected
// commands, authentication, ACL permissions, cluster routing, maxmemory, the replica and
// min-replicas rules, the RESP2 subscribe context, and — for a command about to be
// queued — a busy script. Each check writes its own refusal. On the way it
// computes the command's keys and their slots (c.keyBuf, c.slotBuf), and it
// returns the replication role generation the replica rules saw:
// enterExecution judges the command again if the role changed since.
func (c *Client) admit(spec *command.Spec, args [][]byte) (roleGen uint64, ok bool) {
	if !spec.ArityOK(len(args)) {
		c.ErrArity(spec.FullName())
		return 0, false
	}
	if spec.Flags&command.FlagProtected != 0 && !c.protectedAllowed(spec) {
		return 0, false
	}
	if !c.authenticated && spec.Flags&command.FlagNoAuth == 0 && c.authRequired() {
		c.Error("NOAUTH Authentication required.")
		return 0, false
	}
	// Keys → slots, ascending (the lock order).
	c.keyBuf, c.slotBuf = c.commandSlots(spec, args)
	// ACL: a user with every permission costs one flag test (node/acl.go).
	if u := c.user.Load(); u != nil {
		if st := u.State(); !st.AllowsAll() && !c.aclAdmit(u, st, spec, args) {
			return 0, false
		}
	}
	if c.srv.cluster != nil && !c.isMasterLink() && !c.routeCommand(spec, args) { // node/cluster_route.go
		return 0, false
	}
	if !c.isMasterLink() {
		c.srv.loading.wait() // a load serves clients only now and then (node/loading.go)
	}
	roleGen = c.srv.repl.roleGen.Load()
	switch {
	case !c.admitMemory(spec, args): // maxmemory (node/maxmemory.go)
	case !c.replicationAllows(spec): // replica / min-replicas (node/replication.go)
	case !c.pubsubContextAllows(spec): // RESP2 subscribe context (node/cmd_pubsub.go)
	case c.multi != nil && !runsInMulti(spec) && c.busyRejects(spec): // a script is busy (node/multi.go)
	default:
		return roleGen, true
	}
	return roleGen, false
}

// enterExecution waits out CLIENT PAUSE and the execution gate, judges the
// command again if the replication role changed since admit, and locks its
// slots on the client's database, where a cluster node checks its routing
// again. It returns false when the command is refused on the way, having
// answered it and released what it took; otherwise leaveExecution releases
// it after execute.
func (c *Client) enterExecution(spec *command.Spec, args [][]byte, roleGen uint64) (*store.DB, bool) {
	s := c.srv
	s.pause.wait(spec)
	// The execution gate: wait while an exclusive EXEC or a script runs,
	// or answer -BUSY (node/multi.go).
	if !c.enterRun(spec) {
		return nil, false
	}
	if c.repl != nil && c.masterLinkStopped() {
		c.leaveRun()
		c.repl.dropped = true // masterStream.Apply
		return nil, false
	}
	if s.repl.roleGen.Load() != roleGen && !c.rejudgedAfterRoleChange(spec, args) {
		c.leaveRun()
		return nil, false
	}
	db := c.SelectedDB()
	c.SetDB(db)
	c.errored = false
	if len(c.slotBuf) > 0 && isScriptCall(spec) {
		// A script may hold its slots for long: the event loop must not
		// wait for them (node/evloop.go loopServes).
		s.scriptSlotHolds.Add(1)
		c.holdsScriptSlots = true
	}
	db.LockSlots(c.slotBuf)
	if s.cluster != nil && len(c.slotBuf) > 0 && !c.isMasterLink() && (c.routeRecheck || s.cluster.Slots().Load() != c.routeTable) &&
		!c.routeCommandLocked(spec, args) {
		// An open slot, or a slot table that changed since routing: the
		// check under the lock decided against running here.
		c.leaveExecution(db)
		return nil, false
	}
	return db, true
}

// leaveExecution releases what enterExecution took: the slot locks, the
// database and the execution gate.
func (c *Client) leaveExecution(db *store.DB) {
	db.UnlockSlots(c.slotBuf)
	if c.holdsScriptSlots {
		c.holdsScriptSlots = false
		c.srv.scriptSlotHolds.Add(-1)
	}
	c.SetDB(nil)
	c.leaveRun()
}

// execute runs the handler and propagates the command's effects.
func (c *Client) execute(spec *command.Spec, args [][]byte, db *store.DB) {
	masterLink := c.isMasterLink()
	if masterLink {
		// The master link acts on keys its master still has, expired here
		// or not (store/replica.go).
		db.SeeExpired(c.slotBuf, true)
	}
	if len(c.keyBuf) == 1 && len(c.slotBuf) == 1 {
		c.HintKeySlot(args[c.keyBuf[0]], c.slotBuf[0]) // hashed once (command.Ctx.KeySlot)
	}
	c.callHandler(spec, args)
	c.propagateEffects(spec, args) // remeasures the key with the hint too
	c.ClearKeySlotHint()
	if masterLink {
		db.SeeExpired(c.slotBuf, false)
	}
}

// finishCall completes a command that ran: a blocking command that found
// nothing to serve waits, then the call is counted (commandstats, latency,
// slot stats, failed_calls, the slow log), and the clients blocked on keys
// it made ready are served. start is the command's start (c.cmdStart when
// run began).
func (c *Client) finishCall(acc *cmdStatAcc, spec *command.Spec, args [][]byte, start time.Duration) {
	s := c.srv
	// The wait holds no lock and is not execution time (node/blocking.go).
	var blockedFor time.Duration
	if c.bs.pending != nil {
		c.flushStats() // counted before the client's earlier replies go out
		// A blocked client is not running: eviction closes it at once
		// (node/client_evict.go evictLater).
		c.executing.Store(false)
		if c.evictAfterReplies.Load() {
			c.kill()
		}
		blockedFor = c.awaitUnblock()
		c.executing.Store(true)
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
	s.slowlog.maybeRecord(c, spec, args, c.batchAt, start-c.batchStart, dur)
	if spec.Flags&command.FlagFast != 0 {
		s.latency.observe(latencyEventFastCommand, dur)
	} else {
		s.latency.observe(latencyEventCommand, dur)
	}
	// Serve the clients blocked on keys this command made ready, before its
	// reply is sent (node/blocking.go).
	if len(c.bs.ready) > 0 {
		c.enterRunWaiting() // not while a script or exclusive EXEC runs (node/multi.go)
		c.serveReadyKeys()
		c.leaveRun()
	}
}

// commandSlots returns the positions of the command's keys and their slots,
// sorted ascending without duplicates (the order locks are taken in). It
// reuses the client's buffers.
func (c *Client) commandSlots(spec *command.Spec, args [][]byte) ([]int, []uint16) {
	keys, err := command.Keys(spec, args, c.keyBuf[:0])
	if isShardPubsub(spec) {
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
func (c *Client) callHandler(spec *command.Spec, args [][]byte) {
	start := len(c.Out)
	defer func() {
		if r := recover(); r != nil {
			c.srv.stats.panics.Add(1)
			c.srv.log.Error("panic while executing a command",
				zap.String("command", spec.FullName()), zap.Any("panic", r), zap.Stack("stack"))
			c.Out = c.Out[:start]
			c.Error(fmt.Sprintf("ERR internal error executing '%s': %v", spec.FullName(), r))
		}
	}()
	monitored := c.srv.monitors.n.Load() != 0 // node/monitor.go
	if monitored {
		c.monitorBefore(spec, args)
	}
	spec.Handler(&c.Ctx, args)
	if monitored {
		c.monitorAfter(spec, args)
	}
	if owner := c.onBehalfOf(); owner.trk.enabled {
		owner.trackingRemember(c, spec, args) // node/tracking.go
	}
}
