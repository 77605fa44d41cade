package store

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
)

// fieldTable is the "hashtable" encoding of hashes (field → value) and sets
// (members only). It is pointer-free apart from the chunk list, so a table of
// a million fields costs the garbage collector a handful of pointers rather
// than millions of strings:
//
//   - buckets holds, per bucket, the 1-based index of the first entry of its
//     chain (0 = empty);
//   - entries is a dense array of fixed-size entries (16 bytes): the offset
//     of the entry's record, a cached hash and the 1-based index of the next
//     entry in the chain. Deleting moves the last entry into the hole, so
//     entries stays dense and a uniformly random element is one random index;
//   - the records live in chunks: uvarint(len) key, and for pair tables
//     uvarint(len) value. A record is never split across chunks; one longer
//     than a chunk gets a chunk of its own.
//
// Bytes of deleted or rewritten records stay in their chunk as garbage; a
// chunk whose records are all dead is released at once, and the whole arena
// is rewritten when garbage outweighs live data.
//
// Like store/dict.go the table resizes all at once (load factor 1 up, 1/8
// down) and offers Redis's reverse-binary SCAN cursor, whose guarantee
// (every element present for the whole scan is returned at least once)
// holds across resizes between calls.
//
// Not safe for concurrent use: the slot lock of the key holding it guards it.
type fieldTable struct {
	buckets []uint32
	entries []fieldEntry
	pairs   bool // records carry a value after the key

	chunks    [][]byte
	chunkLive []int    // live record bytes per chunk
	freeIdx   []uint32 // released chunk indexes, reused before growing chunks
	tail      int      // chunk that new records go to (-1: none yet)
	live      int      // live record bytes in all chunks
	garbage   int      // dead record bytes still held in chunks
}

type fieldEntry struct {
	off  uint64 // chunk index << 32 | position in the chunk
	hash uint32 // low bits of the key's hash (bucket counts never exceed 2^32)
	next uint32 // 1-based index of the next entry in the bucket's chain
}

const (
	fieldTableMinBuckets = 4
	// Records are appended to chunks that double from fieldChunkMin up to
	// fieldChunkMax bytes; a larger record gets a chunk of exactly its size.
	fieldChunkMin = 512
	fieldChunkMax = 64 << 10
	// The arena is rewritten when garbage exceeds live bytes and this floor.
	fieldCompactFloor = 64 << 10
)

// fieldSeed hashes every table's keys. One per process, like Redis's
// siphash seed; clones can thus reuse the cached hashes.
var fieldSeed = maphash.MakeSeed()

func fieldHash(b []byte) uint32 { return uint32(maphash.Bytes(fieldSeed, b)) }

func newFieldTable(pairs bool, sizeHint int) *fieldTable {
	t := &fieldTable{pairs: pairs, tail: -1}
	if sizeHint > 0 {
		n := fieldTableMinBuckets
		for n < sizeHint && n < 1<<31 {
			n *= 2
		}
		t.buckets = make([]uint32, n)
		t.entries = make([]fieldEntry, 0, sizeHint)
	}
	return t
}

func (t *fieldTable) len() int { return len(t.entries) }

// record returns the key and value stored at off. The slices alias the
// arena: they stay valid until the table is next modified.
func (t *fieldTable) record(off uint64) (key, val []byte) {
	c := t.chunks[off>>32]
	p := int(uint32(off))
	n, w := binary.Uvarint(c[p:])
	p += w
	key = c[p : p+int(n) : p+int(n)]
	if t.pairs {
		p += int(n)
		n, w = binary.Uvarint(c[p:])
		p += w
		val = c[p : p+int(n) : p+int(n)]
	}
	return key, val
}

