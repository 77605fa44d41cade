package node

import (
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/slots"
)

// Pub/Sub (Redis 7.0's pubsub.c semantics).
//
// Delivery happens on the publisher's goroutine, never on the subscriber's:
// a subscriber's connection goroutine is usually parked in a socket read.
// Every client that ever subscribed gets a pushWriter, a mutex-protected
// output queue drained by one writer goroutine of its own. From then on the
// client's command replies go through the same queue (node/dispatch.go
// handle), so replies and pushed messages leave in the order they were
// queued. A publisher only appends to queues: a subscriber that does not
// read cannot block it; one whose queue passes client-output-buffer-limit
// pubsub is disconnected, as Redis does.
//
// Concurrency contract: pubsubRegistry.mu guards the registry maps AND
// every client's subscription sets (clientPubSub.channels/patterns/shard),
// because a slot leaving the node unsubscribes other clients. Lock order:
// registry.mu, then a pushWriter's mu, then (writer side) its wmu is never
// taken while holding mu.

// pubsubRegistry is the server's channel → subscribers tables.
type pubsubRegistry struct {
	mu       sync.RWMutex
	channels map[string][]*Client // subscription order, as Redis's lists
	patterns map[string][]*Client
	patOrder []glob.Pattern // patterns in creation order (publish matches in this order), compiled once
	shard    map[string][]*Client
}

func newPubsubRegistry() *pubsubRegistry {
	return &pubsubRegistry{
		channels: map[string][]*Client{},
		patterns: map[string][]*Client{},
		shard:    map[string][]*Client{},
	}
}

// pubsubKind tells the three subscription namespaces apart.
type pubsubKind uint8

const (
	kindChannel pubsubKind = iota
	kindPattern
	kindShard
)

// Reply words of the three kinds: subscribe, unsubscribe, message.
var pubsubWords = [3][3]string{
	kindChannel: {"subscribe", "unsubscribe", "message"},
	kindPattern: {"psubscribe", "punsubscribe", "pmessage"},
	kindShard:   {"ssubscribe", "sunsubscribe", "smessage"},
}

// orderedSet is a client's set of names in subscription order.
type orderedSet struct {
	idx   map[string]struct{}
	order []string
}

func (s *orderedSet) has(n string) bool { _, ok := s.idx[n]; return ok }
func (s *orderedSet) len() int          { return len(s.order) }

func (s *orderedSet) add(n string) bool {
	if s.has(n) {
		return false
	}
	if s.idx == nil {
		s.idx = map[string]struct{}{}
	}
	s.idx[n] = struct{}{}
	s.order = append(s.order, n)
	return true
}

