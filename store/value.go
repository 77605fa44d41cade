package store

import (
	"crypto/sha1"
	"unsafe"
)

// Value is implemented by every non-string value type (lists, hashes, sets,
// sorted sets, ...). An Entry stores such a value as a bare pointer to keep
// the entry at 48 bytes; Entry.Value turns it back into the interface
// through the type's constructor in valueKinds.
//
// All methods run under the slot lock of the key holding the value.
type Value interface {
	// Type is the value's Redis type.
	Type() Type
	// Encoding is what OBJECT ENCODING reports ("listpack", "hashtable", ...).
	Encoding() string
	// Clone returns a deep copy (COPY).
	Clone() Value
	// MemoryUsage estimates the bytes the value structure occupies, looking
	// at no more than samples elements of nested collections (0 = all).
	MemoryUsage(samples int) int64
	// Digest adds the value's contents to d the way Redis's
	// xorObjectDigest does for the type (DEBUG DIGEST, DEBUG DIGEST-VALUE).
	Digest(d Digester)
	// Len is the number of elements.
	Len() int

	// pointer returns the value's address, what the Entry stores.
	pointer() unsafe.Pointer
}

// Digester accumulates a DEBUG DIGEST value with Redis's two primitives.
type Digester interface {
	// Mix adds data in order: digest = SHA1(digest XOR SHA1(data))
	// (mixDigest).
	Mix(data []byte)
	// Xor adds data without regard to order: digest ^= SHA1(data)
	// (xorDigest).
	Xor(data []byte)
}

// DigestElement adds one unordered element made of parts, as Redis's
// xorObjectDigest does for hash fields and sorted-set members: a zeroed
// element digest is mixed with each part in order, then Xor-ed in.
func DigestElement(d Digester, parts ...[]byte) {
	var e [sha1.Size]byte
	for _, p := range parts {
		h := sha1.Sum(p)
		for i := range e {
			e[i] ^= h[i]
		}
		e = sha1.Sum(e[:])
	}
	d.Xor(e[:])
}

// valueKinds converts a stored pointer back into its Value, by type. Each
// value type's file fills its row from an init function; the table is never
// written after package initialisation.
var valueKinds [metaTypeMask + 1]func(unsafe.Pointer) Value

// Value returns a non-string entry's value, or nil for strings.
func (e *Entry) Value() Value {
	t := e.Type()
	if t == TypeString || valueKinds[t] == nil {
		return nil
	}
	return valueKinds[t](e.val)
}

// SetValue stores v under key, replacing any existing value and clearing its
// expiry. Caller holds the slot lock.
func (db *DB) SetValue(key []byte, v Value) *Entry {
	return db.SetObject(key, v.Type(), v.pointer())
}

// SetValueInSlot is SetValue for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) SetValueInSlot(slot uint16, key []byte, v Value) *Entry {
	return db.SetObjectInSlot(slot, key, v.Type(), v.pointer())
}

// EncodingOf returns the OBJECT ENCODING name of e's value.
func EncodingOf(e *Entry) string {
	if e.Type() == TypeString {
		return e.Encoding()
	}
	if v := e.Value(); v != nil {
		return v.Encoding()
	}
	return "unknown"
}