// recordLen returns the size in bytes of the record at off.
func (t *fieldTable) recordLen(off uint64) int {
	k, v := t.record(off)
	n := uvarintLen(uint64(len(k))) + len(k)
	if t.pairs {
		n += uvarintLen(uint64(len(v))) + len(v)
	}
	return n
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// key returns entry i's key (valid until the next modification).
func (t *fieldTable) key(i int) []byte {
	k, _ := t.record(t.entries[i].off)
	return k
}

// pair returns entry i's key and value (valid until the next modification).
func (t *fieldTable) pair(i int) (key, val []byte) { return t.record(t.entries[i].off) }

// find returns the index of key's entry, or -1.
func (t *fieldTable) find(key []byte) int {
	if len(t.entries) == 0 {
		return -1
	}
	h := fieldHash(key)
	for e := t.buckets[h&uint32(len(t.buckets)-1)]; e != 0; {
		ent := &t.entries[e-1]
		if ent.hash == h {
			if k, _ := t.record(ent.off); string(k) == string(key) {
				return int(e - 1)
			}
		}
		e = ent.next
	}
	return -1
}

// appendRecord stores a new record and returns its offset.
func (t *fieldTable) appendRecord(key, val []byte) uint64 {
	n := uvarintLen(uint64(len(key))) + len(key)
	if t.pairs {
		n += uvarintLen(uint64(len(val))) + len(val)
	}
	ci := t.tail
	if ci < 0 || cap(t.chunks[ci])-len(t.chunks[ci]) < n {
		ci = t.newChunk(n)
	}
	c := t.chunks[ci]
	pos := len(c)
	c = binary.AppendUvarint(c, uint64(len(key)))
	c = append(c, key...)
	if t.pairs {
		c = binary.AppendUvarint(c, uint64(len(val)))
		c = append(c, val...)
	}
	t.chunks[ci] = c
	t.chunkLive[ci] += n
	t.live += n
	return uint64(ci)<<32 | uint64(pos)
}

// newChunk makes room for a record of n bytes and returns the chunk index.
func (t *fieldTable) newChunk(n int) int {
	size := fieldChunkMin
	if t.tail >= 0 {
		size = min(fieldChunkMax, 2*cap(t.chunks[t.tail]))
	}
	if n > size {
		// Dedicated chunk; the tail stays where it was for small records.
		return t.addChunk(make([]byte, 0, n), false)
	}
	return t.addChunk(make([]byte, 0, size), true)
}

func (t *fieldTable) addChunk(c []byte, asTail bool) int {
	var ci int
	if k := len(t.freeIdx); k > 0 {
		ci = int(t.freeIdx[k-1])
		t.freeIdx = t.freeIdx[:k-1]
		t.chunks[ci] = c
		t.chunkLive[ci] = 0
	} else {
		ci = len(t.chunks)
		t.chunks = append(t.chunks, c)
		t.chunkLive = append(t.chunkLive, 0)
	}
	if asTail {
		t.tail = ci
	}
	return ci
}

// release marks the record at off as dead, frees its chunk when nothing
// live remains in it, and rewrites the arena when garbage dominates.
func (t *fieldTable) release(off uint64) {
	n := t.recordLen(off)
	ci := int(off >> 32)
	t.chunkLive[ci] -= n
	t.live -= n
	if t.chunkLive[ci] == 0 {
		dead := len(t.chunks[ci]) - n // the chunk's other, already dead, bytes
		t.garbage -= dead
		if ci == t.tail {
			t.chunks[ci] = t.chunks[ci][:0] // reuse the tail from its start
		} else {
			t.chunks[ci] = nil
			t.freeIdx = append(t.freeIdx, uint32(ci))
		}
		return
	}
	t.garbage += n
	if t.garbage > t.live && t.garbage > fieldCompactFloor {
		t.compact()
	}
}

// compact rewrites every live record into fresh chunks.
func (t *fieldTable) compact() {
	old := t.chunks
	oldRec := func(off uint64) (k, v []byte) {
		c := old[off>>32]
		p := int(uint32(off))
		n, w := binary.Uvarint(c[p:])
		p += w
		k = c[p : p+int(n)]
		if t.pairs {
			p += int(n)
			n, w = binary.Uvarint(c[p:])
			p += w
			v = c[p : p+int(n)]
		}
		return k, v
	}
	t.chunks, t.chunkLive, t.freeIdx = nil, nil, nil
	t.tail, t.live, t.garbage = -1, 0, 0
	for i := range t.entries {
		k, v := oldRec(t.entries[i].off)
		t.entries[i].off = t.appendRecord(k, v)
	}
}

// insert adds key (which must be absent) with val and returns its index.
func (t *fieldTable) insert(key, val []byte) int {
	if len(t.entries) >= len(t.buckets) {
		t.resize(max(fieldTableMinBuckets, 2*len(t.buckets)))
	}
	h := fieldHash(key)
	b := h & uint32(len(t.buckets)-1)
	t.entries = append(t.entries, fieldEntry{off: t.appendRecord(key, val), hash: h, next: t.buckets[b]})
	i := len(t.entries) - 1
	t.buckets[b] = uint32(i + 1)
	return i
}

// setValue replaces entry i's value. A value of the same length is
// overwritten in place; otherwise the record is rewritten.
func (t *fieldTable) setValue(i int, val []byte) {
	e := &t.entries[i]
	k, v := t.record(e.off)
	if len(v) == len(val) {
		copy(v, val)
		return
	}
	// Append first (k aliases the old record), point the entry at the new
	// record, then release the old one: a compaction triggered by the
	// release then carries the new record over.
	off := t.appendRecord(k, val)
	old := e.off
	e.off = off
	t.release(old)
}

// remove deletes key and reports whether it was present.
func (t *fieldTable) remove(key []byte) bool {
	i := t.find(key)
	if i < 0 {
		return false
	}
	t.removeAt(i)
	return true
}

// removeAt deletes entry i; the last entry moves into its place.
func (t *fieldTable) removeAt(i int) {
	mask := uint32(len(t.buckets) - 1)
	t.unlink(i, mask)
	off := t.entries[i].off
	last := len(t.entries) - 1
	if i != last {
		// Point the reference to last (a bucket head or a chain link) at i.
		ref := &t.buckets[t.entries[last].hash&mask]
		for *ref != uint32(last+1) {
			ref = &t.entries[*ref-1].next
		}
		*ref = uint32(i + 1)
		t.entries[i] = t.entries[last]
	}
	t.entries = t.entries[:last]
	t.release(off)
	if len(t.entries) == 0 {
		*t = fieldTable{pairs: t.pairs, tail: -1}
		return
	}
	if cap(t.entries) > 64 && cap(t.entries) > 4*len(t.entries) {
		t.entries = append(make([]fieldEntry, 0, 2*len(t.entries)), t.entries...)
	}
	// Shrink below 1/8 fill, as store/dict.go does.
	if n := len(t.buckets); n > fieldTableMinBuckets && len(t.entries)*8 < n {
		target := fieldTableMinBuckets
		for target < len(t.entries)*2 {
			target *= 2
		}
		t.resize(target)
	}
}

// unlink removes entry i from its chain.
func (t *fieldTable) unlink(i int, mask uint32) {
	ref := &t.buckets[t.entries[i].hash&mask]
	for *ref != uint32(i+1) {
		ref = &t.entries[*ref-1].next
	}
	*ref = t.entries[i].next
	t.entries[i].next = 0
}

func (t *fieldTable) resize(size int) {
	t.buckets = make([]uint32, size)
	mask := uint32(size - 1)
	for i := range t.entries {
		b := t.entries[i].hash & mask
		t.entries[i].next = t.buckets[b]
		t.buckets[b] = uint32(i + 1)
	}
}

// scan calls fn for every entry of the bucket at cursor and returns the next
// cursor (0 when the table has been covered).
func (t *fieldTable) scan(cursor uint64, fn func(i int)) uint64 {
	if len(t.entries) == 0 {
		return 0
	}
	mask := uint64(len(t.buckets) - 1)
	for e := t.buckets[cursor&mask]; e != 0; e = t.entries[e-1].next {
		fn(int(e - 1))
	}
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// random returns a uniformly random entry index; the table must not be empty.
func (t *fieldTable) random() int { return rand.IntN(len(t.entries)) }

// clone returns a deep copy with compacted chunks.
func (t *fieldTable) clone() *fieldTable {
	c := &fieldTable{
		pairs:   t.pairs,
		tail:    -1,
		buckets: append([]uint32(nil), t.buckets...),
		entries: append([]fieldEntry(nil), t.entries...),
	}
	for i := range c.entries {
		k, v := t.record(t.entries[i].off)
		c.entries[i].off = c.appendRecord(k, v)
	}
	return c
}

// memoryUsage estimates the bytes the table occupies.
func (t *fieldTable) memoryUsage() int64 {
	n := int64(96 + 4*cap(t.buckets) + 16*cap(t.entries) + 24*cap(t.chunks) + 8*cap(t.chunkLive))
	for _, c := range t.chunks {
		n += int64(cap(c))
	}
	return n
}
