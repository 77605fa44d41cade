package store

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shoal-db/shoal/slots"
)

// Slot is one hash slot's share of a database.
//
// Its fields are laid out for the cache: a command or an eviction that
// visits a slot reads or writes mu, keys, bytes and the dict's header,
// which fill the slot's first cache line, and the dict's inline buckets,
// its second; the fields that only expiry, replicas, snapshots and
// keyspace_hits read share the third. Slots are slotAlign bytes long and
// start at a multiple of it in a DB, so that each slot is exactly these
// lines: an evicting SET visits three or four slots (its own, the sampled
// ones, the candidate's), and a 168-byte slot at any offset spanned three
// or four lines each, whose misses eviction sampling waited on
// (TestSlotLayout).
type Slot struct {
	mu sync.Mutex
	// keys mirrors dict.count, readable without the lock (INFO, DBSIZE,
	// eviction's skipping of empty slots).
	keys  atomic.Int64
	bytes int64 // the charges of its entries (store/memory.go)
	dict  dict

	volatile map[*Entry]struct{} // entries with an expiry, for active expiry sampling
	// Mirrors readable without the lock (INFO, DBSIZE).
	volatileCount atomic.Int64
	hits, misses  atomic.Int64

	seeExpired bool   // replica: the master link is looking (store/replica.go)
	snapGen    uint32 // the last snapshot that captured it (store/snapshot.go)
	_          [slotPad]byte
}

// slotAlign is a cache line; slotPad rounds a Slot up to three of them.
const (
	slotAlign = 64
	slotPad   = 3*slotAlign - 168
)

// DB is one numbered database: NumSlots slot tables. The array is embedded so
// that a database is one allocation whose untouched pages cost no memory.
// The allocation is page-aligned (it is far larger than a page), and the
// header is padded to a cache line, so that every slot starts on one.
type DB struct {
	ks    *Keyspace
	id    atomic.Int32 // the current number; SWAPDB changes it without slot locks
	bytes atomic.Int64 // the charges of its entries (store/memory.go)
	// volatileKeys counts its keys with an expiry, so that volatile eviction
	// skips a database without them in one load.
	volatileKeys atomic.Int64
	_            [slotAlign - 32]byte
	slots        [NumSlots]Slot
}

// ID returns the database's current number (it changes with SWAPDB).
func (db *DB) ID() int { return int(db.id.Load()) }

// Keyspace returns the keyspace the database belongs to.
func (db *DB) Keyspace() *Keyspace { return db.ks }

// Lock locks one slot.
func (db *DB) Lock(slot uint16) { db.lockSlot(&db.slots[slot]) }

// TryLock locks one slot if nobody holds it, without waiting: a holder of
// other slots may take one out of the ascending order this way without
// risking a deadlock (node/script_locked.go).
func (db *DB) TryLock(slot uint16) bool { return db.tryLockSlot(&db.slots[slot]) }

// Unlock unlocks one slot.
func (db *DB) Unlock(slot uint16) { db.slots[slot].mu.Unlock() }

// LockSlots locks the given slots, which must be sorted ascending and free of
// duplicates: one global order means no deadlock between multi-key commands.
func (db *DB) LockSlots(s []uint16) {
	for _, x := range s {
		db.lockSlot(&db.slots[x])
	}
}

// UnlockSlots unlocks what LockSlots locked.
func (db *DB) UnlockSlots(s []uint16) {
	for i := len(s) - 1; i >= 0; i-- {
		db.slots[s[i]].mu.Unlock()
	}
}

func (db *DB) slotOf(key []byte) (*Slot, uint64) {
	return &db.slots[slots.KeySlot(key)], hashKey(db.ks.seed, key)
}

// slotIn is slotOf for a key whose hash slot the caller computed: the
// dispatcher hashes a command's keys to route and lock them, and the
// ...InSlot operations take that slot instead of hashing the key again
// (command.DB passes it). A wrong slot would file the key under another
// slot's table and lock, so race builds (the tests) check it.
func (db *DB) slotIn(slot uint16, key []byte) (*Slot, uint64) {
	return db.slotTable(slot, key), hashKey(db.ks.seed, key)
}

// slotTable is slotIn without the key's hash, for an operation that does not
// look the key up.
func (db *DB) slotTable(slot uint16, key []byte) *Slot {
	if checkSlots && slots.KeySlot(key) != slot {
		panic(fmt.Sprintf("store: key %q is in slot %d, not %d", key, slots.KeySlot(key), slot))
	}
	return &db.slots[slot]
}

