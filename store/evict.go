package store

import (
	"math"
	"math/rand/v2"
	"sync"
	"unsafe"
)

// Eviction: Redis's approximated LRU/LFU/TTL eviction (evict.c) over the
// per-slot tables. Each round samples a few keys of every database into a
// small pool of the best candidates seen so far, kept across rounds, then
// evicts the best candidate that still exists. The random policies pick a
// random key instead.

// EvictionPolicy is a maxmemory-policy that evicts (noeviction is the
// server's business: it never calls EvictOne).
type EvictionPolicy uint8

const (
	EvictAllKeysLRU EvictionPolicy = iota
	EvictVolatileLRU
	EvictAllKeysLFU
	EvictVolatileLFU
	EvictAllKeysRandom
	EvictVolatileRandom
	EvictVolatileTTL
)

// volatileOnly reports whether the policy evicts only keys with an expiry.
func (p EvictionPolicy) volatileOnly() bool {
	return p == EvictVolatileLRU || p == EvictVolatileLFU || p == EvictVolatileRandom || p == EvictVolatileTTL
}

// evictionPoolSize is Redis's EVPOOL_SIZE.
const evictionPoolSize = 16

// maxEvictionSamples is the most keys sampled per database per pool fill
// (maxmemory-samples' upper bound).
const maxEvictionSamples = 64

// poolEntry is one eviction candidate: a higher score is a better one. It
// holds the candidate's entry itself, with its slot and where sampling
// found it, so that neither sampling nor eviction reads its key (a cache
// miss each: the key is its own allocation) nor hashes and compares keys:
// under the slot lock the entry is looked for by identity in that bucket
// of a table of tableLen buckets — a candidate whose table was resized
// since is dropped, as one deleted (or renamed away) since it was sampled
// is not found, and a key deleted and written again is a new entry, so
// none is evicted on a stale score. Candidates sampled from a slot's
// volatile set have no bucket: tableLen is 0 and hash is their key's hash,
// taken under the slot lock when they entered the pool.
type poolEntry struct {
	score    uint64
	db       *DB // the slot's database (SWAPDB moves databases, not slots)
	slot     *Slot
	e        *Entry
	hash     uint64 // the bucket's index, or the key's hash when tableLen is 0
	tableLen int
	used     bool
}

// evictionState is the pool and the round-robin position of the random
// policies. mu serialises evictions; it is taken before any slot lock.
// The pool is kept sorted through order (rank → position in pool), so that
// making room for a candidate moves bytes, not entries: moving an entry
// copies its pointers, with the collector's write barriers while it marks,
// which under evicting writes is most of the time.
type evictionState struct {
	mu      sync.Mutex
	pool    [evictionPoolSize]poolEntry
	order   [evictionPoolSize]uint8
	nextDB  int
	randKey []byte // evictRandom's key buffer
	// samples is samplePool's buffer: the entries of one slot's sample;
	// scores theirs. Kept here, as a local array would be cleared for
	// every slot sampled.
	samples [maxEvictionSamples]dictSample
	scores  [maxEvictionSamples]uint64
	// ahead is each database's sampling prepared ahead (prepareAhead).
	ahead []sampleAhead
}

// sampleAhead is where a database's next pool fills start, chosen ahead so
// that what they read is in the cache by then: a sample's misses — the
// slot's two lines, then an entry per key — were most of an evicting SET's
// CPU, each waited on in turn (the entries' reads only start once the
// slot's buckets are in). After an eviction, the slot chosen the time before
// (whose lines have arrived meanwhile) has the entries at the head of its
// buckets prefetched, and a new slot is chosen and its lines prefetched:
// the next fill samples the first, the one after it the second. The slots
// are as random as before, only chosen one or two evictions earlier; the
// sample is still taken under the slot lock, from whatever the slot holds
// then.
type sampleAhead struct {
	next, later       int // slot numbers
	hasNext, hasLater bool
	nextBucket        uint64 // where sampling next starts in its table
}

// initOrder makes the empty pool's ranks its positions in order.
func (st *evictionState) initOrder() {
	for i := range st.order {
		st.order[i] = uint8(i)
	}
}

