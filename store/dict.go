package store

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// dict is one slot's hash table: chained buckets, a power-of-two size, and
// Redis's reverse-binary SCAN cursor. Go's map cannot give a cursor that
// stays valid while the table grows or shrinks, nor cheap random sampling
// (active expiry, RANDOMKEY), hence this table.
//
// A slot usually holds about keys/16384 entries and resizes at once: a
// small table's move costs microseconds. Keys sharing a hash tag all land in
// one slot, though, and moving a million entries at once stopped the node
// for 100-500 ms; a table of incrementalRehashMin entries or more therefore
// moves to its new size a few buckets per insert or delete, as Redis's
// rehash does: lookups look in both tables meanwhile, new entries go to the
// new one, and SCAN covers both (the reverse-binary cursor keeps its
// guarantees, as in Redis's dictScan).
//
// A table of up to dictInlineBuckets buckets lives in the dict itself, so in
// the Slot (most slots: a slot holds keys/16384 keys): finding a key or
// sampling a slot reads the slot's own cache lines, not a separate array,
// which is a cache miss fewer per slot visited — an evicting SET visits two
// or three. Such a table is always resized at once; an incremental resize
// moves one heap table to another. A dict must not be copied (buckets may
// point into it).
//
// Not safe for concurrent use: the owning Slot's mutex guards it.
type dict struct {
	buckets []*Entry // inline[:n] while n <= dictInlineBuckets
	count   int
	// rehash is the table being moved to while a large table resizes; nil
	// otherwise. buckets[:rehash.done] are empty then. Both tables are on
	// the heap then: a table of incrementalRehashMin entries or more has
	// far more than dictInlineBuckets buckets.
	rehash *dictRehash
	inline [dictInlineBuckets]*Entry
}

// dictRehash is an incremental resize under way: the new table and how
// many of the old table's buckets have been moved to it.
type dictRehash struct {
	buckets []*Entry
	done    int
}

const (
	dictMinSize       = 4
	dictInlineBuckets = 8
	// incrementalRehashMin is the entry count from which a resize moves
	// the table incrementally instead of at once.
	incrementalRehashMin = 4096
	// rehashStepBuckets is how many old buckets a mutation moves; an
	// insert adds one entry and moves at least one, so a growth ends before
	// the table is due to grow again.
	rehashStepBuckets = 4
)

func hashKey(seed maphash.Seed, key []byte) uint64 { return maphash.Bytes(seed, key) }

func (d *dict) find(h uint64, key []byte) *Entry {
	if d.rehash != nil {
		return d.findMoving(h, key)
	}
	if d.count == 0 {
		return nil
	}
	return findIn(d.buckets, h, key)
}

// findMoving is find while a resize is under way: the entry is in one of
// the two tables.
func (d *dict) findMoving(h uint64, key []byte) *Entry {
	if e := findIn(d.buckets, h, key); e != nil {
		return e
	}
	return findIn(d.rehash.buckets, h, key)
}

func findIn(buckets []*Entry, h uint64, key []byte) *Entry {
	h32 := uint32(h)
	for e := buckets[h&uint64(len(buckets)-1)]; e != nil; e = e.next {
		// The stored hash and the length rule out most other keys of the
		// chain without reading their bytes (often another cache line).
		if e.hash == h32 && e.klen == uint32(len(key)) && e.Key() == unsafe.String(unsafe.SliceData(key), len(key)) {
			return e
		}
	}
	return nil
}

// insert links e, whose key must not be present, and grows the table when
// the load factor passes 1.
func (d *dict) insert(h uint64, e *Entry) {
	t := d.buckets
	if d.rehash != nil {
		d.rehashStep()
		if d.rehash != nil {
			t = d.rehash.buckets
		} else {
			t = d.buckets
		}
	} else if d.count >= len(d.buckets) {
		d.resize(max(dictMinSize, len(d.buckets)*2))
		t = d.buckets
		if d.rehash != nil {
			t = d.rehash.buckets
		}
	}
	i := h & uint64(len(t)-1)
	e.hash = uint32(h)
	e.next = t[i]
	t[i] = e
	d.count++
}

// holds reports whether e is linked in the bucket for hash h, or for the
// bucket index h that sample reported while the table had its current size.
func (d *dict) holds(h uint64, e *Entry) bool {
	if d.count == 0 {
		return false
	}
	return d.locate(h, e) != nil
}