// LookupFlags change what a lookup does besides finding the key.
type LookupFlags uint8

const (
	// LookupNoTouch leaves the LRU clock alone (OBJECT, TYPE-less peeks).
	LookupNoTouch LookupFlags = 1 << iota
	// LookupNoStats does not count a keyspace hit or miss.
	LookupNoStats
	// LookupNoExpire does not delete a logically expired key (it is still
	// reported missing).
	LookupNoExpire
	// LookupNoNotify raises no keymiss event for a missing key (Redis's
	// LOOKUP_NONOTIFY: OBJECT counts the miss but raises nothing).
	LookupNoNotify
	// LookupExpired finds a logically expired key too, and leaves it
	// (Redis's dictFind, as DEBUG OBJECT and MEMORY USAGE look keys up).
	LookupExpired
)

// Find returns the live entry for key, or nil. A logically expired key is
// deleted on the way (passive expiry) and reported missing. It counts a
// keyspace hit or miss and touches the LRU clock. Caller holds the slot lock.
func (db *DB) Find(key []byte) *Entry { return db.Lookup(key, 0) }

// Lookup is Find with flags.
func (db *DB) Lookup(key []byte, flags LookupFlags) *Entry {
	return db.LookupInSlot(slots.KeySlot(key), key, flags)
}

// LookupInSlot is Lookup for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) LookupInSlot(slot uint16, key []byte, flags LookupFlags) *Entry {
	s, h := db.slotIn(slot, key)
	e := s.dict.find(h, key)
	if e != nil && e.expire != 0 && flags&LookupExpired == 0 && db.ks.Now() > e.expire && !db.keepExpired(s) {
		if flags&LookupNoExpire == 0 && !db.ks.replicaMode.Load() {
			db.expireEntry(s, h, e)
		}
		e = nil
	}
	if flags&LookupNoStats == 0 {
		if e != nil {
			s.hits.Add(1)
		} else {
			s.misses.Add(1)
			if flags&LookupNoNotify == 0 && db.ks.events != nil {
				db.ks.events.KeyMissed(db, key)
			}
		}
	}
	if e != nil && flags&LookupNoTouch == 0 {
		db.ks.touch(e)
	}
	return e
}

// Exists reports whether key is live, without counting stats or touching it.
func (db *DB) Exists(key []byte) bool {
	return db.Lookup(key, LookupNoTouch|LookupNoStats) != nil
}

func (db *DB) expireEntry(s *Slot, h uint64, e *Entry) {
	key := e.Key()
	db.unlink(s, h, e)
	db.ks.expiredKeys.Add(1)
	if db.ks.events != nil {
		db.ks.events.KeyExpired(db.ID(), key)
	}
}

// unlink removes e, which is linked in s under hash h (or a hash with the
// same bucket), and takes its charges off.
func (db *DB) unlink(s *Slot, h uint64, e *Entry) {
	s.dict.removeEntry(h, e)
	s.keys.Store(int64(s.dict.count))
	db.addCharge(s, -e.charge())
	if s.dict.count == 0 {
		db.addCharge(s, -SlotCharge)
	}
	if e.expire != 0 {
		db.dropVolatile(s, e)
	}
}

// addVolatile enters e, which had no expiry, in its slot's volatile map.
func (db *DB) addVolatile(s *Slot, e *Entry) {
	if s.volatile == nil {
		s.volatile = make(map[*Entry]struct{})
	}
	s.volatile[e] = struct{}{}
	s.volatileCount.Store(int64(len(s.volatile)))
	db.volatileKeys.Add(1)
	db.addCharge(s, VolatileCharge)
}

func (db *DB) dropVolatile(s *Slot, e *Entry) {
	delete(s.volatile, e)
	s.volatileCount.Store(int64(len(s.volatile)))
	db.volatileKeys.Add(-1)
	db.addCharge(s, -VolatileCharge)
}

// newEntry links a fresh entry for key, which must not exist. A non-nil
// val is its string value (stored with the key, store/entryalloc.go).
func (db *DB) newEntry(s *Slot, h uint64, key, val []byte) *Entry {
	e := db.ks.recycler.alloc(key, val)
	db.ks.initAccess(e)
	s.dict.insert(h, e)
	s.keys.Store(int64(s.dict.count))
	db.addCharge(s, e.charge())
	if s.dict.count == 1 {
		db.addCharge(s, SlotCharge)
	}
	if db.ks.events != nil {
		db.ks.events.KeyAdded(db, key)
	}
	return e
}