// at returns the candidate of rank k (0 = the worst).
func (st *evictionState) at(k int) *poolEntry { return &st.pool[st.order[k]] }

// EvictHook is told about an evicted key, with the key's slot still locked
// (to propagate its DEL in order with the slot's writes). It must not block
// or call back into the keyspace for another slot.
// key is only valid during the call.
type EvictHook func(db *DB, key []byte)

// EvictOne evicts one key under policy, sampling samples keys per database
// for the pool policies, and returns the bytes its entry was charged. ok is
// false when there was nothing the policy may evict. Call it without
// holding any slot lock.
func (ks *Keyspace) EvictOne(policy EvictionPolicy, samples int, hook EvictHook) (freed int64, ok bool) {
	st := &ks.evict
	st.mu.Lock()
	defer st.mu.Unlock()
	samples = max(1, min(samples, maxEvictionSamples))
	if policy == EvictAllKeysRandom || policy == EvictVolatileRandom {
		return ks.evictRandom(policy, hook)
	}
	// Populate, then take the best candidate that still exists; a pool of
	// ghosts (keys deleted since they were sampled) means sampling again.
	// Bounded: every round either evicts or empties the pool entries it
	// tried, and an empty keyspace stops it.
	for round := 0; round < 64; round++ {
		sampled := false
		for i := range int(ks.dbsUsed.Load()) {
			db := ks.existingDB(i)
			if db == nil || !db.hasCandidates(policy) {
				continue
			}
			sampled = true
			from, bucket := -1, uint64(0)
			if a := &st.ahead[i]; a.hasNext {
				from, bucket, a.hasNext = a.next, a.nextBucket, false
			}
			db.samplePool(policy, samples, &st.samples, from, bucket, func(sl *Slot, tableLen int, batch []dictSample) {
				// Scores first, in a loop of their own: the entries' clocks
				// are read back to back, their cache misses overlapping.
				scores := st.scores[:len(batch)]
				for j, c := range batch {
					scores[j] = ks.score(policy, c.e)
				}
				for j, c := range batch {
					p := st.insert(scores[j])
					if p == nil {
						continue
					}
					*p = poolEntry{score: scores[j], db: db, slot: sl, e: c.e, hash: c.bucket, tableLen: tableLen, used: true}
					if tableLen == 0 {
						p.hash = hashKey(ks.seed, c.e.keyBytes())
					}
				}
			})
		}
		if !sampled {
			return 0, false
		}
		for k := evictionPoolSize - 1; k >= 0; k-- {
			c := *st.at(k)
			if !c.used {
				continue
			}
			*st.at(k) = poolEntry{}
			if freed, ok := ks.evictCandidate(&c, policy.volatileOnly(), hook); ok {
				ks.prepareAhead(policy)
				return freed, true
			}
		}
	}
	return 0, false
}

// prepareAhead prepares the next pool fills of every database with keys
// policy may evict (sampleAhead). Caller holds st.mu.
func (ks *Keyspace) prepareAhead(policy EvictionPolicy) {
	st := &ks.evict
	for i := range int(ks.dbsUsed.Load()) {
		db := ks.existingDB(i)
		if db == nil || !db.hasCandidates(policy) {
			continue
		}
		a := &st.ahead[i]
		if a.hasLater {
			a.next, a.nextBucket, a.hasNext = a.later, randUint64(), true
			if s := &db.slots[a.next]; !policy.volatileOnly() && s.keys.Load() > 0 {
				db.lockSlot(s)
				s.dict.prefetchHeads(a.nextBucket)
				s.mu.Unlock()
			}
		}
		a.later, a.hasLater = rand.IntN(NumSlots), true
		line := unsafe.Pointer(&db.slots[a.later])
		prefetch(line)
		prefetch(unsafe.Add(line, slotAlign))
	}
}

// hasCandidates reports whether db has keys policy may evict.
func (db *DB) hasCandidates(policy EvictionPolicy) bool {
	if policy.volatileOnly() {
		return db.volatileKeys.Load() > 0
	}
	return db.bytes.Load() > 0
}