// locate returns the link that points to e, found by identity in the bucket
// for h; in either table while a resize is under way, where h may also be a
// bucket index that sample gave in the other table's size.
func (d *dict) locate(h uint64, e *Entry) **Entry {
	if d.rehash == nil {
		return linkTo(d.buckets, h&uint64(len(d.buckets)-1), e)
	}
	tables := [2][]*Entry{d.buckets, d.rehash.buckets}
	for _, t := range tables {
		if p := linkTo(t, h&uint64(len(t)-1), e); p != nil {
			return p
		}
	}
	// An index of the smaller table: e's bucket has the same low bits.
	step := uint64(min(len(tables[0]), len(tables[1])))
	for _, t := range tables {
		for i := h & (step - 1); i < uint64(len(t)); i += step {
			if p := linkTo(t, i, e); p != nil {
				return p
			}
		}
	}
	return nil
}

// linkTo returns the link in buckets[i]'s chain that points to e, or nil.
func linkTo(buckets []*Entry, i uint64, e *Entry) **Entry {
	p := &buckets[i]
	for x := *p; x != nil; x = x.next {
		if x == e {
			return p
		}
		p = &x.next
	}
	return nil
}

// removeEntry unlinks e, which is linked in the bucket for hash h: found by
// identity, with no key compare.
func (d *dict) removeEntry(h uint64, e *Entry) {
	p := d.locate(h, e)
	if p == nil {
		return
	}
	*p = e.next
	e.next = nil
	d.count--
	if d.rehash != nil {
		d.rehashStep()
	}
	d.maybeShrink()
}

// maybeShrink halves the table while it is under 1/8 full, as Redis does
// below 10% fill.
func (d *dict) maybeShrink() {
	if d.count == 0 {
		// Every chain is empty, so inline holds no pointer; a resize under
		// way is dropped with both its tables.
		d.buckets, d.rehash = nil, nil
		return
	}
	n := len(d.buckets)
	if d.rehash == nil && n > dictMinSize && d.count*8 < n {
		target := dictMinSize
		for target < d.count*2 {
			target *= 2
		}
		d.resize(target)
	}
}

// resize moves every entry to a new table of size buckets, at once for a
// small table and incrementally (rehashStep) for a large one. Entries are
// placed by their stored hash bits: a slot's table never has 2^32 buckets,
// so the low 32 bits of the hash are all the index needs. A table of up to
// dictInlineBuckets buckets is the dict's inline array.
func (d *dict) resize(size int) {
	if size <= dictInlineBuckets {
		// Built aside, as the old table may be inline too.
		var small [dictInlineBuckets]*Entry
		moveBuckets(d.buckets, small[:size])
		d.inline = small
		d.buckets = d.inline[:size:size]
		return
	}
	nb := make([]*Entry, size)
	if d.count >= incrementalRehashMin && len(d.buckets) > dictInlineBuckets {
		// Both tables on the heap (the second test holds whenever the
		// first does: the table grows at load factor 1), so rehashStep's
		// switch to the new table leaves nothing inline behind.
		d.rehash = &dictRehash{buckets: nb}
		d.rehashStep()
		return
	}
	moveBuckets(d.buckets, nb)
	d.inline = [dictInlineBuckets]*Entry{} // no stale pointers left inline
	d.buckets = nb
}

// moveBuckets relinks every entry of old into nb. old is left as it was
// (its chains now wrong): the caller drops or clears it.
func moveBuckets(old, nb []*Entry) {
	mask := uint64(len(nb) - 1)
	for _, e := range old {
		for e != nil {
			next := e.next
			j := uint64(e.hash) & mask
			e.next = nb[j]
			nb[j] = e
			e = next
		}
	}
}

// rehashStep moves up to rehashStepBuckets non-empty old buckets (visiting
// at most ten times as many empty ones) to the new table, and makes the new
// table the table once the old one is empty.
func (d *dict) rehashStep() {
	r := d.rehash
	moved, visits := 0, 0
	for r.done < len(d.buckets) && moved < rehashStepBuckets && visits < 10*rehashStepBuckets {
		if d.buckets[r.done] != nil {
			moveBuckets(d.buckets[r.done:r.done+1], r.buckets)
			d.buckets[r.done] = nil // lookups and SCAN still read the old table
			moved++
		}
		r.done++
		visits++
	}
	if r.done == len(d.buckets) {
		d.buckets, d.rehash = r.buckets, nil
	}
}

// clear drops every entry.
func (d *dict) clear() {
	d.buckets = nil
	d.count = 0
	d.rehash = nil
	d.inline = [dictInlineBuckets]*Entry{}
}

