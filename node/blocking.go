package node

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP; the sorted-set
// and stream variants plug into the same framework), Redis 7.0's blocked.c
// semantics on shoal's one-goroutine-per-connection model.
//
// 1. Blocking. A blocking command's handler runs like any other, under the
//    slot locks of its keys. When there is nothing to serve it calls
//    c.blockOn(blockSpec{...}) and returns without a reply. blockOn
//    registers the client as a waiter on each key (one FIFO queue per
//    (db, key)) while the handler still holds the locks, so no write can
//    slip between the emptiness check and the registration (no lost
//    wake-up).
// 2. Waiting. The dispatcher releases the slot locks, sees the pending
//    block and calls c.awaitUnblock(): the goroutine flushes the replies of
//    earlier commands of the same pipeline, then parks on the waiter's
//    outcome channel holding no lock. Meanwhile a helper goroutine reads
//    the socket, to notice a disconnection and to keep what the client
//    sends in the meantime (handed back to the RESP guard afterwards, as
//    Redis keeps accumulating the query buffer of a blocked client).
// 3. Waking. A write that may serve waiters (LPUSH, RPUSH, LMOVE's push,
//    ZADD...) calls c.signalKeyReady(key) from its handler: this only notes
//    the key (nothing when no client at all is blocked). After the writer's
//    handler returned and its locks were released, the dispatcher calls
//    c.serveReadyKeys(), before the writer's reply is sent and before its
//    next command runs: for each ready key, the waiters are tried in the
//    order they blocked; each one under the slot locks of the key and of
//    its extra keys (BLMOVE's destination), taken in ascending slot order.
//    The waiter's serve callback pops what it needs and writes its reply
//    into the WAITER's reply buffer: the waiter's goroutine is parked, and
//    the hand-over through the outcome channel orders the accesses; only the
//    waiter's goroutine then writes to its connection. Serving may make
//    more keys ready (BLMOVE pushes): they are served in the same round.
// 4. Timeouts (a timer per waiter), CLIENT UNBLOCK and disconnection claim
//    the waiter the same way; whoever claims it first under the registry
//    lock decides its outcome, exactly once.
//
// Lock order: slot locks (ascending) before blockRegistry.mu; nothing takes
// a slot lock while holding blockRegistry.mu.
//
// Arguments: a waiter's serve callback may read the blocked command's
// arguments, which alias its connection's read buffers (node/conn.go). That
// is safe only because the blocked client waits INSIDE its command: its
// connection loop reads no further batch, so the buffers are not reused,
// until the wait is over. A design where the loop went on reading while a
// client is blocked would have to copy them first.

