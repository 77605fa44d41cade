package store

import "unsafe"

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
	switch AllocSize(entrySize+int64(n)) - entrySize {
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
	copy(b, key)
	e.klen = uint32(len(key))
	if len(val) > 0 {
		copy(b[len(key):], val)
		e.vlen = uint32(len(val))
	}
	// e.meta's type bits are TypeString (0) already; kptr and val stay nil:
	// key and value are read at the entry's inline offset.
	return e
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
