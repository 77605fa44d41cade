package node

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shoal-db/shoal/resp"
)

// Client memory accounting and client eviction (Redis 7.0's
// maxmemory-clients: getClientMemoryUsage, updateClientMemUsageAndBucket,
// the client_mem_usage_buckets and evictClients).
//
// A client's memory is what shoal holds for it: its fixed structures, the
// request reader's buffers (an incomplete command included, resp/request.go),
// its reply buffers, a subscriber's push queue, its queued MULTI commands,
// watched keys and subscriptions (clientMemoryUsage). Every part is readable
// from any goroutine (atomics published by the connection's goroutine), so
// CLIENT LIST's tot-mem and the figure eviction uses are the same function.
//
// The totals are kept incrementally, as Redis does: each client's last
// accounted usage sits in one atomic word with its class (normal and pubsub,
// replica, master link); an update swaps the word and adds the difference to
// its class's total. Updates run after every command and every reply write
// of the client, after each read that leaves a command incomplete, for every
// client on every cron tick, and for all clients when CONFIG SET changes the
// limit — never a scan of all clients per command.
//
// With a limit, clients that may be evicted (normal and pubsub, not CLIENT
// NO-EVICT) sit in buckets by the power of two of their usage (32 KiB up to
// 8 GiB and above), each a list in the order clients entered it. When the
// normal and pubsub total reaches the limit — checked before every command,
// after each incomplete read, on each cron tick and when the limit changes —
// clients are evicted from the largest bucket down until it is below, the
// current client included. As in Redis, the total counts NO-EVICT clients
// too: they are never chosen, but their memory counts against the limit.

const (
	// clientMemBucketMinLog, clientMemBucketMaxLog: Redis's
	// CLIENT_MEM_USAGE_BUCKET_MIN_LOG and _MAX_LOG.
	clientMemBucketMinLog = 15
	clientMemBucketMaxLog = 33
	clientMemBuckets      = 1 + clientMemBucketMaxLog - clientMemBucketMinLog
	// clientEvictionFloor is the smallest effective maxmemory-clients (128
	// KiB), so that a bad setting cannot cut every client off.
	clientEvictionFloor = 128 << 10

	// clientFixedBytes is what every connection holds whatever it does:
	// its session and its request reader.
	clientFixedBytes = int64(unsafe.Sizeof(Client{}) + unsafe.Sizeof(resp.RequestReader{}))
	// Per-entry overheads of the per-client structures, counted as Redis
	// counts them: a queued command and its argument headers, a watched
	// key, a pattern, a channel (a dict entry plus its slot).
	queuedCommandBytes = int64(unsafe.Sizeof(queuedCommand{}))
	argHeaderBytes     = int64(unsafe.Sizeof([]byte(nil)))
	watchedKeyBytes    = int64(unsafe.Sizeof(watchedKey{}) + unsafe.Sizeof((*watchedKey)(nil)))
	subscriptionBytes  = 24
	dictSlotBytes      = 8
)

// Memory classes: the totals INFO reports and eviction compares.
const (
	memClassNormal  = iota // normal and pubsub clients: the evictable classes
	memClassReplica        // replica links (mem_clients_slaves)
	memClassMaster         // the master link
	memClasses
)

// clientMemState is a client's accounting state.
type clientMemState struct {
	// accounted is usage<<2 | class as last added to the totals; -1 once
	// the client is gone (closed or evicted) and must not be added again.
	accounted atomic.Int64
	// owned is the part of the usage only the connection's goroutine can
	// compute (reply buffers, MULTI queue, watched keys), published by it.
	owned atomic.Int64
	// multiArgv is the payload of the queued MULTI commands (multi-mem).
	multiArgv atomic.Int64
	// pushQueue: the client's replies go through a push queue
	// (c.ps.push, node/pubsub.go), whose bytes are in obuf.held.
	pushQueue atomic.Bool
	// bucketShown mirrors bucket for a lock-free "did it change" test.
	bucketShown atomic.Int32
	// Guarded by clientEviction.mu.
	bucket     int32 // 1 + index in clientEviction.buckets; 0: in none
	prev, next *Client
}

// clientEviction is the server's side: totals, buckets, the limit.
type clientEviction struct {
	totals  [memClasses]atomic.Int64
	limit   atomic.Int64 // effective maxmemory-clients in bytes, 0 = off
	evicted atomic.Int64 // INFO evicted_clients

	mu       sync.Mutex
	buckets  [clientMemBuckets]clientList
	lastWarn time.Time // the "after evicting all" warning, at most once a second
}

type clientList struct{ head, tail *Client }

// clientMemBucket is getMemUsageBucket: the bit length of usage, clamped to
// the bucket range. It returns 1 + the bucket's index (0 means none).
func clientMemBucket(usage int64) int32 {
	b := bits.Len64(uint64(max(usage, 0)))
	b = min(max(b, clientMemBucketMinLog), clientMemBucketMaxLog)
	return int32(b-clientMemBucketMinLog) + 1
}