import (
	"cmp"
	"container/list"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// The blocking handler's side (command.BlockSpec, BlockServe, ServeResult)
// is in package command.
type (
	blockSpec   = command.BlockSpec
	blockServe  = command.BlockServe
	serveResult = command.ServeResult
)

const (
	ServeSkipped      = command.ServeSkipped
	ServeDone         = command.ServeDone
	ServeKeyExhausted = command.ServeKeyExhausted
)

// readyQueue is the round of keys being served: keys[:next] have been taken
// up already, so a key made ready again (by a BLMOVE push into a key served
// earlier in the round) is queued once more.
type readyQueue struct {
	keys []blockKey
	next int
}

func (q *readyQueue) add(bk blockKey) {
	if !slices.Contains(q.keys[q.next:], bk) {
		q.keys = append(q.keys, bk)
	}
}

// blockOutcome is how a wait ended.
type blockOutcome uint8

const (
	outcomeServed blockOutcome = iota + 1
	outcomeTimeout
	outcomeUnblockedTimeout // CLIENT UNBLOCK id [TIMEOUT]
	outcomeUnblockedError   // CLIENT UNBLOCK id ERROR
	outcomeDisconnected     // the socket closed, or the query buffer overflowed
	outcomeRoleChanged      // this node became a replica: -UNBLOCKED, then the connection closes
)

// blockKey identifies a key by database number, as Redis's per-db
// blocking_keys: after SWAPDB the waiters follow the number.
type blockKey struct {
	db  int
	key string
}

// blockWaiter is one blocked client.
type blockWaiter struct {
	c     *Client
	seq   uint64 // registration order
	db    int
	keys  []string
	elems []*list.Element // the waiter's element in each key's queue
	spec  blockSpec
	timer *time.Timer // owned by the waiter's goroutine

	// Guarded by blockRegistry.mu.
	done bool
	// reply and replyErr are what serving produced: the reply bytes and
	// whether they are an error (for the command's failed_calls). Written
	// before outcomeServed is sent.
	reply    []byte
	replyErr bool
	resp     int // the client's protocol when it blocked
	// outcome receives the result exactly once (buffered).
	outcome chan blockOutcome
}

// blockRegistry is a server's set of waiters.
type blockRegistry struct {
	mu     sync.Mutex
	queues map[blockKey]*list.List // of *blockWaiter, oldest first
	byID   map[int64]*blockWaiter  // by client id
	seq    uint64
	// waiting mirrors len(byID) for lock-free readers: signalKeyReady's
	// fast path and INFO.
	waiting atomic.Int64
}

// clientBlocking is the per-client blocking state, owned by the client's
// goroutine (the Client's bs field).
type clientBlocking struct {
	reg     *blockRegistry // the server's registry, cached
	pending *blockWaiter   // set by blockOn, consumed by awaitUnblock
	ready   []blockKey     // keys the running command made ready
	// denyBlocking makes blocking commands answer at once, as if timed out
	// (Redis's CLIENT_DENY_BLOCKING): scripts set it while they run
	// commands. EXEC needs nothing: mayBlock checks c.inExec.
	denyBlocking bool
}

// blocking returns the server's waiter registry (created in New).
func (s *Server) blocking() *blockRegistry { return s.blockReg }

// newBlockRegistry returns an empty waiter registry.
func newBlockRegistry() *blockRegistry {
	return &blockRegistry{queues: map[blockKey]*list.List{}, byID: map[int64]*blockWaiter{}}
}

// blockReg returns the registry, cached in the client.
func (c *Client) blockReg() *blockRegistry {
	if c.bs.reg == nil {
		c.bs.reg = c.srv.blocking()
	}
	return c.bs.reg
}

// blockedClients is the number of clients blocked on keys (INFO
// blocked_clients).
func (s *Server) blockedClients() int { return int(s.blocking().waiting.Load()) }

// mayBlock reports whether the running command may block: not inside
// MULTI/EXEC or a script (Redis's CLIENT_DENY_BLOCKING).
func (c *Client) mayBlock() bool {
	return !c.bs.denyBlocking && c.multiLen.Load() < 0 && !c.inExec
}

// blockOn blocks the client on spec.keys. Call it from a handler, with the
// slot locks of the keys held, after finding nothing to serve. If the client
// may not block, the timeout reply is written at once.
func (c *Client) blockOn(spec blockSpec) {
	if !c.mayBlock() {
		if spec.OnDenied != nil {
			spec.OnDenied(&c.Ctx)
		} else {
			spec.OnTimeout(&c.Ctx)
		}
		return
	}
	reg := c.blockReg()
	w := &blockWaiter{c: c, db: c.DB().ID(), spec: spec, resp: c.Proto, outcome: make(chan blockOutcome, 1)}
	// The arguments alias the connection's read buffer: keep copies.
	w.spec.Keys = nil
	for _, k := range spec.Keys {
		if !slices.Contains(w.keys, string(k)) {
			w.keys = append(w.keys, string(k))
		}
	}
	w.spec.ExtraKeys = make([][]byte, len(spec.ExtraKeys))
	for i, k := range spec.ExtraKeys {
		w.spec.ExtraKeys[i] = slices.Clone(k)
	}
	reg.mu.Lock()
	reg.seq++
	w.seq = reg.seq
	for _, k := range w.keys {
		bk := blockKey{db: w.db, key: k}
		q := reg.queues[bk]
		if q == nil {
			q = list.New()
			reg.queues[bk] = q
		}
		w.elems = append(w.elems, q.PushBack(w))
	}
	if old := reg.byID[c.id]; old != nil {
		// Cannot happen (a client blocks once at a time); keep the
		// registry consistent anyway.
		reg.finishLocked(old, outcomeDisconnected)
	}
	reg.byID[c.id] = w
	reg.waiting.Add(1)
	c.blocked.Store(true)
	reg.mu.Unlock()
	if spec.Timeout > 0 {
		w.timer = time.AfterFunc(spec.Timeout, func() { reg.finish(w, outcomeTimeout) })
	}
	c.bs.pending = w
}

// finish ends w's wait with outcome unless it already ended; it reports
// whether it did.
func (reg *blockRegistry) finish(w *blockWaiter, outcome blockOutcome) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.finishLocked(w, outcome)
}

