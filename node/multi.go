package node

import (
	"slices"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// MULTI / EXEC / DISCARD.
//
// While a client is in MULTI the dispatcher queues every command except
// EXEC, DISCARD, MULTI, WATCH, QUIT and RESET and answers +QUEUED; a command
// rejected while queueing (unknown, wrong arity, NOAUTH, ...) marks the
// transaction so that EXEC answers EXECABORT, as Redis does.
//
// EXEC runs the queue as runs of consecutive commands that have keys: the
// slots of a run's keys are locked together, in ascending order, for the
// whole run, so the run is atomic with respect to every other client. A
// command without keys (SELECT, FLUSHALL, KEYS, PING...) runs between runs
// with no transaction lock held, because the keyspace-wide commands lock
// slot by slot themselves and Go's mutexes are not re-entrant. The
// scripting-and-transactions issue makes such transactions atomic too.

// multiState is a client's open transaction.
type multiState struct {
	queue []queuedCommand
	dirty bool // a command was rejected while queueing: EXEC aborts
}

type queuedCommand struct {
	spec *CommandSpec
	args [][]byte // redcon gives every command its own copy of the request
}

// transactionHandlers: MULTI, EXEC, DISCARD.
func transactionHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"multi":   cmdMulti,
		"exec":    cmdExec,
		"discard": cmdDiscard,
	}
}

// InTransaction reports whether the running command is executed by EXEC
// (blocking commands must not block then).
func (c *Client) InTransaction() bool { return c.inExec }

// runsInMulti reports whether the command executes at once while a
// transaction is open, instead of being queued.
func (spec *CommandSpec) runsInMulti() bool {
	switch spec.fullName {
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
func (c *Client) queue(spec *CommandSpec, args [][]byte) {
	if spec.Flags&FlagNoMulti != 0 {
		c.Error("ERR Command not allowed inside a transaction")
		c.flagTransaction()
		return
	}
	c.multi.queue = append(c.multi.queue, queuedCommand{spec: spec, args: args})
	c.multiLen.Store(int32(len(c.multi.queue)))
	c.Status("QUEUED")
}

func (c *Client) discardTransaction() {
	c.multi = nil
	c.multiLen.Store(-1)
}

func cmdMulti(c *Client, args [][]byte) {
	if c.multi != nil {
		c.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = &multiState{}
	c.multiLen.Store(0)
	c.OK()
}

func cmdDiscard(c *Client, args [][]byte) {
	if c.multi == nil {
		c.Error("ERR DISCARD without MULTI")
		return
	}
	c.discardTransaction()
	c.OK()
}

func cmdExec(c *Client, args [][]byte) {
	m := c.multi
	if m == nil {
		c.Error("ERR EXEC without MULTI")
		return
	}
	c.discardTransaction()
	if m.dirty {
		c.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if c.srv.cluster != nil && !c.routeTransaction(m.queue) {
		return
	}
	c.Array(len(m.queue))
	c.inExec = true
	defer func() { c.inExec = false }()
	q := m.queue
	for len(q) > 0 {
		if !c.hasKeys(q[0]) {
			c.execQueued(q[0], c.srv.ks.DB(int(c.dbIndex.Load())))
			q = q[1:]
			continue
		}
		// A run of keyed commands, all in the database selected now.
		n := 1
		for n < len(q) && c.hasKeys(q[n]) {
			n++
		}
		run := q[:n]
		q = q[n:]
		db := c.srv.ks.DB(int(c.dbIndex.Load()))
		var locked []uint16
		for _, qc := range run {
			keys, _ := commandKeys(qc.spec, qc.args, nil)
			for _, p := range keys {
				locked = append(locked, slots.KeySlot(qc.args[p]))
			}
		}
		slices.Sort(locked)
		locked = slices.Compact(locked)
		c.runLocked(db, locked, run)
	}
}

// runLocked executes a run of keyed commands under their slots' locks.
func (c *Client) runLocked(db *store.DB, locked []uint16, run []queuedCommand) {
	db.LockSlots(locked)
	defer db.UnlockSlots(locked)
	// Handlers that must re-take locks (MOVE, COPY ... DB) release and
	// re-acquire exactly c.slotBuf: make it the run's set.
	saved := c.slotBuf
	c.slotBuf = locked
	defer func() { c.slotBuf = saved }()
	for _, qc := range run {
		c.execQueued(qc, db)
	}
}

// hasKeys reports whether a queued command names keys.
func (c *Client) hasKeys(qc queuedCommand) bool {
	keys, err := commandKeys(qc.spec, qc.args, c.keyBuf[:0])
	c.keyBuf = keys
	return err == nil && len(keys) > 0
}

// execQueued runs one queued command inside EXEC on db and counts it in
// commandstats like a command run on its own. Clients blocked on keys the
// transaction makes ready are served after EXEC, by the dispatcher.
func (c *Client) execQueued(qc queuedCommand, db *store.DB) {
	c.db = db
	start := time.Now()
	c.errored = false
	c.callHandler(qc.spec, qc.args)
	c.propagateEffects(qc.spec, qc.args)
	shard := &qc.spec.stats[c.id%statShards]
	shard.calls.Add(1)
	dur := time.Since(start)
	shard.usec.Add(int64(dur / time.Microsecond))
	shard.lat.observe(dur)
	if c.errored {
		shard.failed.Add(1)
	}
	c.db = nil
}