// clientEvictionLimit is getClientEvictionLimit: maxmemory-clients in bytes
// (a negative value -p is p percent of maxmemory, off while maxmemory is
// 0), at least clientEvictionFloor; 0 when off.
func clientEvictionLimit(maxmemoryClients, maxmemory int64) int64 {
	var lim int64
	switch {
	case maxmemoryClients < 0 && maxmemory > 0:
		lim = int64(float64(maxmemory) * -float64(maxmemoryClients) / 100)
	case maxmemoryClients > 0:
		lim = maxmemoryClients
	default:
		return 0
	}
	return max(lim, clientEvictionFloor)
}

// dictBytes is a Redis dict's overhead for n entries: the entries and a
// power-of-two slot table (at least 4 once it holds one).
func dictBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	slots := max(int64(1)<<bits.Len64(uint64(n-1)), 4)
	return n*subscriptionBytes + slots*dictSlotBytes
}

// clientMemoryUsage is getClientMemoryUsage: what the server holds for c
// (see the file comment). Safe from any goroutine.
func (c *Client) clientMemoryUsage() int64 {
	mem := clientFixedBytes + c.mem.owned.Load()
	if c.guard != nil {
		mem += c.guard.MemoryHeld()
	}
	if c.mem.pushQueue.Load() {
		// A subscriber's replies wait in its push queue (obuf.held);
		// other clients' held bytes are part of their reply buffers.
		mem += c.obuf.held.Load()
	}
	mem += int64(c.ps.counts[kindPattern].Load()) * subscriptionBytes
	mem += dictBytes(int64(c.ps.counts[kindChannel].Load()))
	mem += dictBytes(int64(c.ps.counts[kindShard].Load()))
	return mem
}

// publishOwnedMemory recomputes the owner-only part of c's usage. Only the
// connection's goroutine may call it.
func (c *Client) publishOwnedMemory() {
	owned := int64(cap(c.wbuf) + c.wblockBytes + cap(c.Out))
	if c.multi != nil {
		owned += int64(len(c.multi.queue))*queuedCommandBytes + c.mem.multiArgv.Load()
	}
	owned += int64(len(c.tx.watch.keys)) * watchedKeyBytes
	owned += c.trk.prefixBytes // BCAST prefixes (node/tracking.go)
	if c.mem.owned.Load() != owned {
		c.mem.owned.Store(owned)
	}
	if c.ps.push != nil && !c.mem.pushQueue.Load() {
		c.mem.pushQueue.Store(true) // kept for the connection's life
	}
}

// noteQueued adds a queued MULTI command's arguments to multi-mem.
func (c *Client) noteQueued(args [][]byte) {
	n := int64(len(args)) * argHeaderBytes
	for _, a := range args {
		n += int64(len(a))
	}
	c.mem.multiArgv.Add(n)
}

// memClass is the accounting class of c (Redis's getClientType, with
// normal and pubsub together).
func (c *Client) memClass() int64 {
	switch c.kind() {
	case clientReplica:
		return memClassReplica
	case clientMaster:
		return memClassMaster
	}
	return memClassNormal
}

// evictable is clientEvictionAllowed, with the limit checked by the caller.
func (c *Client) evictable(class int64) bool {
	return class == memClassNormal && !c.noEvict.Load() && !c.killed.Load()
}

// updateClientMemory is updateClientMemUsageAndBucket: it accounts c's
// current usage in the totals and moves c to its bucket. Safe from any
// goroutine; a gone client is left alone.
func (s *Server) updateClientMemory(c *Client) {
	if c.guard == nil {
		return // a connection-less client (scripts, blocked-client stand-ins)
	}
	if c.killed.Load() {
		s.forgetClientMemory(c) // on its way out: Redis frees it before evicting
		return
	}
	usage := c.clientMemoryUsage()
	class := c.memClass()
	word := usage<<2 | class
	ev := &s.cevict
	for {
		old := c.mem.accounted.Load()
		if old < 0 || old == word {
			break
		}
		if c.mem.accounted.CompareAndSwap(old, word) {
			ev.totals[old&3].Add(-(old >> 2))
			ev.totals[class].Add(usage)
			break
		}
	}
	want := int32(0)
	if ev.limit.Load() != 0 && c.evictable(class) {
		want = clientMemBucket(usage)
	}
	if c.mem.bucketShown.Load() != want {
		s.placeInBucket(c, want)
	}
}

// placeInBucket moves c to bucket want (1 + index; 0: none), at the
// bucket's tail.
func (s *Server) placeInBucket(c *Client, want int32) {
	ev := &s.cevict
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if c.mem.accounted.Load() < 0 {
		want = 0
	}
	if c.mem.bucket == want {
		return
	}
	ev.unlinkLocked(c)
	if want > 0 {
		l := &ev.buckets[want-1]
		c.mem.prev, c.mem.next = l.tail, nil
		if l.tail != nil {
			l.tail.mem.next = c
		} else {
			l.head = c
		}
		l.tail = c
	}
	c.mem.bucket = want
	c.mem.bucketShown.Store(want)
}