func (reg *blockRegistry) finishLocked(w *blockWaiter, outcome blockOutcome) bool {
	if w.done {
		return false
	}
	w.done = true
	for i, k := range w.keys {
		bk := blockKey{db: w.db, key: k}
		if q := reg.queues[bk]; q != nil {
			q.Remove(w.elems[i])
			if q.Len() == 0 {
				delete(reg.queues, bk)
			}
		}
	}
	if reg.byID[w.c.id] == w {
		delete(reg.byID, w.c.id)
	}
	reg.waiting.Add(-1)
	w.c.blocked.Store(false)
	w.outcome <- outcome
	return true
}

// unblockClient implements CLIENT UNBLOCK: it ends the wait of the client
// with the given id, which then answers as on a timeout or, withError, with
// -UNBLOCKED. It reports whether that client was blocked.
func (s *Server) unblockClient(id int64, withError bool) bool {
	reg := s.blocking()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	w := reg.byID[id]
	if w == nil {
		return false
	}
	outcome := outcomeUnblockedTimeout
	if withError {
		outcome = outcomeUnblockedError
	}
	return reg.finishLocked(w, outcome)
}

// unblockAllRoleChanged ends every wait (blocked commands and WAIT) when
// this node becomes a replica, as Redis's disconnectAllBlockedClients: the
// client is answered -UNBLOCKED and disconnected. Otherwise a list it waits
// on would be served by its new master's push, and its pop would exist on
// this node only. It returns how many waits it ended.
func (reg *blockRegistry) unblockAllRoleChanged() int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	n := 0
	for _, w := range reg.byID {
		if reg.finishLocked(w, outcomeRoleChanged) {
			n++
		}
	}
	return n
}

// awaitUnblock parks the goroutine until the pending block ends, then
// writes the reply: what serving produced, or the reply to a timeout or an
// unblock. It returns the time spent waiting, which is not execution time.
// The dispatcher calls it after releasing the slot locks.
func (c *Client) awaitUnblock() time.Duration {
	w := c.bs.pending
	c.bs.pending = nil
	if w == nil {
		return 0
	}
	start := time.Now()
	if len(c.Out) > 0 {
		// The handler replied after blocking (it panicked and the
		// dispatcher answered the error): do not wait.
		if !c.blockReg().finish(w, outcomeDisconnected) {
			// Served meanwhile: the error already sent stands, the
			// served reply is dropped.
			<-w.outcome
		}
		if w.timer != nil {
			w.timer.Stop()
		}
		return time.Since(start)
	}
	_ = c.flushReplies() // earlier replies of the pipeline go now, as in Redis
	stopWatch := c.watchWhileBlocked(w)
	outcome := <-w.outcome
	if w.timer != nil {
		w.timer.Stop()
	}
	stopWatch()
	switch outcome {
	case outcomeServed:
		c.Out = append(c.Out, w.reply...)
		if w.replyErr {
			c.errored = true
		}
	case outcomeTimeout, outcomeUnblockedTimeout:
		w.spec.OnTimeout(&c.Ctx)
	case outcomeUnblockedError:
		c.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
	case outcomeRoleChanged:
		c.Error("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")
		c.closeAfter = true
	case outcomeDisconnected:
		c.Out = c.Out[:0]
		c.closeAfter = true
	}
	return time.Since(start)
}

// signalKeyReady notes that the running command made key (in its database)
// able to serve blocked clients: it pushed to a list, added to a sorted
// set... Call it from the handler; the waiters are served when the command
// is over. It costs one atomic load when no client is blocked.
func (c *Client) signalKeyReady(key []byte) {
	if c.blockReg().waiting.Load() == 0 {
		return
	}
	addReadyKey(&c.bs.ready, blockKey{db: c.DB().ID(), key: string(key)})
}

