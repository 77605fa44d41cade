package store

import (
	"sync"
	"unsafe"
)

// An entry, its key and a short string value share one allocation, as
// Redis's embstr keeps a short value inside its object: a lookup then
// touches one object (the key compare reads the cache line the entry
// header is in, the value follows it) instead of three, and the GC marks
// one object per key instead of three. The trailing byte array sizes are
// chosen so that 48-byte entry + bytes lands exactly on a Go size class
// (64, 80, 96, 112, 128): a million keys cost no more memory than three
// separate allocations did.
//
// The entry finds the array by offset (Entry.inline): kptr and val stay nil,
// so the collector has no pointer to follow out of the entry. A value later
// replaced by one of another length gets an allocation of its own
// (setString), as before.
type entryInline[B any] struct {
	e Entry
	b B // a byte array: [16]byte, [32]byte, ... (allocInline)
}

// allocInline allocates an entry followed by the byte array B and returns
// both.
func allocInline[B any]() (*Entry, []byte) {
	x := new(entryInline[B])
	return &x.e, unsafe.Slice((*byte)(unsafe.Pointer(&x.b)), unsafe.Sizeof(x.b))
}

// entryInlineMax is the most key+value bytes kept inside the entry: up to
// the 256-byte size class. A 16-byte key with a 100-byte value (a typical
// cache entry, redis-benchmark's) is one 176-byte object instead of three
// objects of 48+16+112 bytes: the same memory, a third of the allocations,
// and a third of the objects the collector marks — which is most of what a
// write costs when it evicts (the collector runs every few MB of writes
// under a GOMEMLIMIT that follows maxmemory).
const entryInlineMax = 256 - int(unsafe.Sizeof(Entry{}))

// smallSizeClass is the Go allocator's size class for an object of n bytes
// up to 128 (runtime/sizeclasses.go), 0 for none.
func smallSizeClass(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 32:
		return (n + 7) &^ 7
	case n <= 48:
		return 48
	default:
		return (n + 15) &^ 15
	}
}

// allocEntry returns a zero entry with key set and, when val is not nil,
// the string value val, both inside the entry's allocation when they fit
// and that costs no more bytes than separate allocations would (a key of up
// to 8 bytes with no value is cheaper on its own: 48 + 8 < 64).
func allocEntry(key, val []byte) *Entry {
	n := len(key) + len(val)
	if !inlineFits(len(key), len(val)) {
		e := &Entry{}
		if len(key) > 0 {
			k := string(key)
			e.kptr, e.klen = unsafe.StringData(k), uint32(len(k))
		}
		if val != nil {
			e.setString(val)
		}
		return e
	}
	if n == 0 {
		return &Entry{}
	}
	var e *Entry
	var b []byte
	// The array fills the entry's allocation up to its size class.
	switch inlineArraySize(n) {
	case 16:
		e, b = allocInline[[16]byte]()
	case 32:
		e, b = allocInline[[32]byte]()
	case 48:
		e, b = allocInline[[48]byte]()
	case 64:
		e, b = allocInline[[64]byte]()
	case 80:
		e, b = allocInline[[80]byte]()
	case 96:
		e, b = allocInline[[96]byte]()
	case 112:
		e, b = allocInline[[112]byte]()
	case 128:
		e, b = allocInline[[128]byte]()
	case 144:
		e, b = allocInline[[144]byte]()
	case 160:
		e, b = allocInline[[160]byte]()
	case 176:
		e, b = allocInline[[176]byte]()
	case 192:
		e, b = allocInline[[192]byte]()
	default:
		e, b = allocInline[[entryInlineMax]byte]()
	}
	fillInline(e, b, key, val)
	return e
}

// inlineArraySize is the byte array allocInline gives n key+value bytes:
// what fills the entry's allocation up to its size class (16, 32, ...
// entryInlineMax).
func inlineArraySize(n int) int { return int(AllocSize(entrySize+int64(n)) - entrySize) }

// fillInline copies key and val into the entry's array b and records their
// lengths: the entry reads them at its inline offset. e's other fields must
// be zero.
func fillInline(e *Entry, b, key, val []byte) {
	copy(b, key)
	e.klen = uint32(len(key))
	if len(val) > 0 {
		copy(b[len(key):], val)
		e.vlen = uint32(len(val))
	}
	// e.meta's type bits are TypeString (0) already; kptr and val stay nil:
	// key and value are read at the entry's inline offset.
}

// Evicted entries are reused. Under evicting writes every SET of a new key
// frees one entry and allocates another, most often of the same size class:
// left to the collector, that garbage made it mark the whole keyspace every
// few MB written (its cycles and the allocations' assists were a fifth of
// the server's CPU). Eviction hands an entry whose key and value still lie
// in its own array to the keyspace's recycler; the next new key of that
// array size takes it instead of allocating.
//
// Only eviction recycles, because only there nothing can still refer to the
// entry: nothing keeps an entry, its key or its value past the slot lock
// (KEYS, SCAN and CLUSTER GETKEYSINSLOT copy the keys they collect), the
// eviction hook's key is valid only during the call, and eviction skips an
// entry the eviction pool holds another copy of (a stale candidate is found
// by identity, which a recycled entry must not match). An entry deleted any
// other way is left to the collector. The pools are sync.Pools: per-P, no
// lock, and the collector empties them, so entries of a size class that new
// keys no longer use do not stay.

// inlineClasses is how many array sizes allocInline has: 16, 32, ...
// entryInlineMax bytes.
const inlineClasses = entryInlineMax / 16

// entryRecycler holds evicted inline entries, by array size.
type entryRecycler struct {
	pools [inlineClasses]sync.Pool
}

// inlineArray returns the size of the array allocated with e when e is a
// compact string whose key and value both still lie in it, else 0. Both are
// read at the entry's inline offset exactly when kptr and val are nil: a key
// or value of its own (allocated alone, renamed, its value replaced by one
// of another length or made mutable) is reached by pointer. While both are
// inline, klen and vlen are what the array was sized for (allocEntry).
func (e *Entry) inlineArray() int {
	if !e.isCompactString() || e.klen == 0 || e.vlen == 0 || e.kptr != nil || e.val != nil {
		return 0
	}
	return inlineArraySize(int(e.klen) + int(e.vlen))
}

// recycle keeps e, unlinked and unreachable from anything else, for reuse
// when it is an inline entry.
func (r *entryRecycler) recycle(e *Entry) {
	size := e.inlineArray()
	if size == 0 {
		return
	}
	*e = Entry{} // the stored hash bits too: insert sets them anew
	r.pools[size/16-1].Put(e)
}

// alloc is allocEntry, reusing a recycled entry of the right array size
// when there is one.
func (r *entryRecycler) alloc(key, val []byte) *Entry {
	n := len(key) + len(val)
	if n == 0 || !inlineFits(len(key), len(val)) {
		return allocEntry(key, val)
	}
	size := inlineArraySize(n)
	x, _ := r.pools[size/16-1].Get().(*Entry)
	if x == nil {
		return allocEntry(key, val)
	}
	fillInline(x, unsafe.Slice(x.inline(), size), key, val)
	return x
}

// inlineFits reports whether allocEntry keeps a key and a string value of
// these lengths inside the entry's allocation: they fit, and that costs no
// more than an entry, a key and a value allocated apart.
func inlineFits(keyLen, valLen int) bool {
	n := keyLen + valLen
	if n > entryInlineMax {
		return false
	}
	return AllocSize(entrySize+int64(n)) <= entrySize+AllocSize(int64(keyLen))+AllocSize(int64(valLen))
}
