package store

import (
	"math"
	"unsafe"
)

// packBytes is a byte slice in 16 bytes instead of 24: a pointer and
// 32-bit length and capacity. The listpack encodings of hashes and sorted
// sets keep their bytes in one, which puts their value structure in Go's
// 32-byte size class instead of the 48-byte one: 16 bytes less for every
// small hash and sorted set (millions of them is the common case). A
// listpack never grows past LISTPACK_MAX_SAFETY_SIZE (1 GiB), so the length
// always fits; a larger capacity is recorded as 4 GiB - 1 (a capacity
// smaller than the real one only costs an earlier reallocation).
type packBytes struct {
	p      *byte
	n, cap uint32
}

// get returns the slice.
func (b packBytes) get() []byte {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice(b.p, b.cap)[:b.n]
}

// set stores s (nil or empty with no capacity: no slice).
func (b *packBytes) set(s []byte) {
	if cap(s) == 0 {
		*b = packBytes{}
		return
	}
	if len(s) > math.MaxUint32 {
		panic("store: listpack beyond 4 GiB")
	}
	b.p, b.n, b.cap = unsafe.SliceData(s), uint32(len(s)), uint32(min(cap(s), math.MaxUint32))
}