// signalKeyReadyIn is signalKeyReady for a key the command wrote in another
// database (MOVE, COPY ... DB).
func (c *Client) signalKeyReadyIn(db *store.DB, key []byte) {
	if c.blockReg().waiting.Load() == 0 {
		return
	}
	addReadyKey(&c.bs.ready, blockKey{db: db.ID(), key: string(key)})
}

// signalDBsSwapped makes every key with waiters in databases a and b ready
// (SWAPDB: the data under a number changed, as Redis's
// scanDatabaseForReadyKeys after swapdb).
func (c *Client) signalDBsSwapped(a, b int) {
	reg := c.blockReg()
	if reg.waiting.Load() == 0 {
		return
	}
	type waited struct {
		bk     blockKey
		oldest uint64
	}
	var keys []waited
	reg.mu.Lock()
	for bk, q := range reg.queues {
		if (bk.db == a || bk.db == b) && q.Len() > 0 {
			keys = append(keys, waited{bk, q.Front().Value.(*blockWaiter).seq})
		}
	}
	reg.mu.Unlock()
	// Serve the keys in the order their first waiter blocked.
	slices.SortFunc(keys, func(x, y waited) int { return cmp.Compare(x.oldest, y.oldest) })
	for _, k := range keys {
		addReadyKey(&c.bs.ready, k.bk)
	}
}

func addReadyKey(ready *[]blockKey, bk blockKey) {
	if slices.Contains(*ready, bk) {
		return
	}
	*ready = append(*ready, bk)
}

// serveReadyKeys serves the clients blocked on the keys the command made
// ready. The dispatcher calls it after the command, holding no lock.
func (c *Client) serveReadyKeys() {
	keys := c.bs.ready
	c.bs.ready = nil
	c.bs.ready = c.blockReg().serveRound(c.srv, keys)[:0]
}

// serveRound serves the waiters of keys, and of the keys serving makes
// ready, in order; it returns the (grown) slice for reuse. Callers hold no
// slot lock.
func (reg *blockRegistry) serveRound(s *Server, keys []blockKey) []blockKey {
	q := readyQueue{keys: keys}
	for q.next < len(q.keys) { // serving may add keys (BLMOVE pushes)
		bk := q.keys[q.next]
		q.next++
		reg.serveKeyIn(s, bk, &q)
	}
	return q.keys
}

// serveKey serves the waiters of one key; keys the serving makes ready are
// appended to *ready. (serveRound does a whole round.)
func (reg *blockRegistry) serveKey(s *Server, bk blockKey, ready *[]blockKey) {
	q := readyQueue{keys: *ready, next: len(*ready)}
	reg.serveKeyIn(s, bk, &q)
	*ready = q.keys
}

// serveKeyIn tries the waiters of one key in the order they blocked.
func (reg *blockRegistry) serveKeyIn(s *Server, bk blockKey, ready *readyQueue) {
	if bk.db < 0 || bk.db >= s.ks.NumDBs() {
		return
	}
	db := s.ks.DB(bk.db)
	key := []byte(bk.key)
	var last uint64
	var slotBuf []uint16
	for {
		reg.mu.Lock()
		w := reg.nextWaiter(bk, last)
		reg.mu.Unlock()
		if w == nil {
			return
		}
		last = w.seq
		slotBuf = append(slotBuf[:0], slots.KeySlot(key))
		for _, k := range w.spec.ExtraKeys {
			slotBuf = append(slotBuf, slots.KeySlot(k))
		}
		slices.Sort(slotBuf)
		slotBuf = slices.Compact(slotBuf)
		db.LockSlots(slotBuf)
		reg.mu.Lock()
		res := ServeSkipped
		if !w.done {
			res = reg.serveOne(s, w, db, key, ready)
			if res == ServeDone {
				reg.finishLocked(w, outcomeServed)
			}
		}
		reg.mu.Unlock()
		db.UnlockSlots(slotBuf)
		if res == ServeKeyExhausted {
			return
		}
	}
}