func (ev *clientEviction) unlinkLocked(c *Client) {
	b := c.mem.bucket
	if b == 0 {
		return
	}
	l := &ev.buckets[b-1]
	if c.mem.prev != nil {
		c.mem.prev.mem.next = c.mem.next
	} else {
		l.head = c.mem.next
	}
	if c.mem.next != nil {
		c.mem.next.mem.prev = c.mem.prev
	} else {
		l.tail = c.mem.prev
	}
	c.mem.prev, c.mem.next = nil, nil
	c.mem.bucket = 0
	c.mem.bucketShown.Store(0)
}

// forgetClientMemory removes a client that is going away from the totals
// and its bucket, for good (freeClient's part).
func (s *Server) forgetClientMemory(c *Client) {
	ev := &s.cevict
	ev.mu.Lock()
	ev.forgetLocked(c)
	ev.mu.Unlock()
}

func (ev *clientEviction) forgetLocked(c *Client) {
	ev.unlinkLocked(c)
	if old := c.mem.accounted.Swap(-1); old > 0 {
		ev.totals[old&3].Add(-(old >> 2))
	}
}

// evictClients is Redis's evictClients: while the normal and pubsub total
// is at or above the limit, it evicts the clients of the largest bucket
// first (its oldest entrant first), counting and logging each. It reports
// whether self (may be nil) was evicted: its command must not run.
func (s *Server) evictClients(self *Client) bool {
	ev := &s.cevict
	limit := ev.limit.Load()
	if limit == 0 || ev.totals[memClassNormal].Load() < limit {
		return false
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	selfEvicted := false
	b := clientMemBuckets - 1
	for ev.totals[memClassNormal].Load() >= limit {
		for b >= 0 && ev.buckets[b].head == nil {
			b--
		}
		if b < 0 {
			if now := time.Now(); now.Sub(ev.lastWarn) >= time.Second {
				ev.lastWarn = now // Redis says it on every event loop turn
				s.log.Warn("Over client maxmemory after evicting all evictable clients")
			}
			break
		}
		c := ev.buckets[b].head
		s.log.Info("Evicting client: " + c.InfoLine())
		ev.forgetLocked(c)
		ev.evicted.Add(1) // before the socket closes: whoever sees it closed sees it counted
		switch {
		case c == self:
			c.kill()
			selfEvicted = true
		default:
			c.evictLater()
		}
	}
	return selfEvicted
}

// evictLater closes a client another goroutine evicts: at once, unless it
// is running commands, which then write their replies first and the
// client's own loop closes it (Redis evicts in beforeSleep, after the
// replies of the event loop's turn were written). The flag is stored
// before executing is read, and the loop clears executing before it reads
// the flag: one of the two sides sees the other.
func (c *Client) evictLater() {
	c.evictAfterReplies.Store(true)
	if !c.executing.Load() {
		c.kill()
	}
}

// applyClientEviction is the config hook of maxmemory-clients and
// maxmemory (applyClientMaxMemoryUsage): the new limit, every client
// accounted and placed again (or taken out of the buckets when off), and
// eviction at once if the total is over the new limit.
func (s *Server) applyClientEviction() {
	s.cevict.limit.Store(clientEvictionLimit(s.cfg.Int("maxmemory-clients"), s.cfg.Int("maxmemory")))
	for _, c := range s.Clients() {
		s.updateClientMemory(c)
	}
	s.evictClients(nil)
}

// registerClientEvictionHooks sets the limit from the configuration and
// keeps it current; CONFIG RESETSTAT zeroes evicted_clients.
func (s *Server) registerClientEvictionHooks() {
	s.cevict.limit.Store(clientEvictionLimit(s.cfg.Int("maxmemory-clients"), s.cfg.Int("maxmemory")))
	for _, name := range []string{"maxmemory-clients", "maxmemory"} {
		s.cfg.OnChange(name, func(string) error { s.applyClientEviction(); return nil })
	}
	s.cfg.OnResetStat(func() { s.cevict.evicted.Store(0) })
}

// afterRead is the request reader's OnPartial hook: c's buffers grew with
// an incomplete command; account them and evict if over (c itself
// included: its socket is then closed and its next read fails).
func (c *Client) afterRead() {
	c.publishOwnedMemory()
	c.srv.updateClientMemory(c)
	c.srv.evictClients(c)
}

// clientsMemory returns INFO memory's mem_clients_normal (normal, pubsub
// and master link) and mem_clients_slaves.
func (s *Server) clientsMemory() (normal, replicas int64) {
	t := &s.cevict.totals
	return t[memClassNormal].Load() + t[memClassMaster].Load(), t[memClassReplica].Load()
}

// argvBytes is what a running command's arguments count in CLIENT LIST's
// argv-mem (payload) and tot-mem (payload and headers), for the client
// listing itself.
func argvBytes(args [][]byte) (payload, total int64) {
	for _, a := range args {
		payload += int64(len(a))
	}
	return payload, payload + int64(len(args))*argHeaderBytes
}
