package store

import (
	"unsafe"

	"github.com/shoal-db/shoal/strconvx"
)

// Type is a value's Redis type.
type Type uint8

const (
	TypeString Type = iota
	TypeList
	TypeSet
	TypeZSet
	TypeHash
	TypeStream
)

// String returns the name TYPE reports.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeHash:
		return "hash"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// Entry is one key of the keyspace. It is 48 bytes, so that a million small
// string keys cost about what Redis's dictEntry + robj + sds cost: the type,
// the encoding bits and a 24-bit LRU/LFU clock share one word.
//
// A short key and its string value live inside the entry's own allocation,
// right after these 48 bytes (allocEntry); the entry then reaches them by
// offset, not by pointer, so the collector finds no pointer to follow in
// most entries (next is nil for a bucket's only entry): marking a million
// keys reads a million objects but follows no pointers out of them. A key or
// value stored apart is reached through kptr / val.
//
// An Entry is only valid while the caller holds the lock of its slot; it must
// not be retained after the lock is released. It must never be copied: the
// inline bytes belong to the allocation it lives in.
//
// next, meta and hash come first: an entry is 16-byte aligned, so the three
// lie in one cache line, and eviction sampling, which walks a bucket's chain
// and reads each entry's clock, costs one cache miss per entry (with meta
// after the key and value pointers, half the entries straddled two lines);
// so does a chain walk, which compares the stored hash before anything else.
// The pointers follow, so the collector scans no further than 32 bytes in.
type Entry struct {
	next *Entry
	meta uint32 // type:4 | flags:4 | lru:24
	// hash is the low 32 bits of the key's hash, set when the entry is
	// linked into its slot's table: chains compare it before the key, and a
	// resize places entries by it without hashing their keys again.
	hash uint32
	// kptr is the key's first byte when the key has an allocation of its
	// own; nil when the klen key bytes follow the entry (or klen is 0).
	kptr *byte
	// val is, by type: string → the first byte of vlen value bytes when the
	// value has an allocation of its own, nil when they follow the inline
	// key (compact), or a *[]byte (mutable, after APPEND/SETRANGE/SETBIT);
	// other types → a pointer to their value structure.
	val    unsafe.Pointer
	klen   uint32
	vlen   uint32
	expire int64 // absolute unix ms; 0 = no expiry
}

const (
	metaTypeMask  = 0xf
	metaMutable   = 1 << 4 // string: val is *[]byte with spare capacity ("raw")
	metaNoIntEnc  = 1 << 5 // string: never reported as "int" (Redis stored it without tryObjectEncoding)
	metaFlagsMask = 0xf0
	lruBits       = 24
	lruMax        = 1<<lruBits - 1
	lruShift      = 8
)

// Key returns the entry's key. The string aliases the entry, whose memory
// is reused once it is evicted (store/entryalloc.go): it may be read under
// the slot lock only; copy it to keep it.
func (e *Entry) Key() string {
	if e.kptr != nil || e.klen == 0 {
		return unsafe.String(e.kptr, e.klen)
	}
	return unsafe.String(e.inline(), e.klen)
}

// keyBytes returns the entry's key as a slice aliasing the keyspace (read
// only, under the slot lock).
func (e *Entry) keyBytes() []byte {
	k := e.Key()
	return unsafe.Slice(unsafe.StringData(k), len(k))
}

// inline returns the first byte after the entry inside its allocation, where
// allocEntry put an inline key and value. Only valid for such an entry.
func (e *Entry) inline() *byte {
	return (*byte)(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{})))
}

// compactData returns the first byte of a compact string's vlen (> 0) value
// bytes: apart, or inline after the key.
func (e *Entry) compactData() *byte {
	if e.val != nil {
		return (*byte)(e.val)
	}
	return (*byte)(unsafe.Add(unsafe.Pointer(e.inline()), e.klen))
}

// setKey gives the entry the key k in an allocation of its own (RENAME's
// destination). An inline value is first pointed at where it is, since its
// place follows the inline key's length.
func (e *Entry) setKey(k []byte) {
	if e.val == nil && e.vlen > 0 && e.isCompactString() {
		e.val = unsafe.Pointer(e.compactData())
	}
	s := string(k)
	e.kptr, e.klen = unsafe.StringData(s), uint32(len(s))
}