// nextWaiter returns the oldest live waiter on bk registered after seq.
func (reg *blockRegistry) nextWaiter(bk blockKey, seq uint64) *blockWaiter {
	q := reg.queues[bk]
	if q == nil {
		return nil
	}
	for e := q.Front(); e != nil; e = e.Next() {
		if w := e.Value.(*blockWaiter); w.seq > seq && !w.done {
			return w
		}
	}
	return nil
}

// serveOne runs w's serve callback with a stand-in Client collecting the
// reply. A panic in the callback is logged and answered with an error, so
// that the locks held around it are released.
func (reg *blockRegistry) serveOne(s *Server, w *blockWaiter, db *store.DB, key []byte, ready *readyQueue) (res serveResult) {
	rc := s.bindClient(&Client{srv: s, id: w.c.id})
	rc.Proto = w.resp
	defer func() {
		if r := recover(); r != nil {
			s.stats.panics.Add(1)
			s.log.Error("panic while serving a blocked client", zap.Any("panic", r), zap.Stack("stack"))
			rc.Out = rc.Out[:0]
			rc.Error("ERR internal error serving the blocked command")
			res = ServeDone
		}
		if res == ServeDone {
			w.reply, w.replyErr = rc.Out, rc.errored
		}
	}()
	sc := blockServe{C: &rc.Ctx, DB: db, Key: key,
		MarkReady: func(k []byte) { ready.add(blockKey{db: db.ID(), key: string(k)}) }}
	res = w.spec.Serve(&sc)
	if fx := rc.Effects(); res == ServeDone && fx.Replaced && !rc.errored {
		// The pop that served the client enters the effect feed here,
		// under the slot locks serveKeyIn holds (node/replication_effects.go).
		s.propagate(db.ID(), fx.Cmds)
		s.servedEffectsApplied(db, fx.Cmds, w.c) // WATCH, used_memory, tracking (node/effects.go)
		if !fx.DirtySet {
			s.dirty.add(rc.id, 1) // Redis's server.dirty (node/persistence.go)
		}
	}
	return res
}

// ---------------------------------------------------------------- timeouts

// ---------------------------------------------------------------- the connection while blocked

// watchWhileBlocked starts a goroutine that reads the client's socket while
// its goroutine waits: a read error means the client went away (its wait
// ends with outcomeDisconnected); bytes read are kept and handed back to
// the RESP guard when the wait ends. The returned function stops the
// reader and must be called before the guard is used again.
func (c *Client) watchWhileBlocked(w *blockWaiter) func() {
	g := c.guard
	if g == nil {
		return func() {}
	}
	// A blocked client is exempt from the idle timeout.
	g.ClearReadDeadline()
	reg := c.blockReg()
	limit := c.srv.limits.QueryBufLimit.Load()
	unparsed := g.Unparsed() // the guard's input does not change during the wait
	var stopping atomic.Bool
	var kept []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [4096]byte
		for !stopping.Load() {
			n, err := g.Conn.Read(buf[:])
			kept = append(kept, buf[:n]...)
			if err != nil {
				if !stopping.Load() {
					reg.finish(w, outcomeDisconnected)
				}
				return
			}
			if limit > 0 && int64(unparsed+len(kept)) > limit {
				c.srv.log.Warn("Closing client that reached max query buffer length", zap.Int64("client", c.id))
				reg.finish(w, outcomeDisconnected)
				return
			}
		}
	}()
	return func() {
		stopping.Store(true)
		// A deadline in the past makes a pending Read return at once.
		_ = g.Conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = g.Conn.SetReadDeadline(time.Time{})
		g.InjectInput(kept)
	}
}

// redirectWaiters ends, with an error reply, the wait of every blocked
// client for which redirect returns a text (cluster routing: the slot of
// its keys left this node, or the cluster went down). redirect runs with
// the registry lock held and must not take slot locks.
func (reg *blockRegistry) redirectWaiters(redirect func(w *blockWaiter) string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, w := range reg.byID {
		if msg := redirect(w); msg != "" {
			w.reply = append(w.reply[:0], '-')
			w.reply = append(w.reply, msg...)
			w.reply = append(w.reply, '\r', '\n')
			w.replyErr = true
			reg.finishLocked(w, outcomeServed)
		}
	}
}