// score is how good a candidate e is under policy (evictionPoolPopulate's
// "idle"): idle time, 255 minus the access counter, or the nearness of the
// expiry.
func (ks *Keyspace) score(policy EvictionPolicy, e *Entry) uint64 {
	switch policy {
	case EvictAllKeysLRU, EvictVolatileLRU:
		return uint64(ks.IdleMillis(e))
	case EvictAllKeysLFU, EvictVolatileLFU:
		return 255 - uint64(ks.LFUCounter(e))
	}
	return math.MaxUint64 - uint64(e.expire) // volatile-ttl
}

// insert makes room in the pool, which is kept sorted by ascending score,
// for a candidate of that score and returns its position for the caller
// to fill, every field; nil when a full pool holds only better candidates
// (Redis's evictionPoolPopulate: a free position, or the worst
// candidate's). An entry sampled twice may sit in the pool twice, as in
// Redis: the second copy is not found once the first is evicted.
func (st *evictionState) insert(score uint64) *poolEntry {
	order := &st.order
	k := 0
	for k < evictionPoolSize && st.at(k).used && st.at(k).score < score {
		k++
	}
	switch {
	case k == 0 && st.at(evictionPoolSize-1).used:
		return nil // worse than everything in a full pool
	case k < evictionPoolSize && !st.at(k).used:
		// a free position
	case !st.at(evictionPoolSize - 1).used:
		// Room on the right: the free position at the end moves to k.
		free := order[evictionPoolSize-1]
		copy(order[k+1:], order[k:evictionPoolSize-1])
		order[k] = free
	default:
		// Full: the worst candidate's position, on the left, moves to k-1.
		k--
		worst := order[0]
		copy(order[:k], order[1:k+1])
		order[k] = worst
	}
	return st.at(k)
}

// samplePool calls fn, under the slot's lock, with the entries sampled
// from each slot (in buf), about n entries of db in all that policy may
// evict: from a random non-empty slot on, taking the entries of
// consecutive buckets, then of the next non-empty slots (Redis's
// dictGetSomeKeys walks consecutive buckets too). Keys are spread over the
// slots by their hash, so neighbouring slots are as random a sample as
// random ones, and far cheaper: one lock and few cache misses. tableLen is
// the slot's table size (the old table's while it is resized
// incrementally), 0 for entries from its volatile set (bucket 0).
func (db *DB) samplePool(policy EvictionPolicy, n int, buf *[maxEvictionSamples]dictSample,
	from int, bucket uint64, fn func(s *Slot, tableLen int, batch []dictSample)) {
	volatileOnly := policy.volatileOnly()
	n = min(n, len(buf))
	got := 0
	if from < 0 {
		from, bucket = rand.IntN(NumSlots), randUint64()
	}
	db.eachSlotFrom(from, volatileOnly, func(s *Slot) bool {
		db.lockSlot(s)
		k, tableLen := 0, 0
		if volatileOnly {
			for e := range s.volatile {
				if got+k == n {
					break
				}
				buf[k] = dictSample{e: e}
				k++
			}
		} else {
			tableLen = len(s.dict.buckets)
			if got > 0 {
				bucket = randUint64() // a further slot: from a random bucket
			}
			k = s.dict.sampleFrom(bucket, buf[:n-got])
		}
		if k > 0 {
			fn(s, tableLen, buf[:k])
		}
		s.mu.Unlock()
		got += k
		return got < n
	})
}

// eachSlotFromRandom calls fn with the non-empty slots (with keys with an
// expiry, for volatileOnly) from a random one on, in slot order, wrapping,
// until fn returns false or every slot was seen.
func (db *DB) eachSlotFromRandom(volatileOnly bool, fn func(s *Slot) bool) {
	db.eachSlotFrom(rand.IntN(NumSlots), volatileOnly, fn)
}

