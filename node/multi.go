package node

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// MULTI / EXEC / DISCARD, and the execution gate that makes EXEC and
// scripts atomic.
//
// While a client is in MULTI the dispatcher queues every command except
// EXEC, DISCARD, MULTI, WATCH, QUIT and RESET and answers +QUEUED; a command
// rejected while queueing (unknown, wrong arity, NOAUTH, BUSY...) marks the
// transaction so that EXEC answers EXECABORT, as Redis does.
//
// EXEC runs the whole queue atomically, in one of two ways:
//
//   - Slot-locked: when every queued command has keys, in the selected
//     database, and every watched key is in that database too, EXEC locks
//     the slots of all of them (ascending, like any multi-key command) for
//     the whole transaction: the WATCH check, the commands and the
//     propagation of their effects. Other clients run in parallel on other
//     slots.
//   - Exclusive: a transaction with a keyless command (FLUSHALL, KEYS,
//     SCAN, SELECT, SWAPDB, EVAL, ...) closes the execution gate: every
//     other client's command waits until EXEC is done, as in Redis's single
//     thread. Each queued command then locks its own slots as the
//     dispatcher would, so the keyspace-wide commands, which lock slot by
//     slot themselves, do not deadlock (Go mutexes are not re-entrant).
//
// The execution gate (execGate) is closed by an exclusive EXEC and by
// every script that does not run under its keys' slot locks
// (node/script_locked.go). The dispatcher marks each client active while it runs a
// command (one atomic store and one atomic load per command, no shared
// write); the closer waits until no other client is active. A client that
// finds the gate closed waits for it to open, or — when the closer is a
// script that has run past busy-reply-threshold — is answered -BUSY unless
// its command is allowed while busy (SCRIPT KILL, FUNCTION KILL, ...).
//
// The transaction's write effects go to the effect feed as one Propagate
// call, wrapped in MULTI ... EXEC when there is more than one (Redis 7.0),
// emitted before the transaction lets go of its locks or the gate.

// maxKeptQueue bounds the queue array a client keeps from one transaction
// to the next.
const maxKeptQueue = 1024

// multiState is a client's open transaction.
type multiState struct {
	queue []queuedCommand
	dirty bool // a command was rejected while queueing: EXEC aborts
	// slots are the slots of the queued commands' keys, as admit computed
	// them to route each command (unsorted, repeats included), so that EXEC
	// does not extract and hash the keys again (transactionSlots).
	slots []uint16
	// firstSlot is the slot of the queue's first key, when slots is not
	// empty (routeTransaction).
	firstSlot uint16
	// exclusive: a queued command has no keys (other than PING, ECHO,
	// TIME), keys that cannot be extracted, or is a script: EXEC closes the
	// gate. rescan: slots are not exactly the queued keys' (shard channels,
	// keys that cannot be extracted): EXEC extracts the keys itself.
	exclusive, rescan bool
}

type queuedCommand struct {
	spec *command.Spec
	args [][]byte // aliases the connection's buffers, kept for EXEC: queue calls keepArgs (node/conn.go)
	// keyPos is the position of the command's one key, whose slot is
	// keySlot, or -1: EXEC hints it to the handler (command.Ctx.HintKeySlot).
	keyPos  int32
	keySlot uint16
}

// clientTx is a client's transaction and scripting state beyond the open
// MULTI (node/watch.go, node/script*.go).
type clientTx struct {
	watch clientWatch
	// active is set while the client runs a command (the gate waits for
	// it to clear); read by the goroutine closing the gate.
	active atomic.Bool
	// exclusive: this client holds the execution gate.
	exclusive bool
	// busHeld: this client holds the cluster bus (holdBus); atomic only
	// so that tests can watch it.
	busHeld atomic.Bool
	// capture collects the write effects of a transaction or script.
	capture *effectCapture
	// inScript marks the script client (commands called by a script).
	inScript bool
}

// serverTx is the server's transaction and scripting state.
type serverTx struct {
	watch     watchRegistry
	gate      execGate
	scripts   scriptEngine   // EVAL scripts and the Lua state (node/script.go)
	functions functionEngine // function libraries (node/cmd_function.go)
}

// transactionHandlers: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
func transactionHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"multi":   cmdMulti,
		"exec":    cmdExec,
		"discard": cmdDiscard,
		"watch":   cmdWatch,
		"unwatch": cmdUnwatch,
	}
}