// SetString stores a string value, replacing any existing value of any type.
// With keepTTL the existing expiry stays, else it is cleared. It returns the
// entry. Caller holds the slot lock.
func (db *DB) SetString(key, val []byte, keepTTL bool) *Entry {
	return db.SetStringInSlot(slots.KeySlot(key), key, val, keepTTL)
}

// SetStringInSlot is SetString for a key whose hash slot the caller has
// computed (slotIn).
func (db *DB) SetStringInSlot(slot uint16, key, val []byte, keepTTL bool) *Entry {
	s, h := db.slotIn(slot, key)
	e := s.dict.find(h, key)
	if e != nil && e.expire != 0 && db.ks.Now() > e.expire && !db.keepExpired(s) {
		if db.ks.replicaMode.Load() {
			db.unlink(s, h, e) // replaced: a replica never expires keys itself
		} else {
			db.expireEntry(s, h, e)
		}
		e = nil
	}
	if e == nil {
		return db.newEntry(s, h, key, val)
	}
	if !keepTTL && e.expire != 0 {
		db.dropVolatile(s, e)
		e.expire = 0
	}
	before := e.charge()
	e.setString(val)
	db.addCharge(s, e.charge()-before)
	db.ks.touch(e) // Redis's SET looks the key up for writing, then keeps an LFU counter
	return e
}

// SetObject stores a non-string value pointer of type t, replacing any
// existing value and clearing its expiry. Caller holds the slot lock.
func (db *DB) SetObject(key []byte, t Type, p unsafe.Pointer) *Entry {
	return db.SetObjectInSlot(slots.KeySlot(key), key, t, p)
}

// SetObjectInSlot is SetObject for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) SetObjectInSlot(slot uint16, key []byte, t Type, p unsafe.Pointer) *Entry {
	s, h := db.slotIn(slot, key)
	e := s.dict.find(h, key)
	if e == nil {
		e = db.newEntry(s, h, key, nil)
	} else if e.expire != 0 {
		db.dropVolatile(s, e)
		e.expire = 0
	}
	before := e.charge()
	e.setObject(t, p)
	e.storeCharge(e.measure())
	db.addCharge(s, e.charge()-before)
	return e
}

// Delete removes key if it is live and reports whether it did. Caller holds
// the slot lock.
func (db *DB) Delete(key []byte) bool {
	return db.DeleteInSlot(slots.KeySlot(key), key)
}

// DeleteInSlot is Delete for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) DeleteInSlot(slot uint16, key []byte) bool {
	s, h := db.slotIn(slot, key)
	e := s.dict.find(h, key)
	if e == nil {
		return false
	}
	if e.expire != 0 && db.ks.Now() > e.expire && !db.keepExpired(s) {
		if !db.ks.replicaMode.Load() {
			db.expireEntry(s, h, e)
		}
		return false
	}
	db.unlink(s, h, e)
	return true
}

// SetExpire sets e's absolute expiry (unix ms; 0 removes it). e must belong
// to key's slot, whose lock the caller holds.
func (db *DB) SetExpire(key []byte, e *Entry, at int64) {
	db.SetExpireInSlot(slots.KeySlot(key), key, e, at)
}

// SetExpireInSlot is SetExpire for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) SetExpireInSlot(slot uint16, key []byte, e *Entry, at int64) {
	s := db.slotTable(slot, key)
	if at == 0 {
		if e.expire != 0 {
			db.dropVolatile(s, e)
			e.expire = 0
		}
		return
	}
	if e.expire == 0 {
		db.addVolatile(s, e)
	}
	e.expire = at
}

// IsExpired reports whether a unix-ms deadline has passed on this
// keyspace's clock (strictly, as Redis's keyIsExpired).
func (db *DB) IsExpired(at int64) bool { return at != 0 && db.ks.Now() > at }

// Size returns the number of keys, counting logically expired ones not yet
// deleted, as DBSIZE does.
func (db *DB) Size() int64 {
	var n int64
	for i := range db.slots {
		n += db.slots[i].keys.Load()
	}
	return n
}

// SlotSize returns the number of keys in one slot.
func (db *DB) SlotSize(slot uint16) int64 { return db.slots[slot].keys.Load() }

// Flush empties the database, one slot at a time, and returns how many keys
// it removed.
func (db *DB) Flush() int64 {
	var n int64
	for i := range db.slots {
		n += db.FlushSlot(uint16(i))
	}
	return n
}

