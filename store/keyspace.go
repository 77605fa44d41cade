// Package store is shoal's keyspace: one hash table per hash slot (16384 of
// them per database, in cluster and standalone mode alike), the value types,
// expiry and the statistics INFO reports about them.
//
// Concurrency contract: every Slot has a mutex. Methods that take a key
// (Find, SetString, Delete, ...) require the caller to hold the lock of that
// key's slot, taken with DB.Lock / DB.LockSlots; the returned *Entry is valid
// only until the lock is released. Methods that span slots (Size, Flush,
// Scan, ScanSlot, RandomKey, active expiry) take each slot's lock
// themselves, one at a time, and must be called without holding any slot
// lock.
package store

import (
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
)

// NumSlots is the number of hash slots per database.
const NumSlots = slots.Count

// Events receives what the keyspace does on its own (not on behalf of a
// command): keys deleted by expiry; and the two keyspace-notification
// events Redis raises inside the keyspace itself rather than in commands
// (db.c: "new" in dbAdd, "keymiss" in lookupKey). It is called with the slot
// lock held and must not block or call back into the keyspace.
type Events interface {
	KeyExpired(db int, key string)
	// KeyAdded: key was created (it did not exist, or only logically
	// expired). key is only valid during the call.
	KeyAdded(db *DB, key []byte)
	// KeyMissed: a read lookup (one that counts keyspace hits and misses,
	// without LookupNoNotify) found no live key. key is only valid during
	// the call.
	KeyMissed(db *DB, key []byte)
}

// Keyspace is the whole dataset: a fixed number of databases.
type Keyspace struct {
	seed  maphash.Seed
	clock clock.Clock // expiry and LRU time, read in unix ms (Now)
	dbs   []atomic.Pointer[DB]
	newDB sync.Mutex // serialises lazy DB creation
	// dbsUsed is one past the highest database ever used: the ones from
	// it on are nil, and an eviction looks no further (an evicting SET
	// checked all sixteen).
	dbsUsed atomic.Int32

	lruClock atomic.Uint32 // seconds, 24 bits; advanced by Tick
	access   accessPolicy  // LRU clocks or LFU counters (store/access.go)

	dataBytes atomic.Int64 // the charges of every entry (store/memory.go)
	evict     evictionState
	recycler  entryRecycler // evicted entries for reuse (store/entryalloc.go)

	expiredKeys     atomic.Int64
	evictedKeys     atomic.Int64
	expiredStalePct atomic.Int64 // estimated % of logically expired keys, for INFO
	expireCursor    expireCursor // owned by the goroutine calling ActiveExpireCycle

	events Events

	// The running snapshot (store/snapshot.go); snapMu serialises starting
	// one and guards snapGen.
	snap    atomic.Pointer[Snapshot]
	snapMu  sync.Mutex
	snapGen uint32

	replicaMode atomic.Bool // keys expire only by the master's DEL (store/replica.go)
	// replicaExpiring: keys a writable replica's clients gave a TTL
	// (store/replica_expire.go).
	replicaExpiring replicaExpiring
}

// New returns an empty keyspace with n databases. clk (nil: the system
// clock) is the time keys expire by.
func New(n int, clk clock.Clock, events Events) *Keyspace {
	if clk == nil {
		clk = clock.System{}
	}
	ks := &Keyspace{seed: maphash.MakeSeed(), clock: clk, dbs: make([]atomic.Pointer[DB], n), events: events}
	ks.evict.initOrder()
	ks.evict.ahead = make([]sampleAhead, n)
	ks.Tick()
	return ks
}

// NumDBs returns the number of databases.
func (ks *Keyspace) NumDBs() int { return len(ks.dbs) }

// Now returns the keyspace clock's time in unix ms.
func (ks *Keyspace) Now() int64 { return ks.clock.Now().UnixMilli() }

// Tick advances the LRU clock; the server calls it from its cron.
func (ks *Keyspace) Tick() {
	secs := ks.Now() / 1000
	ks.lruClock.Store(uint32(secs) & lruMax)
	ks.access.lfuMinutes.Store(uint32(secs/60) & 65535)
}

// DB returns database i (0 <= i < NumDBs), creating it on first use so that
// sixteen untouched databases cost nothing.
func (ks *Keyspace) DB(i int) *DB {
	if db := ks.dbs[i].Load(); db != nil {
		return db
	}
	ks.newDB.Lock()
	defer ks.newDB.Unlock()
	if db := ks.dbs[i].Load(); db != nil {
		return db
	}
	db := &DB{ks: ks}
	db.id.Store(int32(i))
	ks.dbs[i].Store(db)
	if int32(i) >= ks.dbsUsed.Load() {
		ks.dbsUsed.Store(int32(i) + 1) // under newDB: no other writer
	}
	return db
}

// existingDB returns database i or nil if it was never used.
func (ks *Keyspace) existingDB(i int) *DB { return ks.dbs[i].Load() }

// SwapDB exchanges databases a and b, as SWAPDB does: clients that have
// selected a see b's data from their next command on.
func (ks *Keyspace) SwapDB(a, b int) {
	da, db := ks.DB(a), ks.DB(b)
	ks.newDB.Lock()
	defer ks.newDB.Unlock()
	da.id.Store(int32(b))
	db.id.Store(int32(a))
	ks.dbs[a].Store(db)
	ks.dbs[b].Store(da)
}

// FlushAll empties every database and returns the number of keys removed.
func (ks *Keyspace) FlushAll() int64 {
	var n int64
	for i := range ks.dbs {
		if db := ks.existingDB(i); db != nil {
			n += db.Flush()
		}
	}
	return n
}

// ExpiredKeys returns how many keys expiry has deleted (INFO expired_keys).
func (ks *Keyspace) ExpiredKeys() int64 { return ks.expiredKeys.Load() }

// ResetStats zeroes the counters CONFIG RESETSTAT resets.
func (ks *Keyspace) ResetStats() {
	ks.expiredKeys.Store(0)
	ks.evictedKeys.Store(0)
	for i := range ks.dbs {
		if db := ks.existingDB(i); db != nil {
			for s := range db.slots {
				db.slots[s].hits.Store(0)
				db.slots[s].misses.Store(0)
			}
		}
	}
}

// DBStats is one database's line in INFO keyspace.
type DBStats struct {
	ID      int
	Keys    int64
	Expires int64
}

// Stats returns the non-empty databases' key counts, and the total
// keyspace hits and misses.
func (ks *Keyspace) Stats() (dbs []DBStats, hits, misses int64) {
	for i := range ks.dbs {
		db := ks.existingDB(i)
		if db == nil {
			continue
		}
		var keys, expires int64
		for s := range db.slots {
			sl := &db.slots[s]
			keys += sl.keys.Load()
			expires += sl.volatileCount.Load()
			hits += sl.hits.Load()
			misses += sl.misses.Load()
		}
		if keys > 0 {
			dbs = append(dbs, DBStats{ID: i, Keys: keys, Expires: expires})
		}
	}
	return dbs, hits, misses
}

func randUint64() uint64 { return rand.Uint64() }