// InTransaction reports whether the running command is executed by EXEC
// (blocking commands must not block then).
func (c *Client) InTransaction() bool { return c.inExec }

// runsInMulti reports whether the command executes at once while a
// transaction is open, instead of being queued.
func runsInMulti(spec *command.Spec) bool {
	switch spec.FullName() {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// flagTransaction marks the open transaction, if any, as failed: EXEC will
// answer EXECABORT (a command was rejected while queueing).
func (c *Client) flagTransaction() {
	if c.multi != nil {
		c.multi.dirty = true
	}
}

// queue adds a command to the open transaction.
func (c *Client) queue(spec *command.Spec, args [][]byte) {
	if spec.Flags&command.FlagNoMulti != 0 {
		c.Error("ERR Command not allowed inside a transaction")
		c.flagTransaction()
		return
	}
	if c.multi.dirty || c.tx.watch.dirty.Load() {
		// EXEC will not run it (EXECABORT, or a null reply for a touched
		// WATCH): Redis's queueMultiCommand keeps nothing more, so that
		// EXEC routes by what was queued before (routeTransaction).
		c.Status("QUEUED")
		return
	}
	qc := queuedCommand{spec: spec, args: args, keyPos: -1}
	if len(c.keyBuf) == 1 && len(c.slotBuf) == 1 {
		qc.keyPos, qc.keySlot = int32(c.keyBuf[0]), c.slotBuf[0]
	}
	c.multi.queue = append(c.multi.queue, qc)
	c.multi.noteSlots(spec, args, c.keyBuf, c.slotBuf)
	c.keepArgs()       // the queued arguments alias the connection's buffers while the transaction is open (node/conn.go)
	c.noteQueued(args) // multi-mem, client eviction (node/client_evict.go)
	c.multiLen.Store(int32(len(c.multi.queue)))
	c.Status("QUEUED")
}

// noteSlots records the slots of a command being queued, as admit computed
// them (commandSlots: keys are its key positions in args, sl their slots,
// empty when the keys could not be extracted), for transactionSlots and
// routeTransaction.
func (m *multiState) noteSlots(spec *command.Spec, args [][]byte, keys []int, sl []uint16) {
	switch {
	case spec.Flags&command.FlagPubsub != 0:
		m.rescan = true // sl holds shard channels' slots too
		return
	case len(sl) == 0 && len(keys) > 0:
		m.rescan, m.exclusive = true, true // keys that cannot be extracted
		return
	case len(sl) == 0 && !keylessInTransaction(spec) || needsGate(spec):
		m.exclusive = true
	}
	if len(sl) > 0 && len(m.slots) == 0 {
		m.firstSlot = sl[0]
		if len(sl) > 1 {
			m.firstSlot = slots.KeySlot(args[keys[0]]) // sl is sorted
		}
	}
	m.slots = append(m.slots, sl...)
}

// keylessInTransaction reports whether a command without keys may run in a
// slot-locked EXEC: it never touches the keyspace.
func keylessInTransaction(spec *command.Spec) bool {
	switch spec.FullName() {
	case "ping", "echo", "time":
		return true
	}
	return false
}

func (c *Client) discardTransaction() {
	if c.multi != nil && !c.inExec {
		clear(c.multi.queue) // the arguments are not kept alive by the array
	}
	c.multi = nil
	c.multiLen.Store(-1)
	c.mem.multiArgv.Store(0)
}

func cmdMulti(c *Client, args [][]byte) {
	if c.multi != nil {
		c.Error("ERR MULTI calls can not be nested")
		return
	}
	// One transaction per client at a time: its queue's array is reused
	// (its entries are cleared after EXEC or DISCARD).
	q, sl := c.multiBuf.queue[:0], c.multiBuf.slots[:0]
	if cap(q) > maxKeptQueue {
		q, sl = nil, nil // do not keep a giant transaction's arrays
	}
	c.multiBuf = multiState{queue: q, slots: sl}
	c.multi = &c.multiBuf
	c.multiLen.Store(0)
	c.OK()
}

func cmdDiscard(c *Client, args [][]byte) {
	if c.multi == nil {
		c.Error("ERR DISCARD without MULTI")
		return
	}
	c.discardTransaction()
	c.srv.tx.watch.unwatchAll(c)
	c.OK()
}

func cmdExec(c *Client, args [][]byte) {
	m := c.multi
	if m == nil {
		c.Error("ERR EXEC without MULTI")
		return
	}
	queue := m.queue
	defer clear(queue) // as discardTransaction: after EXEC ran them
	c.multi = nil      // the queue runs below; discardTransaction must not clear it
	c.discardTransaction()
	// Redis routes EXEC (processCommand's cluster redirection, by the
	// queued commands) before execCommand looks at the transaction's
	// errors: a redirect or CLUSTERDOWN comes before EXECABORT.
	if c.srv.cluster != nil && !c.routeTransaction(m) {
		c.srv.tx.watch.unwatchAll(c)
		return
	}
	if m.dirty {
		c.srv.tx.watch.unwatchAll(c)
		c.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if release := c.holdClusterBus(m.queue); release != nil { // node/cmd_cluster_migrate.go
		defer release()
	}
	defer c.srv.tx.watch.unwatchAll(c)
	db := c.SelectedDB()
	locked, ok := c.transactionSlots(m, db.ID())
	if !ok || c.tx.exclusive {
		c.execExclusive(m.queue)
		return
	}
	c.execLocked(m.queue, db, locked)
}

// transactionSlots returns the sorted slots of every key of the queue and
// of every watched key, or false when the transaction must run exclusive:
// a command without keys (other than a few that never touch the
// keyspace), keys that cannot be extracted, a script, or a watched key in
// another database. The queued commands' slots are those admit computed
// when it queued them (multiState.noteSlots).
func (c *Client) transactionSlots(m *multiState, dbID int) ([]uint16, bool) {
	if m.exclusive {
		return nil, false
	}
	locked := append(c.txSlotBuf[:0], m.slots...)
	if m.rescan {
		locked = locked[:0]
		for _, qc := range m.queue {
			keys, err := command.Keys(qc.spec, qc.args, c.keyBuf[:0])
			c.keyBuf = keys
			if err != nil || len(keys) == 0 && !keylessInTransaction(qc.spec) {
				return nil, false
			}
			for _, p := range keys {
				locked = append(locked, slots.KeySlot(qc.args[p]))
			}
		}
	}
	for _, wk := range c.tx.watch.keys {
		if wk.db != dbID {
			return nil, false
		}
		locked = append(locked, slots.KeySlot([]byte(wk.key)))
	}
	slices.Sort(locked)
	c.txSlotBuf = locked // reused by the next EXEC
	return slices.Compact(locked), true
}

// execLocked runs the transaction holding the slots of all its keys.
func (c *Client) execLocked(queue []queuedCommand, db *store.DB, locked []uint16) {
	db.LockSlots(locked)
	defer db.UnlockSlots(locked)
	if c.watchFailed(func(dbID int, slot uint16) bool {
		_, found := slices.BinarySearch(locked, slot)
		return dbID == db.ID() && found
	}) {
		c.NullArray()
		return
	}
	if !c.routeTransactionLocked(queue) { // node/cluster_route.go
		return
	}
	// Handlers that must re-take locks (MOVE, COPY ... DB) release and
	// re-acquire exactly c.slotBuf: make it the transaction's set.
	saved := c.slotBuf
	c.slotBuf = locked
	defer func() { c.slotBuf = saved }()
	capture := c.startCapture()
	c.Array(len(queue))
	c.inExec = true
	at := time.Since(c.srv.start)
	for _, qc := range queue {
		at = c.execQueued(qc, db, at)
	}
	c.publishStats(&c.execStats)
	c.inExec = false
	c.errored = false // a queued command's error is its own failed call, not EXEC's (as Redis)
	c.finishCapture(capture)
}

// execExclusive runs the transaction with the execution gate closed; each
// command locks its own slots.
func (c *Client) execExclusive(queue []queuedCommand) {
	release := c.closeGate()
	defer release()
	if c.watchFailed(nil) {
		c.NullArray()
		return
	}
	capture := c.startCapture()
	c.Array(len(queue))
	c.inExec = true
	for _, qc := range queue {
		c.execUnlocked(qc)
	}
	c.publishStats(&c.execStats)
	c.inExec = false
	c.errored = false // as in execLocked
	c.finishCapture(capture)
}

// execUnlocked runs one command the way the dispatcher does — its slots
// locked around the handler — for a client that holds the gate.
func (c *Client) execUnlocked(qc queuedCommand) {
	db := c.SelectedDB()
	saved := c.slotBuf
	_, sl := c.commandSlots(qc.spec, qc.args)
	sl = slices.Clone(sl)
	c.slotBuf = sl
	db.LockSlots(sl)
	c.execQueued(qc, db, time.Since(c.srv.start))
	db.UnlockSlots(sl)
	c.slotBuf = saved
}

// execQueued runs one queued command inside EXEC on db and counts it in
// commandstats like a command run on its own. Clients blocked on keys the
// transaction makes ready are served after EXEC, by the dispatcher. start
// is the command's start on the server's clock (the end of the one before
// it, as in a pipelined batch: one clock read per command); it returns its
// end.
func (c *Client) execQueued(qc queuedCommand, db *store.DB, start time.Duration) (end time.Duration) {
	if !c.aclAllowsQueued(qc.spec, qc.args) { // node/acl.go
		return start
	}
	c.SetDB(db)
	acc := c.execStatsFor(qc.spec) // before it runs, as the dispatcher's statsFor
	c.errored = false
	if qc.keyPos >= 0 {
		c.HintKeySlot(qc.args[qc.keyPos], qc.keySlot) // hashed once, when it was queued
	}
	c.callHandler(qc.spec, qc.args)
	// Past the output limit the client is closed and the rest of EXEC's
	// reply is dropped as it is built; the transaction still runs to its
	// end, as in Redis.
	c.replyOverLimit()
	c.propagateEffects(qc.spec, qc.args)
	c.ClearKeySlotHint()
	end = time.Since(c.srv.start)
	dur := end - start
	acc.calls++
	acc.usec += int64(dur / time.Microsecond)
	acc.observe(dur)
	if c.errored {
		acc.failed++
	}
	c.srv.slowlog.maybeRecord(c, qc.spec, qc.args, c.batchAt, start-c.batchStart, dur) // as Redis's call() does for each
	c.SetDB(nil)
	return end
}

// execStatsFor is statsFor for the commands EXEC runs, in their own
// accumulator (the client's holds EXEC's): a run of one command, the three
// SETs of a transaction, reaches the shared counters in one go, when
// another command runs or EXEC ends (publishStats), before its reply is
// sent. The commands EXEC runs count as calls, not as commands processed
// (they were counted when queued).
func (c *Client) execStatsFor(spec *command.Spec) *cmdStatAcc {
	a := &c.execStats
	if a.spec != spec || !accumulates(spec) {
		c.publishStats(a)
		a.spec = spec
	}
	return a
}

// needsGate reports whether a command closes the execution gate itself
// (scripts): inside EXEC it makes the transaction exclusive.
func needsGate(spec *command.Spec) bool {
	switch spec.FullName() {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// ---------------------------------------------------------------- effects

// effectCapture collects the effects of a transaction or a script, to be
// propagated as one unit.
type effectCapture struct {
	db    int // the database of the first effect
	cur   int // the database the last effect applied to
	cmds  [][][]byte
	count int // effects, not counting the SELECTs inserted
}

// startCapture starts collecting the client's effects, unless nobody
// consumes the feed or a capture is already open (EXEC of a script...).
func (c *Client) startCapture() *effectCapture {
	if c.tx.capture != nil || c.srv.feeds.list.Load() == nil {
		return nil
	}
	c.tx.capture = &effectCapture{db: -1}
	return c.tx.capture
}

// add records the effects of one command against database db. The
// arguments are copied: the handler's buffers are reused after it returns.
func (ec *effectCapture) add(db int, cmds [][][]byte) {
	if ec.db < 0 {
		ec.db, ec.cur = db, db
	}
	if db != ec.cur {
		ec.cmds = append(ec.cmds, [][]byte{[]byte("SELECT"), []byte(strconv.Itoa(db))})
		ec.cur = db
	}
	for _, cmd := range cmds {
		cp := make([][]byte, len(cmd))
		for i, a := range cmd {
			cp[i] = slices.Clone(a)
		}
		ec.cmds = append(ec.cmds, cp)
		ec.count++
	}
}

// finishCapture ends the capture started by startCapture and sends what it
// collected to the feed: as is when it is one command, wrapped in MULTI /
// EXEC otherwise. A transaction that changed databases leaves the stream in
// the last one, as Redis's does: the feeds follow the SELECTs inside
// (resp.SelectedAfter), and the next command's SELECT comes when needed.
func (c *Client) finishCapture(ec *effectCapture) {
	if ec == nil {
		return
	}
	c.tx.capture = nil
	if ec.count == 0 {
		return
	}
	if ec.count == 1 && len(ec.cmds) == 1 {
		c.propagate(ec.db, ec.cmds)
		return
	}
	out := make([][][]byte, 0, len(ec.cmds)+3)
	out = append(out, [][]byte{[]byte("MULTI")})
	out = append(out, ec.cmds...)
	out = append(out, [][]byte{[]byte("EXEC")})
	c.propagate(ec.db, out)
}

// emitEffects sends one command's effects to the feed, or to the open
// capture (called by propagateEffects).
func (c *Client) emitEffects(db int, cmds [][][]byte) {
	if c.tx.capture != nil {
		c.tx.capture.add(db, cmds)
		return
	}
	c.propagate(db, cmds)
}

// ---------------------------------------------------------------- the gate

// execGate lets one client at a time run with every other client stopped.
type execGate struct {
	closed atomic.Bool // read by every command (hot path)

	excl    sync.Mutex // held by the owner for as long as it owns the gate
	mu      sync.Mutex
	owner   *Client
	busy    bool          // the owner is a script past busy-reply-threshold
	busyRun *scriptRun    // a script under its keys' locks past it (node/script_locked.go)
	busyEvl bool          // ... run by EVAL (else a function)
	changed chan struct{} // closed when the gate opens or turns busy

	snapshot []*Client // the owner's scratch list of clients to wait for
}

// enterRun marks c active before it runs a command, waiting while the gate
// is closed. It returns false, having written -BUSY, when the gate is held
// by a script that has run too long and the command is not allowed then.
func (c *Client) enterRun(spec *command.Spec) bool {
	if c.isMasterLink() {
		// A replica's master stream is never refused -BUSY: it waits for
		// the script, as Redis stops reading its master while busy (the
		// command would be lost and the data diverge).
		c.enterRunWaiting()
		return true
	}
	g := &c.srv.tx.gate
	for {
		c.tx.active.Store(true)
		if !g.closed.Load() {
			return true
		}
		c.tx.active.Store(false)
		if c.tx.exclusive {
			c.tx.active.Store(true)
			return true
		}
		switch g.wait(spec) {
		case gateOpen:
		case gateBusyAllowed:
			c.tx.active.Store(true)
			return true
		case gateBusy:
			c.rejectBusy(g, spec)
			return false
		}
	}
}

// enterRunWaiting marks c active, waiting while the gate is closed even by
// a busy script: it finishes a command already answered (serving the
// clients it made ready), which must not interleave with a script either.
func (c *Client) enterRunWaiting() {
	g := &c.srv.tx.gate
	for {
		c.tx.active.Store(true)
		if !g.closed.Load() || c.tx.exclusive {
			return
		}
		g.mu.Lock()
		ch := g.changed
		open := g.owner == nil // else a busy script runs on its own slots
		g.mu.Unlock()
		if open {
			return
		}
		c.tx.active.Store(false)
		<-ch
	}
}

// leaveRun clears c's active mark.
func (c *Client) leaveRun() { c.tx.active.Store(false) }

// parkedWhile runs wait with c shown as blocked (INFO blocked_clients,
// CLIENT LIST's b flag) and not counted as running a command, as Redis
// blocks a client in SHUTDOWN: whoever closes the gate meanwhile (the
// instant an AOF rewrite starts, an exclusive EXEC) does not wait for it,
// so what the wait itself needs, a replica's REPLCONF ACK, is not held up
// behind that gate until shutdown-timeout. c then waits for the gate as a
// command about to start does. The command holds no slot locks (SHUTDOWN
// is NO_MULTI and NOSCRIPT, and has no keys).
func (c *Client) parkedWhile(wait func()) {
	c.blocked.Store(true)
	defer c.blocked.Store(false)
	if c.tx.exclusive {
		wait()
		return
	}
	c.leaveRun()
	defer c.enterRunWaiting()
	wait()
}

// busyRejects reports whether a command must be refused because a script
// is busy (and writes -BUSY): the check Redis makes before queueing a
// command in MULTI, too.
func (c *Client) busyRejects(spec *command.Spec) bool {
	g := &c.srv.tx.gate
	if !g.closed.Load() || c.tx.exclusive || spec.Flags&command.FlagAllowBusy != 0 || c.isMasterLink() {
		return false
	}
	g.mu.Lock()
	busy := g.busy && g.owner != c || g.busyRun != nil && g.busyRun.caller != c
	g.mu.Unlock()
	if busy {
		c.rejectBusy(g, spec)
	}
	return busy
}

func (c *Client) rejectBusy(g *execGate, spec *command.Spec) {
	g.mu.Lock()
	evl := g.busyEvl
	g.mu.Unlock()
	c.rejectCommand(spec, busyScriptError(evl))
}

// busyScriptError is Redis's -BUSY refusal while a script runs past
// busy-reply-threshold: it names the command that can kill the script,
// SCRIPT KILL for one run by EVAL, FUNCTION KILL for a function.
func busyScriptError(eval bool) string {
	if eval {
		return "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	}
	return "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
}

// rejectCommand answers a command refused before it runs. A refused EXEC
// ends the transaction and wraps the reason, as Redis's execCommandAbort.
func (c *Client) rejectCommand(spec *command.Spec, msg string) {
	if spec != nil && spec.FullName() == "exec" && c.multi != nil {
		c.discardTransaction()
		c.srv.tx.watch.unwatchAll(c)
		msg = "EXECABORT Transaction discarded because of: " + msg
	}
	c.Error(msg)
}

type gateWait uint8

const (
	gateOpen gateWait = iota
	gateBusy
	gateBusyAllowed
)

// wait blocks until the gate opens, or answers at once when its owner is
// a busy script.
func (g *execGate) wait(spec *command.Spec) gateWait {
	for {
		g.mu.Lock()
		if g.owner == nil && g.busyRun == nil {
			g.mu.Unlock()
			return gateOpen
		}
		if g.busy || g.busyRun != nil {
			g.mu.Unlock()
			if spec != nil && spec.Flags&command.FlagAllowBusy != 0 {
				return gateBusyAllowed
			}
			return gateBusy
		}
		ch := g.changed
		g.mu.Unlock()
		<-ch
	}
}

// closeGate makes c the only client running commands; the returned
// function opens the gate again. Re-entrant for the owner (a script run
// by an exclusive EXEC).
func (c *Client) closeGate() (release func()) {
	if c.tx.exclusive {
		return func() {}
	}
	wasActive := c.tx.active.Load()
	c.tx.active.Store(false)
	g := &c.srv.tx.gate
	// Owners queue on excl: one waiter is woken per release (a broadcast
	// would wake every queued script to find the gate taken again).
	g.excl.Lock()
	g.mu.Lock()
	g.owner = c
	g.busy = false
	g.changed = make(chan struct{})
	g.closed.Store(true)
	g.mu.Unlock()
	c.tx.exclusive = true
	// Wait for the commands already running elsewhere to finish. They
	// hold at most slot locks, which they release without waiting for us.
	// (The snapshot buffer belongs to the gate's owner.)
	s := c.srv
	s.mu.Lock()
	others := g.snapshot[:0]
	for _, cl := range s.clients {
		others = append(others, cl)
	}
	s.mu.Unlock()
	g.snapshot = others
	for i, other := range others {
		others[i] = nil // do not keep clients alive through the buffer
		if other == c {
			continue
		}
		for i := 0; other.tx.active.Load(); i++ {
			if i < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
	return func() {
		c.tx.exclusive = false
		g.mu.Lock()
		g.owner = nil
		g.busy = false
		g.closed.Store(g.busyRun != nil)
		close(g.changed)
		g.mu.Unlock()
		g.excl.Unlock()
		c.tx.active.Store(wasActive)
	}
}

// busyState reports whether a script other than c's own run holds the
// gate past busy-reply-threshold, and whether EVAL runs it.
func (g *execGate) busyState(c *Client) (busy, eval bool) {
	if !g.closed.Load() {
		return false, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy && g.owner != c || g.busyRun != nil && g.busyRun.caller != c, g.busyEvl
}

// setBusy marks the gate's owner as a script running past the busy
// threshold: waiting clients are answered -BUSY.
func (g *execGate) setBusy(eval bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy || g.owner == nil {
		return
	}
	g.busy, g.busyEvl = true, eval
	close(g.changed)
	g.changed = make(chan struct{})
}
