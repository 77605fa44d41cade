package store

import (
	"unsafe"

	"github.com/shoal-db/shoal/slots"
)

// Memory accounting: the bytes the dataset holds, kept as a running total so
// that INFO's used_memory and the maxmemory check cost a few atomic loads,
// never a walk of the keyspace, and never move with the Go garbage
// collector's schedule (a figure taken from the Go heap would count garbage
// not yet collected, and evicting against it would throw away live keys).
//
// Every entry carries a charge: what its allocations cost in the Go heap
// (the entry, its key, its value and the value's structures, rounded up to
// the allocator's size classes) plus its share of the slot table. The slot
// and the keyspace add the charge when an entry is linked and subtract
// exactly the same amount when it is unlinked, so the totals never drift:
//   - a compact string's charge is a pure function of its key and value
//     lengths, which only DB methods change;
//   - every other entry (a mutable string, a collection) stores its charge
//     in vlen, which strings in those encodings and collections do not use.
//     It is what the entry measured at its last Remeasure (or at creation);
//     handlers change collections in place, so the dispatcher calls
//     Remeasure for the keys a write command touched, with their slots
//     still locked.
//
// A key with an expiry also costs its slot's volatile-map entry, and a slot
// that holds keys costs SlotCharge.

const (
	entrySize = int64(unsafe.Sizeof(Entry{}))
	// DictSlotCharge is an entry's share of its slot table's bucket array
	// (one pointer per bucket at a load factor up to 1).
	DictSlotCharge = 8
	// VolatileCharge is an entry of a slot's volatile map (a Go map of
	// pointers: key, value-less slot, tophash and bucket overhead).
	VolatileCharge = 16
	// sliceHeaderSize is the []byte a mutable string's val points to.
	sliceHeaderSize = 24
	// maxStoredCharge is the most vlen can hold; a bigger value is charged
	// this much (a 4 GiB collection is past any real maxmemory anyway).
	maxStoredCharge = 1<<32 - 1
	// SlotCharge is what a slot with keys costs beyond its entries: its
	// part of the database's slot array, which is one allocation whose
	// pages are touched only as slots fill. Its inline bucket array is
	// left out: the entries' DictSlotCharge counts the buckets wherever
	// they are.
	SlotCharge = int64(unsafe.Sizeof(Slot{})) - dictInlineBuckets*8
	// remeasureSamples bounds how many nodes or elements of a big
	// collection a charge estimate looks at (MEMORY USAGE's sampling).
	remeasureSamples = 8
)

// goSizeClasses are the Go allocator's size classes above 128 bytes, up to
// 32 KiB (runtime/sizeclasses.go); larger objects take whole 8 KiB pages.
var goSizeClasses = [...]int64{144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512,
	576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096,
	4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432,
	19072, 20480, 21760, 24576, 27264, 28672, 32768}

// AllocSize is the number of bytes the Go allocator hands out for an object
// of n bytes. Every write's charge takes several (compactStringCharge), so
// it is two table lookups, as the runtime's own size_to_class8 and
// size_to_class128: the size classes up to 1 KiB are multiples of 8 and
// those above multiples of 128, so each table index stands for one class.
func AllocSize(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= allocSizeSmallMax:
		return int64(allocSizeBy8[(n+7)>>3])
	case n <= 32768:
		return int64(allocSizeBy128[(n+127)>>7])
	}
	return (n + 8191) &^ 8191
}

// allocSizeSmallMax is the largest size allocSizeBy8 covers.
const allocSizeSmallMax = 1024

// allocSizeBy8[i] is AllocSize of the sizes n with (n+7)/8 == i, up to
// allocSizeSmallMax; allocSizeBy128[i] of those with (n+127)/128 == i above
// it, up to 32 KiB. Built once from searchAllocSize; never written after.
var allocSizeBy8, allocSizeBy128 = allocSizeTables()

func allocSizeTables() (by8 [allocSizeSmallMax/8 + 1]uint16, by128 [32768/128 + 1]uint16) {
	for i := 1; i < len(by8); i++ {
		by8[i] = uint16(searchAllocSize(int64(i * 8)))
	}
	for i := allocSizeSmallMax/128 + 1; i < len(by128); i++ {
		by128[i] = uint16(searchAllocSize(int64(i * 128)))
	}
	return by8, by128
}