func (s *orderedSet) remove(n string) bool {
	if !s.has(n) {
		return false
	}
	delete(s.idx, n)
	for i, x := range s.order {
		if x == n {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	return true
}

// clientSubscriptions is one client's subscriptions.
type clientSubscriptions struct {
	// Guarded by the registry's mu.
	sets [3]orderedSet
	// resp is the protocol messages are encoded in: the client's, copied
	// at every (un)subscription (publishers must not read Client.resp,
	// which HELLO and RESET write without a lock).
	resp int
	// Counts for other goroutines (CLIENT LIST sub=/psub=/ssub=, the
	// client class).
	counts [3]atomic.Int32
	// push is created by the client's goroutine on its first subscription
	// and kept for the connection's life; publishers read it under the
	// registry lock (the registration that makes them see the client
	// happens after the pointer is set).
	push *pushWriter
}

// subscribed reports whether the client has any subscription (Redis's
// CLIENT_PUBSUB flag).
func (c *Client) subscribed() bool {
	return c.ps.counts[0].Load()+c.ps.counts[1].Load()+c.ps.counts[2].Load() > 0
}

// subscriptionCount is the count a (un)subscribe reply carries: channels +
// patterns for the classic kinds, shard channels for the sharded one.
func (c *Client) subscriptionCount(k pubsubKind) int {
	if k == kindShard {
		return c.ps.sets[kindShard].len()
	}
	return c.ps.sets[kindChannel].len() + c.ps.sets[kindPattern].len()
}

func (r *pubsubRegistry) table(k pubsubKind) map[string][]*Client {
	switch k {
	case kindPattern:
		return r.patterns
	case kindShard:
		return r.shard
	}
	return r.channels
}

// addLocked registers c under name; false when it already was.
func (r *pubsubRegistry) addLocked(c *Client, k pubsubKind, name string) bool {
	if !c.ps.sets[k].add(name) {
		return false
	}
	t := r.table(k)
	subs, ok := t[name]
	if !ok && k == kindPattern {
		r.patOrder = append(r.patOrder, glob.Compile(name, false))
	}
	t[name] = append(subs, c)
	c.ps.counts[k].Add(1)
	return true
}

// removeLocked unregisters c from name; false when it was not registered.
func (r *pubsubRegistry) removeLocked(c *Client, k pubsubKind, name string) bool {
	if !c.ps.sets[k].remove(name) {
		return false
	}
	t := r.table(k)
	subs := t[name]
	for i, x := range subs {
		if x == c {
			subs = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) == 0 {
		delete(t, name)
		if k == kindPattern {
			for i := range r.patOrder {
				if r.patOrder[i].String() == name {
					r.patOrder = append(r.patOrder[:i], r.patOrder[i+1:]...)
					break
				}
			}
		}
	} else {
		t[name] = subs
	}
	c.ps.counts[k].Add(-1)
	return true
}

// appendPush writes a push header: *n in RESP2, >n in RESP3.
func appendPushHeader(b []byte, resp, n int) []byte {
	if resp == 3 {
		b = append(b, '>')
	} else {
		b = append(b, '*')
	}
	b = appendCount(b, n)
	return append(b, '\r', '\n')
}

// appendCount appends n >= 0 in decimal: the lengths and counts of a
// message's encoding (six per notification), mostly under 100, without
// strconv's general path.
func appendCount(b []byte, n int) []byte {
	switch {
	case n >= 0 && n < 10:
		return append(b, byte('0'+n))
	case n >= 10 && n < 100:
		return append(b, byte('0'+n/10), byte('0'+n%10))
	}
	return strconv.AppendInt(b, int64(n), 10)
}

func appendBulkBytes(b []byte, s []byte) []byte {
	b = append(b, '$')
	b = appendCount(b, len(s))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulkStr(b []byte, s string) []byte {
	b = append(b, '$')
	b = appendCount(b, len(s))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendSubscriptionReply writes a (un)subscribe confirmation; name nil
// is the null of an UNSUBSCRIBE with nothing to unsubscribe.
func appendSubscriptionReply(b []byte, resp int, word string, name *string, count int) []byte {
	b = appendPushHeader(b, resp, 3)
	b = appendBulkStr(b, word)
	switch {
	case name != nil:
		b = appendBulkStr(b, *name)
	case resp == 3:
		b = append(b, "_\r\n"...)
	default:
		b = append(b, "$-1\r\n"...)
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(count), 10)
	return append(b, '\r', '\n')
}

// subscribeCmd runs (P|S)SUBSCRIBE for names. The confirmations are
// queued while the registry lock is held: every message published after
// the registration follows them.
func (c *Client) subscribeCmd(k pubsubKind, names [][]byte) {
	r := c.srv.pubsub
	// Inside EXEC the confirmations belong to EXEC's array reply (c.out);
	// a message published before that reply is queued may precede it.
	direct := !c.inExec
	c.ensurePushWriter() // publishers find the writer of every subscriber
	r.mu.Lock()
	c.ps.resp = c.Proto
	b := c.confirmationBuffer(direct)
	for _, n := range names {
		name := string(n)
		r.addLocked(c, k, name)
		b = appendSubscriptionReply(b, c.Proto, pubsubWords[k][0], &name, c.subscriptionCount(k))
	}
	c.sendConfirmations(direct, b)
	r.mu.Unlock()
}

// confirmationBuffer is where (un)subscribe confirmations are appended: a
// new buffer for the push queue (direct), or the reply being built (inside
// EXEC, or for a client that has no push queue).
func (c *Client) confirmationBuffer(direct bool) []byte {
	if direct {
		return nil
	}
	return c.Out
}

// sendConfirmations hands confirmations built in confirmationBuffer(direct)
// to the push queue, or keeps them as the reply being built. Called with
// the registry lock held, so that they precede later messages.
func (c *Client) sendConfirmations(direct bool, b []byte) {
	if direct {
		c.ps.push.enqueue(b, c.srv)
	} else {
		c.Out = b
	}
}

// unsubscribeCmd runs (P|S)UNSUBSCRIBE: the named subscriptions, or all of
// the kind when names is empty.
func (c *Client) unsubscribeCmd(k pubsubKind, names [][]byte) {
	r := c.srv.pubsub
	direct := !c.inExec && c.ps.push != nil
	r.mu.Lock()
	c.ps.resp = c.Proto
	b := c.confirmationBuffer(direct)
	if len(names) == 0 {
		all := append([]string(nil), c.ps.sets[k].order...)
		for _, name := range all {
			r.removeLocked(c, k, name)
			b = appendSubscriptionReply(b, c.Proto, pubsubWords[k][1], &name, c.subscriptionCount(k))
		}
		if len(all) == 0 {
			b = appendSubscriptionReply(b, c.Proto, pubsubWords[k][1], nil, c.subscriptionCount(k))
		}
	} else {
		for _, n := range names {
			name := string(n)
			r.removeLocked(c, k, name)
			b = appendSubscriptionReply(b, c.Proto, pubsubWords[k][1], &name, c.subscriptionCount(k))
		}
	}
	c.sendConfirmations(direct, b)
	r.mu.Unlock()
}

// unsubscribeAll drops every subscription without notifying the client
// (RESET, disconnection).
func (c *Client) unsubscribeAll() {
	r := c.srv.pubsub
	r.mu.Lock()
	for k := range c.ps.sets {
		for _, name := range append([]string(nil), c.ps.sets[k].order...) {
			r.removeLocked(c, pubsubKind(k), name)
		}
	}
	r.mu.Unlock()
}

// pubsubScratch is the size of a message's encoding that publish builds on
// its own stack, without allocating (a queue copies what it is given).
const pubsubScratch = 192

// appendPubsubMessage encodes one delivery: [word, channel, body], or
// ["pmessage", pattern, channel, body] when pattern is not empty.
func appendPubsubMessage(b []byte, resp int, word, pattern string, channel, body []byte) []byte {
	if pattern == "" {
		b = appendPushHeader(b, resp, 3)
	} else {
		b = appendPushHeader(b, resp, 4)
		b = appendBulkStr(b, word)
		word = pattern
	}
	b = appendBulkStr(b, word)
	b = appendBulkBytes(b, channel)
	return appendBulkBytes(b, body)
}

// publish delivers a message to this node's subscribers and returns their
// number (channel subscribers, then pattern subscribers; shard channels
// ignore patterns). Each encoding is built once per protocol. from, when
// not nil, is the client whose command publishes, on its own goroutine: if
// it is a subscriber (RESP3) its message goes into the reply being built,
// where Redis adds it to the client's output, before or after the
// command's own reply.
func (s *Server) publish(from *Client, channel, body []byte, shard bool) int64 {
	var d pubsubDeliveries
	s.pubsub.mu.RLock()
	n := s.publishLocked(&d, from, channel, body, shard)
	d.send(s)
	s.pubsub.mu.RUnlock()
	return n
}

// publishLocked is publish with the registry's read lock held: the messages
// are added to d, which the caller sends before it lets the lock go.
func (s *Server) publishLocked(d *pubsubDeliveries, from *Client, channel, body []byte, shard bool) int64 {
	r := s.pubsub
	k := kindChannel
	if shard {
		k = kindShard
	}
	var enc [4][]byte                  // by RESP version (2 and 3 used)
	var scratch [2][pubsubScratch]byte // by RESP version - 2
	var n int64
	var subs []*Client
	if tbl := r.table(k); len(tbl) > 0 { // (no hashing of the channel when nobody subscribes by name)
		subs = tbl[string(channel)]
	}
	for _, c := range subs {
		resp := c.ps.resp
		if enc[resp] == nil {
			enc[resp] = appendPubsubMessage(scratch[resp-2][:0], resp, pubsubWords[k][2], "", channel, body)
		}
		d.add(c, enc[resp], from, s)
		n++
	}
	if shard || len(r.patOrder) == 0 {
		return n
	}
	ch := string(channel)
	for i := range r.patOrder {
		if !r.patOrder[i].Match(ch) {
			continue
		}
		pat := r.patOrder[i].String()
		enc[2], enc[3] = nil, nil
		for _, c := range r.patterns[pat] {
			resp := c.ps.resp
			if enc[resp] == nil {
				enc[resp] = appendPubsubMessage(scratch[resp-2][:0], resp, "pmessage", pat, channel, body)
			}
			d.add(c, enc[resp], from, s)
			n++
		}
	}
	return n
}

// pubsubDeliveries gathers the messages one publisher hands subscribers
// while it holds the registry's read lock, so that a subscriber that gets
// several (a write's __keyspace@ and __keyevent@ notifications, both
// matching "__key*__:*") has them queued with one append and one wake-up of
// its writer, next to each other as Redis's one thread queues them. It
// lives on the publisher's stack: no field points into another.
type pubsubDeliveries struct {
	n    int                     // entries used
	used int                     // bytes of buf used
	to   [pubsubGather]*Client   // entry i's subscriber
	end  [pubsubGather]int       // where entry i's message ends in buf (it starts where i-1's ends)
	sent [pubsubGather]bool      // scratch of send: entry i is queued
	buf  [2 * pubsubScratch]byte // the messages, one after the other
}

// pubsubGather is how many messages a pubsubDeliveries holds before it
// sends them.
const pubsubGather = 4

// add hands subscriber c the message msg: into the reply being built when c
// is the publishing client itself (from), where Redis adds it to the
// client's output, else gathered for c's push queue.
func (d *pubsubDeliveries) add(c *Client, msg []byte, from *Client, s *Server) {
	if c == from {
		c.Out = append(c.Out, msg...)
		return
	}
	if d.n == pubsubGather || d.used+len(msg) > len(d.buf) {
		d.send(s)
	}
	if len(msg) > len(d.buf) {
		c.ps.push.enqueue(msg, s) // (nothing is held now: the order stays)
		return
	}
	d.used += copy(d.buf[d.used:], msg)
	d.to[d.n], d.end[d.n] = c, d.used
	d.n++
}

// send queues what add gathered, one append per subscriber, in the order
// each subscriber's messages were added.
func (d *pubsubDeliveries) send(s *Server) {
	var parts [pubsubGather][]byte
	for i := range d.n {
		if d.sent[i] {
			continue
		}
		k := 0
		for j := i; j < d.n; j++ {
			if d.to[j] == d.to[i] {
				start := 0
				if j > 0 {
					start = d.end[j-1]
				}
				parts[k] = d.buf[start:d.end[j]]
				k++
				d.sent[j] = true
			}
		}
		d.to[i].ps.push.enqueueParts(parts[:k], s)
	}
	clear(d.to[:d.n])
	clear(d.sent[:d.n])
	d.n, d.used = 0, 0
}

// dropShardChannels unsubscribes, with a notification, every client of the
// shard channels whose slot this node's shard no longer serves (Redis's
// removeChannelsInSlot when a slot is deleted).
func (s *Server) dropShardChannels(t *slots.Table) {
	r := s.pubsub
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, subs := range r.shard {
		owner := t.Owner(int(slots.KeySlot([]byte(name))))
		if owner != nil && (owner.ID == t.MyID || (t.MyMaster != "" && owner.ID == t.MyMaster)) {
			continue
		}
		for _, c := range append([]*Client(nil), subs...) {
			r.removeLocked(c, kindShard, name)
			n := name
			c.ps.push.enqueue(appendSubscriptionReply(nil, c.ps.resp, pubsubWords[kindShard][1], &n, c.subscriptionCount(kindShard)), s)
		}
	}
}

// pubsubCounts returns INFO's pubsub_channels, pubsub_patterns and
// pubsubshard_channels.
func (s *Server) pubsubCounts() (channels, patterns, shard int64) {
	r := s.pubsub
	r.mu.RLock()
	defer r.mu.RUnlock()
	return int64(len(r.channels)), int64(len(r.patterns)), int64(len(r.shard))
}

// pubsubClosed forgets a disconnected client: its subscriptions and its
// writer goroutine.
func (c *Client) pubsubClosed() {
	c.unsubscribeAll()
	if c.ps.push != nil {
		c.ps.push.close()
	}
}

// ensurePushWriter switches the client to the push path: the replies
// redcon has buffered for earlier commands of the pipeline move to the
// head of the push queue (not written here: the caller may hold slot
// locks), and every later reply goes through the queue.
func (c *Client) ensurePushWriter() {
	if c.ps.push != nil {
		return
	}
	w := &pushWriter{c: c, conn: c.guard.Conn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if b := c.batchOutput(); len(b) > 0 {
		w.blocks, w.queued = append(w.blocks, b), len(b)
	}
	c.ps.push = w
	go w.run()
	if w.queued > 0 {
		w.wake <- struct{}{}
	}
}

// pushWriter is a client's asynchronous output queue: a list of blocks of
// pushBlockSize bytes (as Redis's reply list), so that a queue that grows
// while its reader lags is never copied into a bigger buffer, and written
// blocks are reused.
type pushWriter struct {
	c    *Client
	conn net.Conn

	mu       sync.Mutex // guards blocks, queued, inflight, free, closed
	blocks   [][]byte   // queued output; only the last one has room left
	queued   int        // bytes in blocks
	inflight int        // bytes taken by a writer and not yet written
	free     [][]byte   // written blocks kept for reuse (at most pushFreeBlocks)
	closed   bool

	wmu     sync.Mutex  // serializes socket writes (the writer goroutine, flushNow)
	writing [][]byte    // the block list being written, kept for its array; guarded by wmu
	iov     net.Buffers // one write's blocks; guarded by wmu
	wake    chan struct{}
	done    chan struct{}
}

// pushBlockSize is the size of a push queue's block; pushFreeBlocks is how
// many written blocks a queue keeps for reuse (a steady stream allocates
// nothing; a burst's blocks go back to the heap).
const (
	pushBlockSize  = 16 << 10
	pushFreeBlocks = 4
)

// appendLocked copies b to the end of the queue (w.mu held).
func (w *pushWriter) appendLocked(b []byte) {
	w.queued += len(b)
	for len(b) > 0 {
		n := len(w.blocks)
		if n == 0 || len(w.blocks[n-1]) == cap(w.blocks[n-1]) {
			var blk []byte
			if f := len(w.free); f > 0 {
				blk, w.free = w.free[f-1][:0], w.free[:f-1]
			} else {
				blk = make([]byte, 0, pushBlockSize)
			}
			w.blocks = append(w.blocks, blk)
			n++
		}
		last := w.blocks[n-1]
		k := min(len(b), cap(last)-len(last))
		w.blocks[n-1] = append(last, b[:k]...)
		b = b[k:]
	}
}

// enqueue appends b to the queue and wakes the writer. It never blocks on
// the socket. A queue over client-output-buffer-limit (the pubsub class
// while subscribed, else normal) closes the client.
func (w *pushWriter) enqueue(b []byte, s *Server) {
	w.enqueueParts([][]byte{b}, s)
}

// enqueueParts is enqueue of the concatenation of parts.
func (w *pushWriter) enqueueParts(parts [][]byte, s *Server) {
	if w.add(parts, s) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// enqueueReply appends a reply of the client's own command without waking
// the writer: the connection's goroutine writes the queue itself once its
// read batch is done (flushReplies), one write per batch as for a client
// without a queue, instead of a wake-up and a write per reply.
func (w *pushWriter) enqueueReply(b []byte, s *Server) { w.add([][]byte{b}, s) }

// add appends the concatenation of parts to the queue; false when nothing
// was queued (the queue is closed, or it passed its limit and the client is
// closed).
func (w *pushWriter) add(parts [][]byte, s *Server) bool {
	size := 0
	for _, b := range parts {
		size += len(b)
	}
	if size == 0 {
		return false
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	for _, b := range parts {
		w.appendLocked(b)
	}
	used := w.queued + w.inflight
	w.c.obuf.held.Store(int64(used))
	lim := s.limits.output.Load()[w.c.outputClass()]
	var now int64 // the clock matters only past the soft limit
	if lim.SoftBytes > 0 && uint64(used) >= lim.SoftBytes {
		now = time.Now().Unix()
	}
	over := outputLimitReached(lim, uint64(used), &w.c.obuf.softSince, now)
	w.mu.Unlock()
	if over {
		s.noteOutputPeak(int64(used))
		s.log.Warn("Client " + w.c.InfoLine() + " scheduled to be closed ASAP for overcoming of output buffer limits.")
		w.c.kill()
		w.close()
		return false
	}
	return true
}

func (w *pushWriter) run() {
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		// Let the goroutines that are ready run first (on a busy server,
		// the other publishers' batches): their messages join this write,
		// as Redis writes a subscriber's output once per event-loop turn.
		// Without it the writer runs as soon as its waker parks, and a
		// subscriber of a busy keyspace gets one write per publisher's
		// batch. An idle server does not wait.
		runtime.Gosched()
		if !w.flushNow() {
			w.c.kill()
			return
		}
	}
}

// flushNow writes everything queued, on the caller's goroutine; false when
// the socket failed.
func (w *pushWriter) flushNow() bool {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	blocks := w.blocks
	w.blocks = w.writing[:0]
	w.inflight, w.queued = w.queued, 0
	w.mu.Unlock()
	var err error
	for done := 0; done < len(blocks) && err == nil; {
		// Up to outputWriteChunk bytes of blocks per write (writev), so
		// that omem and the soft limit follow a reader that drains slowly.
		end, size := done, 0
		for end < len(blocks) && (end == done || size+len(blocks[end]) <= outputWriteChunk) {
			size += len(blocks[end])
			end++
		}
		w.iov = append(w.iov[:0], blocks[done:end]...)
		iov := w.iov // WriteTo consumes its slice
		var n int64
		n, err = writeBuffers(w.conn, &iov)
		w.mu.Lock()
		w.inflight -= int(n)
		w.c.obuf.held.Store(int64(w.queued + w.inflight))
		if err == nil {
			for _, blk := range blocks[done:end] {
				if cap(blk) == pushBlockSize && len(w.free) < pushFreeBlocks {
					w.free = append(w.free, blk)
				}
			}
		}
		w.mu.Unlock()
		done = end
	}
	clear(blocks)
	w.mu.Lock()
	w.inflight = 0
	w.mu.Unlock()
	if cap(blocks) <= 64 {
		w.writing = blocks[:0]
	} else {
		w.writing = nil // a burst's list
	}
	// What reached the socket no longer counts in the client's memory:
	// account it now, not at the next cron, or maxmemory would go on
	// evicting for output that is gone (Redis writes pending replies
	// before it reads the next command).
	w.c.srv.updateClientMemory(w.c)
	return err == nil
}

// backedUp reports whether the writer is still writing earlier output
// (its socket is not draining as fast as output is queued).
func (w *pushWriter) backedUp() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inflight > 0
}

// close stops the writer goroutine; queued bytes are dropped.
func (w *pushWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.blocks, w.queued, w.free = nil, 0, nil
	w.c.obuf.held.Store(0)
	select {
	case <-w.done:
	default:
		close(w.done)
	}
}

// deliverInbound hands PUBLISH / PUBLISHSHARD messages received over the
// cluster bus to this node's subscribers (they are not forwarded again).
func (s *Server) deliverInbound(msgs []*gossip.Message) {
	for _, m := range msgs {
		s.publish(nil, m.Channel, m.Payload, m.Type == gossip.MsgPublishShard)
	}
}