// FlushSlot deletes every key of one slot and returns how many it deleted
// (a cluster node that lost the slot). It takes the slot's lock itself.
func (db *DB) FlushSlot(slot uint16) int64 {
	s := &db.slots[slot]
	if s.keys.Load() == 0 {
		return 0
	}
	db.lockSlot(s)
	defer s.mu.Unlock()
	return db.clearSlot(s)
}

// clearSlot drops every entry of s, whose lock the caller holds, and returns
// how many there were.
func (db *DB) clearSlot(s *Slot) int64 {
	n := int64(s.dict.count)
	s.dict.clear()
	db.volatileKeys.Add(-int64(len(s.volatile)))
	s.volatile = nil
	s.keys.Store(0)
	s.volatileCount.Store(0)
	db.addCharge(s, -s.bytes)
	return n
}

// Scan continues a SCAN at cursor and calls fn for each live key found,
// under that key's slot lock, until about count keys were visited; it
// returns the next cursor (0 = done). The cursor's low 14 bits are the slot,
// the rest the slot table's reverse-binary cursor, so it stays valid while
// tables resize between calls. A logically expired key that match accepts
// (nil: every key) is deleted on the way, as Redis's SCAN expires the keys
// it would otherwise return (passive expiry: an `expired` event, a DEL in
// the replication stream).
func (db *DB) Scan(cursor uint64, count int, match func(key string) bool, fn func(e *Entry)) uint64 {
	slot := cursor & (NumSlots - 1)
	inner := cursor >> 14
	visited := 0
	count = min(count, 1<<30) // keeps count*10 from overflowing
	maxBuckets := count * 10
	buckets := 0
	var expired []*Entry // logically expired keys met in one slot
	for slot < NumSlots {
		s := &db.slots[slot]
		if s.keys.Load() == 0 {
			slot++
			inner = 0
			continue
		}
		db.lockSlot(s)
		now := db.ks.Now()
		expired = expired[:0]
		for {
			inner = s.dict.scan(inner, func(e *Entry) {
				if e.expire != 0 && now > e.expire {
					if match == nil || match(e.Key()) {
						expired = append(expired, e)
					}
					return
				}
				visited++
				fn(e)
			})
			buckets++
			if inner == 0 || visited >= count || buckets >= maxBuckets {
				break
			}
		}
		// Deleted after the walk, not during it: the bucket chains must not
		// change under the table's scan.
		if len(expired) > 0 && !db.keepExpired(s) && !db.ks.replicaMode.Load() {
			for _, e := range expired {
				db.expireEntry(s, hashKey(db.ks.seed, e.keyBytes()), e)
			}
		}
		s.mu.Unlock()
		if inner == 0 {
			slot++
		}
		if visited >= count || buckets >= maxBuckets {
			break
		}
	}
	if slot >= NumSlots {
		return 0
	}
	return inner<<14 | slot
}

// ScanSlot visits every live key of one slot under its lock (CLUSTER
// GETKEYSINSLOT, KEYS); fn returns false to stop.
func (db *DB) ScanSlot(slot uint16, fn func(e *Entry) bool) {
	s := &db.slots[slot]
	if s.keys.Load() == 0 {
		return
	}
	db.lockSlot(s)
	defer s.mu.Unlock()
	db.EachInSlot(slot, fn)
}

// RandomKey returns a random live key, or "" and false if the database is
// empty. Slots are sampled at random (weighted by being non-empty), then a
// random entry of the slot; expired keys met on the way are deleted.
func (db *DB) RandomKey() (string, bool) {
	total := db.Size()
	if total == 0 {
		return "", false
	}
	for tries := 0; tries < 100; tries++ {
		// Pick the k-th key overall, then find its slot: uniform over slots
		// weighted by their sizes.
		k := int64(randUint64() % uint64(total))
		var slot int
		for slot = 0; slot < NumSlots; slot++ {
			n := db.slots[slot].keys.Load()
			if k < n {
				break
			}
			k -= n
		}
		if slot == NumSlots {
			total = db.Size()
			if total == 0 {
				return "", false
			}
			continue
		}
		s := &db.slots[slot]
		db.lockSlot(s)
		e := s.dict.randomEntry(randUint64)
		if e == nil {
			s.mu.Unlock()
			continue
		}
		if e.expire != 0 && db.ks.Now() > e.expire {
			db.expireEntry(s, hashKey(db.ks.seed, e.keyBytes()), e)
			s.mu.Unlock()
			total = db.Size()
			if total == 0 {
				return "", false
			}
			continue
		}
		key := strings.Clone(e.Key()) // the entry's bytes may be reused once unlocked (store/entryalloc.go)
		s.mu.Unlock()
		return key, true
	}
	return "", false
}