// scan visits the bucket at cursor and returns the next cursor (0 when the
// table has been covered). fn is called for every entry in the bucket.
// While a resize is under way it visits the smaller table's bucket and every
// bucket of the larger table that those entries can move to or come from
// (the cursor values sharing its low bits), so that a key present for the
// whole scan is still returned at least once, as Redis's dictScan does.
// fn must not change the table.
func (d *dict) scan(cursor uint64, fn func(*Entry)) uint64 {
	if d.count == 0 {
		return 0
	}
	visit := func(e *Entry) {
		for ; e != nil; e = e.next {
			fn(e)
		}
	}
	if d.rehash == nil {
		mask := uint64(len(d.buckets) - 1)
		visit(d.buckets[cursor&mask])
		return nextCursor(cursor, mask)
	}
	small, large := d.buckets, d.rehash.buckets
	if len(small) > len(large) {
		small, large = large, small
	}
	smallMask, largeMask := uint64(len(small)-1), uint64(len(large)-1)
	visit(small[cursor&smallMask])
	for {
		visit(large[cursor&largeMask])
		cursor = nextCursor(cursor, largeMask)
		// Done when the bits only the larger table has wrapped to zero.
		if cursor&(smallMask^largeMask) == 0 {
			return cursor
		}
	}
}

// nextCursor increments the reversed cursor over the bits of mask.
func nextCursor(cursor, mask uint64) uint64 {
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// bucketCount is how many buckets randomEntry and sample choose among: the
// table's, or the larger table's while a resize is under way (an index b
// names buckets[b] and the new table's bucket b, where they exist).
func (d *dict) bucketCount() int {
	if d.rehash != nil {
		return max(len(d.buckets), len(d.rehash.buckets))
	}
	return len(d.buckets)
}

// head returns the chain at index b (see bucketCount) of the table (0) or
// of the table being moved to (1); nil when there is none.
func (d *dict) head(table int, b uint64) *Entry {
	t := d.buckets
	if table == 1 {
		if d.rehash == nil {
			return nil
		}
		t = d.rehash.buckets
	}
	if b < uint64(len(t)) {
		return t[b]
	}
	return nil
}

// randomEntry returns a random bucket's random chain member, or nil if
// empty. rnd supplies random numbers.
func (d *dict) randomEntry(rnd func() uint64) *Entry {
	if d.count == 0 {
		return nil
	}
	mask := uint64(d.bucketCount() - 1)
	var e *Entry
	for tries := 0; e == nil && tries < 64; tries++ {
		b := rnd() & mask
		if e = d.head(0, b); e == nil {
			e = d.head(1, b)
		}
	}
	if e == nil {
		// A very sparse table: fall back to a linear walk from a random point.
		start := rnd() & mask
		for i := uint64(0); i <= mask && e == nil; i++ {
			if e = d.head(0, (start+i)&mask); e == nil {
				e = d.head(1, (start+i)&mask)
			}
		}
	}
	// Pick a random member of the chain, as Redis does.
	n := 0
	for x := e; x != nil; x = x.next {
		n++
	}
	for k := int(rnd() % uint64(n)); k > 0; k-- {
		e = e.next
	}
	return e
}

// dictSample is one entry sample found, with its bucket's index (see
// bucketCount).
type dictSample struct {
	bucket uint64
	e      *Entry
}

// sample fills out with up to len(out) entries, with their buckets'
// indexes, found walking the buckets from a random one (Redis's
// dictGetSomeKeys) in both tables while a resize is under way, and returns
// how many it found. rnd supplies random numbers. The walk only collects:
// with nothing else between the loads, the cache misses of reading the
// entries (a random slot's entries are rarely cached) overlap instead of
// being paid one after the other.
func (d *dict) sample(rnd func() uint64, out []dictSample) int {
	return d.sampleFrom(rnd(), out)
}

// sampleFrom is sample walking from bucket start (modulo the table size).
func (d *dict) sampleFrom(start uint64, out []dictSample) int {
	n := len(out)
	if d.count == 0 || n == 0 {
		return 0
	}
	mask := uint64(d.bucketCount() - 1)
	i := start & mask
	got := 0
	for visited := uint64(0); visited <= mask && got < n; visited++ {
		b := (i + visited) & mask
		for table := 0; table < 2 && got < n; table++ {
			for e := d.head(table, b); e != nil && got < n; e = e.next {
				out[got] = dictSample{bucket: b, e: e}
				got++
			}
		}
	}
	return got
}

// prefetchHeads starts loading the first entries of the buckets that
// sampleFrom(start, ...) walks first (up to dictInlineBuckets of them),
// without waiting for them: what sampling from there will read, brought
// into the cache while other work runs. Entries further down a chain are
// not known without reading the first. Nothing while a resize is under way.
func (d *dict) prefetchHeads(start uint64) {
	if d.count == 0 || d.rehash != nil {
		return
	}
	mask := uint64(len(d.buckets) - 1)
	for b := range min(uint64(dictInlineBuckets), mask+1) {
		if e := d.buckets[(start+b)&mask]; e != nil {
			prefetch(unsafe.Pointer(e))
		}
	}
}
