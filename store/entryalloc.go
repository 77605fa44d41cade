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
// e.key and e.val point into the array; an interior pointer keeps the whole
// allocation alive. A value later replaced by one of another length gets an
// allocation of its own (setString), as before.
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

// entryInlineMax is the most key+value bytes kept inside the entry.
const entryInlineMax = 80

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
	entrySize := int(unsafe.Sizeof(Entry{}))
	if n > entryInlineMax || smallSizeClass(entrySize+n) > entrySize+smallSizeClass(len(key))+smallSizeClass(len(val)) {
		n = entryInlineMax + 1 // separate allocations
	}
	var e *Entry
	var b []byte
	switch {
	case n == 0:
		return &Entry{}
	case n <= 16:
		e, b = allocInline[[16]byte]()
	case n <= 32:
		e, b = allocInline[[32]byte]()
	case n <= 48:
		e, b = allocInline[[48]byte]()
	case n <= 64:
		e, b = allocInline[[64]byte]()
	case n <= entryInlineMax:
		e, b = allocInline[[entryInlineMax]byte]()
	default:
		e = &Entry{key: string(key)}
		if val != nil {
			e.setString(val)
		}
		return e
	}
	copy(b, key)
	if len(key) > 0 {
		e.key = unsafe.String(&b[0], len(key))
	}
	if len(val) > 0 {
		copy(b[len(key):], val)
		e.val = unsafe.Pointer(&b[len(key)])
		e.vlen = uint32(len(val))
	}
	// e.meta's type bits are TypeString (0) already.
	return e
}
