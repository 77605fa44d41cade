package store

import (
	"unsafe"
)

// This file holds the keyspace operations of the generic key commands
// (RENAME, MOVE, COPY, OBJECT IDLETIME): they relink or duplicate whole
// entries, which needs the slot tables' internals.

// LockOrderLess reports whether a's slot locks must be taken before b's
// when one goroutine holds locks in two databases (MOVE, COPY ... DB). It is
// THE order between databases; within one database slots are locked in
// ascending slot order.
//
// The order is by the DB objects' identity (their addresses), not by their
// numbers: SWAPDB renumbers databases without taking any slot lock, so two
// commands that read the numbers on either side of a SWAPDB could otherwise
// lock the same pair in opposite orders and deadlock. Go's heap objects do
// not move, and a DB object lives as long as its keyspace.
func LockOrderLess(a, b *DB) bool {
	return uintptr(unsafe.Pointer(a)) < uintptr(unsafe.Pointer(b))
}

// liveEntry finds key's live entry and its hash, deleting it when it has
// logically expired. It neither counts stats nor touches the LRU clock.
func (db *DB) liveEntry(key []byte) (*Slot, uint64, *Entry) {
	s, h := db.slotOf(key)
	e := s.dict.find(h, key)
	if e != nil && e.expire != 0 && db.ks.Now() > e.expire && !db.keepExpired(s) {
		if !db.ks.replicaMode.Load() {
			db.expireEntry(s, h, e)
		}
		e = nil
	}
	return s, h, e
}

// relink inserts e, already unlinked from its former slot table, under key
// into db (whose key must be absent), keeping its value, expiry and LRU.
func (db *DB) relink(e *Entry, key []byte) {
	s, h := db.slotOf(key)
	if e.Key() != string(key) {
		e.setKey(key)
	}
	e.next = nil
	s.dict.insert(h, e)
	s.keys.Store(int64(s.dict.count))
	db.addCharge(s, e.charge())
	if s.dict.count == 1 {
		db.addCharge(s, SlotCharge)
	}
	if e.expire != 0 {
		db.addVolatile(s, e)
	}
	if db.ks.events != nil {
		db.ks.events.KeyAdded(db, key) // Redis's dbAdd raises "new"
	}
}

// Rename moves src's value, expiry and LRU clock to dst, replacing whatever
// dst held (RENAME). It returns false, changing nothing, when src does not
// exist. src == dst is a no-op that reports whether the key exists. The
// caller holds both keys' slot locks.
func (db *DB) Rename(src, dst []byte) bool {
	s, h, e := db.liveEntry(src)
	if e == nil {
		return false
	}
	if string(src) == string(dst) {
		return true
	}
	db.Delete(dst)
	db.unlink(s, h, e)
	db.relink(e, dst)
	return true
}

// MoveTo moves key with its expiry from db to dst (MOVE). It returns false,
// changing nothing, when key is missing from db or already present in dst.
// The caller holds key's slot lock in both databases, taken in the order
// LockOrderLess gives. dst must belong to the same keyspace.
func (db *DB) MoveTo(dst *DB, key []byte) bool {
	if dst == db || dst.ks != db.ks {
		return false
	}
	s, h, e := db.liveEntry(key)
	if e == nil {
		return false
	}
	if _, _, d := dst.liveEntry(key); d != nil {
		return false
	}
	db.unlink(s, h, e)
	dst.relink(e, key)
	return true
}

// CopyTo stores a deep copy of src's value, with the same expiry, under
// dstKey in dst (COPY; dst may be db itself). If dstKey exists it is
// replaced when replace is set, else nothing happens. It reports whether it
// copied. The caller holds the slot locks of src in db and of
// dstKey in dst (cross-database: in LockOrderLess order). src and dstKey
// must differ when dst == db.
func (db *DB) CopyTo(dst *DB, src, dstKey []byte, replace bool) bool {
	_, _, e := db.liveEntry(src)
	if e == nil {
		return false
	}
	if dst == db && string(src) == string(dstKey) {
		return false
	}
	if ds, dh, d := dst.liveEntry(dstKey); d != nil {
		if !replace {
			return false
		}
		// Redis deletes the old dstKey and adds the copy (a "new" event).
		dst.unlink(ds, dh, d)
	}
	if e.Type() == TypeString {
		mutable := e.meta&metaMutable != 0
		expire := e.expire
		// SetString copies the bytes before it replaces dstKey's value.
		n := dst.SetString(dstKey, e.Bytes(), false)
		if mutable {
			n.MutableBytes() // keep the "raw" encoding, as Redis's dupStringObject does
		}
		if expire != 0 {
			dst.SetExpire(dstKey, n, expire)
		}
		return true
	}
	expire := e.expire
	n := dst.SetValue(dstKey, e.Value().Clone())
	dst.ks.initAccess(n)
	if expire != 0 {
		dst.SetExpire(dstKey, n, expire)
	}
	return true
}

// IdleMillis estimates how long ago e was last accessed, from the 24-bit
// LRU clock (seconds resolution) as Redis's estimateObjectIdleTime does,
// including one wrap-around of the clock (about 194 days).
func (ks *Keyspace) IdleMillis(e *Entry) int64 {
	now := int64(ks.lruClock.Load())
	then := int64(e.lru())
	if now >= then {
		return (now - then) * 1000
	}
	return (now + (lruMax - then)) * 1000
}

// SetIdleMillis back-dates e's LRU clock so that IdleMillis reports about
// ms (RESTORE ... IDLETIME, DEBUG helpers). Caller holds e's slot lock.
func (ks *Keyspace) SetIdleMillis(e *Entry, ms int64) {
	secs := ms / 1000
	if secs < 0 {
		secs = 0
	}
	now := int64(ks.lruClock.Load())
	secs %= lruMax + 1
	clock := now - secs
	if clock < 0 {
		clock += lruMax
	}
	e.setLRU(uint32(clock))
}