// eachSlotFrom is eachSlotFromRandom from slot start.
func (db *DB) eachSlotFrom(start int, volatileOnly bool, fn func(s *Slot) bool) {
	for i := 0; i < NumSlots; i++ {
		s := &db.slots[(start+i)%NumSlots]
		var nonEmpty bool
		if volatileOnly {
			nonEmpty = s.volatileCount.Load() > 0
		} else {
			nonEmpty = s.keys.Load() > 0
		}
		if nonEmpty && !fn(s) {
			return
		}
	}
}

// evictRandom evicts a random key (allkeys-random, volatile-random), trying
// the databases in turn from where the last eviction left off.
func (ks *Keyspace) evictRandom(policy EvictionPolicy, hook EvictHook) (int64, bool) {
	st := &ks.evict
	volatileOnly := policy.volatileOnly()
	for range ks.dbs {
		st.nextDB = (st.nextDB + 1) % len(ks.dbs)
		db := ks.existingDB(st.nextDB)
		if db == nil || !db.hasCandidates(policy) {
			continue
		}
		for attempt := 0; attempt < 16; attempt++ {
			found := false
			db.eachSlotFromRandom(volatileOnly, func(s *Slot) bool {
				db.lockSlot(s)
				var e *Entry
				if volatileOnly {
					for v := range s.volatile {
						e = v
						break
					}
				} else {
					e = s.dict.randomEntry(randUint64)
				}
				if e != nil {
					st.randKey, found = append(st.randKey[:0], e.Key()...), true
				}
				s.mu.Unlock()
				return !found
			})
			if !found {
				break
			}
			if freed, ok := ks.evictKey(db, st.randKey, volatileOnly, hook); ok {
				return freed, true
			}
		}
	}
	return 0, false
}

// evictKey deletes key from db if it still exists (with an expiry, for
// volatileOnly), under its slot lock, and tells hook. It returns the bytes
// the entry and its expiry were charged.
func (ks *Keyspace) evictKey(db *DB, key []byte, volatileOnly bool, hook EvictHook) (int64, bool) {
	s, h := db.slotOf(key)
	db.lockSlot(s)
	defer s.mu.Unlock()
	e := s.dict.find(h, key)
	if e == nil || volatileOnly && e.expire == 0 {
		return 0, false
	}
	return ks.evictLinked(db, s, h, e, hook), true
}

// evictCandidate evicts a pool candidate if its entry is still where it
// was sampled (with an expiry, for volatileOnly): looked for by identity
// before anything of it is read, as an entry renamed away belongs to
// another slot's lock.
func (ks *Keyspace) evictCandidate(c *poolEntry, volatileOnly bool, hook EvictHook) (int64, bool) {
	db, s := c.db, c.slot
	db.lockSlot(s)
	defer s.mu.Unlock()
	if c.tableLen != 0 && c.tableLen != len(s.dict.buckets) {
		return 0, false // resized since: its bucket is unknown
	}
	if !s.dict.holds(c.hash, c.e) || volatileOnly && c.e.expire == 0 {
		return 0, false
	}
	return ks.evictLinked(db, s, c.hash, c.e, hook), true
}

// evictLinked unlinks e, which is in s's bucket for h, counts it and
// tells hook; it returns what the entry was charged. Caller holds s's lock.
func (ks *Keyspace) evictLinked(db *DB, s *Slot, h uint64, e *Entry, hook EvictHook) int64 {
	before := s.bytes
	db.unlink(s, h, e)
	freed := before - s.bytes
	ks.evictedKeys.Add(1)
	if hook != nil {
		hook(db, e.keyBytes())
	}
	if !ks.evict.holds(e) {
		ks.recycler.recycle(e) // store/entryalloc.go
	}
	return freed
}

// holds reports whether a pool candidate refers to e, which is not nil: a
// free position's e is nil (EvictOne clears a candidate it takes, and
// insert's caller fills every field of a position). Caller holds mu.
func (st *evictionState) holds(e *Entry) bool {
	for i := range st.pool {
		if st.pool[i].e == e {
			return true
		}
	}
	return false
}

// EvictedKeys returns how many keys eviction has deleted (INFO evicted_keys).
func (ks *Keyspace) EvictedKeys() int64 { return ks.evictedKeys.Load() }
