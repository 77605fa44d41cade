package store

import (
	"unsafe"

	"github.com/shoal-db/shoal/slots"
)

// SetRawString stores b as key's string value in the raw (mutable)
// encoding, taking ownership of b: the caller must not keep using b except
// through the entry. Redis stores a freshly built sds object this way
// (BITOP's result, a new SETBIT/BITFIELD target, PFADD's new HyperLogLog), so
// OBJECT ENCODING reports "raw" whatever the value's length or content. With
// keepTTL the existing expiry stays, else it is cleared. Caller holds the
// slot lock.
func (db *DB) SetRawString(key, b []byte, keepTTL bool) *Entry {
	return db.SetRawStringInSlot(slots.KeySlot(key), key, b, keepTTL)
}

// SetRawStringInSlot is SetRawString for a key whose hash slot the caller
// computed (slotIn).
func (db *DB) SetRawStringInSlot(slot uint16, key, b []byte, keepTTL bool) *Entry {
	e := db.SetStringInSlot(slot, key, nil, keepTTL)
	before := e.charge()
	p := new([]byte)
	*p = b
	e.val = unsafe.Pointer(p)
	e.meta |= metaMutable
	e.storeCharge(e.measure())
	db.addCharge(&db.slots[slot], e.charge()-before)
	return e
}