// Type returns the value's type.
func (e *Entry) Type() Type { return Type(e.meta & metaTypeMask) }

// ExpireAt returns the absolute expiry in unix ms, 0 if none.
func (e *Entry) ExpireAt() int64 { return e.expire }

// Bytes returns a string value's bytes. The slice aliases the keyspace: it
// may be read under the slot lock only and must not be modified.
func (e *Entry) Bytes() []byte {
	if e.meta&metaMutable != 0 {
		return *(*[]byte)(e.val)
	}
	if e.vlen == 0 || e.meta&metaTypeMask != uint32(TypeString) {
		return nil // a collection's vlen is its memory charge (store/memory.go)
	}
	return unsafe.Slice(e.compactData(), e.vlen)
}

// setString stores b as the entry's string value, copying it into a
// compact allocation.
func (e *Entry) setString(b []byte) {
	if e.meta&(metaTypeMask|metaFlagsMask) == uint32(TypeString) && e.vlen == uint32(len(b)) && len(b) > 0 {
		// A compact string of the same length: overwrite it in place. No
		// allocation and no garbage for the common fixed-size overwrite;
		// safe because nobody keeps Bytes() past the slot lock.
		copy(unsafe.Slice(e.compactData(), e.vlen), b)
		return
	}
	e.meta = e.meta&^(metaTypeMask|metaFlagsMask) | uint32(TypeString)
	e.vlen = uint32(len(b))
	if len(b) == 0 {
		e.val = nil
		return
	}
	c := make([]byte, len(b))
	copy(c, b)
	e.val = unsafe.Pointer(unsafe.SliceData(c))
}

// MutableBytes turns a string value into the mutable ("raw") encoding and
// returns a pointer to its byte slice, which the caller may grow in place.
// Redis does the same on APPEND, SETRANGE and SETBIT, and so does OBJECT
// ENCODING's answer.
func (e *Entry) MutableBytes() *[]byte {
	if e.meta&metaMutable != 0 {
		return (*[]byte)(e.val)
	}
	cur := e.Bytes()
	charged := e.charge()
	b := make([]byte, len(cur), len(cur)+len(cur)/4+8)
	copy(b, cur)
	p := &b
	e.val = unsafe.Pointer(p)
	e.meta |= metaMutable
	// The charge stays what the slot added until the command's Remeasure
	// (store/memory.go).
	e.storeCharge(charged)
	return p
}

// KeepStringEncoding marks a string value that Redis stores without trying
// the integer encoding (INCRBYFLOAT's result), so OBJECT ENCODING reports
// embstr/raw even when the text looks like an integer. The mark lasts until
// the value is next replaced.
func (e *Entry) KeepStringEncoding() { e.meta |= metaNoIntEnc }

// setObject stores a non-string value; the caller stores its charge.
func (e *Entry) setObject(t Type, p unsafe.Pointer) {
	e.meta = e.meta&^(metaTypeMask|metaFlagsMask) | uint32(t)
	e.val = p
	e.vlen = 0
}

// Object returns the value pointer of a non-string entry; its dynamic type
// is fixed by Type().
func (e *Entry) Object() unsafe.Pointer { return e.val }

// Encoding returns what OBJECT ENCODING reports for a string; other types
// answer through their own value structures.
func (e *Entry) Encoding() string {
	if e.Type() != TypeString {
		return ""
	}
	if e.meta&metaMutable != 0 {
		return "raw"
	}
	b := e.Bytes()
	if e.meta&metaNoIntEnc == 0 {
		if _, isInt := strconvx.ParseInt(b); isInt { // what string2ll + ll2string round-trips
			return "int"
		}
	}
	if len(b) <= 44 {
		return "embstr"
	}
	return "raw"
}

// lru returns the entry's 24-bit access clock.
func (e *Entry) lru() uint32 { return e.meta >> lruShift }

func (e *Entry) setLRU(clock uint32) {
	e.meta = e.meta&(1<<lruShift-1) | (clock&lruMax)<<lruShift
}