// searchAllocSize is AllocSize for 0 < n <= 32 KiB found by searching the
// size classes; the tables are built from it.
func searchAllocSize(n int64) int64 {
	if n <= 128 {
		return int64(smallSizeClass(int(n)))
	}
	lo, hi := 0, len(goSizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if goSizeClasses[mid] >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return goSizeClasses[lo]
}

// entryKeyCharge is what an entry without a string value costs: the entry
// and its key, inline or not as allocEntry lays them out, and its bucket.
func entryKeyCharge(keyLen int) int64 {
	return compactStringCharge(keyLen, 0)
}

// compactStringCharge is a compact string entry's charge, following
// allocEntry's layout: key and value inside the entry's allocation when
// that is cheaper, else three allocations.
func compactStringCharge(keyLen, valLen int) int64 {
	n := keyLen + valLen
	if n == 0 {
		return entrySize + DictSlotCharge
	}
	separate := entrySize + AllocSize(int64(keyLen)) + AllocSize(int64(valLen))
	if n <= entryInlineMax {
		// inlineFits's choice, with the sizes it compares computed once.
		return min(AllocSize(entrySize+int64(n)), separate) + DictSlotCharge
	}
	return separate + DictSlotCharge
}

// charge is what e currently counts for (see the file comment).
func (e *Entry) charge() int64 {
	if e.isCompactString() {
		return compactStringCharge(int(e.klen), int(e.vlen))
	}
	return int64(e.vlen)
}

// measure computes e's charge from its contents: MEMORY USAGE's figure with
// remeasureSamples. For a compact string it equals charge(); for the others
// it is what Remeasure stores.
func (e *Entry) measure() int64 { return e.MemoryUsage(remeasureSamples) }

// isCompactString reports whether e is a string in the compact encoding,
// whose charge is a function of its lengths (charge).
func (e *Entry) isCompactString() bool {
	return e.meta&(metaTypeMask|metaMutable) == uint32(TypeString)
}

// storeCharge records n as e's charge; e must not be a compact string.
func (e *Entry) storeCharge(n int64) {
	e.vlen = uint32(min(max(n, 0), maxStoredCharge))
}

// addCharge moves s's and the keyspace's totals by delta bytes. Caller holds
// s's lock.
func (db *DB) addCharge(s *Slot, delta int64) {
	if delta == 0 {
		return
	}
	s.bytes += delta
	db.bytes.Add(delta)
	db.ks.dataBytes.Add(delta)
}

// Remeasure brings key's charge up to date after a command changed its value
// in place. A missing key costs nothing: deleting it already subtracted its
// charge. Caller holds the key's slot lock.
func (db *DB) Remeasure(key []byte) {
	db.RemeasureInSlot(slots.KeySlot(key), key)
}

// RemeasureInSlot is Remeasure for a key whose hash slot the caller computed
// (slotIn).
func (db *DB) RemeasureInSlot(slot uint16, key []byte) {
	s, h := db.slotIn(slot, key)
	e := s.dict.find(h, key)
	if e == nil || e.isCompactString() {
		return // compact strings are charged exactly by the DB methods that set them
	}
	before := e.charge()
	e.storeCharge(e.measure())
	db.addCharge(s, e.charge()-before)
}

// DataBytes returns the bytes the keyspace's entries hold (used_memory's
// dataset part).
func (ks *Keyspace) DataBytes() int64 { return ks.dataBytes.Load() }

// Bytes returns the bytes the database's entries hold.
func (db *DB) Bytes() int64 { return db.bytes.Load() }

// MemoryUsage is MEMORY USAGE's estimate for e, looking at no more than
// samples nodes or elements of a nested collection (0 = all): the measure
// the charges use, with remeasureSamples.
func (e *Entry) MemoryUsage(samples int) int64 {
	switch {
	case e.isCompactString():
		return e.charge()
	case e.Type() == TypeString: // mutable
		return entryKeyCharge(int(e.klen)) + AllocSize(sliceHeaderSize) + AllocSize(int64(cap(*(*[]byte)(e.val))))
	}
	n := entryKeyCharge(int(e.klen))
	if v := e.Value(); v != nil && e.val != nil {
		n += v.MemoryUsage(samples)
	}
	return n
}
