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
// A slot holds about keys/16384 entries, so resizing rehashes everything at
// once instead of incrementally: a SCAN call never sees two tables, and the
// reverse-binary cursor guarantees (every key present for the whole scan is
// returned at least once) hold across resizes between calls.
//
// Not safe for concurrent use: the owning Slot's mutex guards it.
type dict struct {
	buckets []*Entry
	count   int
}

const dictMinSize = 4

func hashKey(seed maphash.Seed, key []byte) uint64 { return maphash.Bytes(seed, key) }

func (d *dict) find(h uint64, key []byte) *Entry {
	if d.count == 0 {
		return nil
	}
	h32 := uint32(h)
	for e := d.buckets[h&uint64(len(d.buckets)-1)]; e != nil; e = e.next {
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
func (d *dict) insert(seed maphash.Seed, h uint64, e *Entry) {
	if d.count >= len(d.buckets) {
		d.resize(max(dictMinSize, len(d.buckets)*2))
	}
	i := h & uint64(len(d.buckets)-1)
	e.hash = uint32(h)
	e.next = d.buckets[i]
	d.buckets[i] = e
	d.count++
}

// holds reports whether e is linked in the bucket for hash h (or for the
// bucket index h).
func (d *dict) holds(h uint64, e *Entry) bool {
	if d.count == 0 {
		return false
	}
	for x := d.buckets[h&uint64(len(d.buckets)-1)]; x != nil; x = x.next {
		if x == e {
			return true
		}
	}
	return false
}

// removeEntry unlinks e, which is linked in the bucket for hash h: found by
// identity, with no key compare.
func (d *dict) removeEntry(seed maphash.Seed, h uint64, e *Entry) {
	p := &d.buckets[h&uint64(len(d.buckets)-1)]
	for x := *p; x != nil; x = x.next {
		if x == e {
			*p = e.next
			e.next = nil
			d.count--
			d.maybeShrink(seed)
			return
		}
		p = &x.next
	}
}

// maybeShrink halves the table while it is under 1/8 full, as Redis does
// below 10% fill.
func (d *dict) maybeShrink(seed maphash.Seed) {
	if d.count == 0 {
		d.buckets = nil
		return
	}
	n := len(d.buckets)
	if n > dictMinSize && d.count*8 < n {
		target := dictMinSize
		for target < d.count*2 {
			target *= 2
		}
		d.resize(target)
	}
}

// resize moves every entry to a new table of size buckets, placing each by
// its stored hash bits: a slot's table never has 2^32 buckets, so the low 32
// bits of the hash are all the index needs.
func (d *dict) resize(size int) {
	nb := make([]*Entry, size)
	mask := uint64(size - 1)
	for _, e := range d.buckets {
		for e != nil {
			next := e.next
			i := uint64(e.hash) & mask
			e.next = nb[i]
			nb[i] = e
			e = next
		}
	}
	d.buckets = nb
}

// clear drops every entry.
func (d *dict) clear() {
	d.buckets = nil
	d.count = 0
}

// scan visits the bucket at cursor and returns the next cursor (0 when the
// table has been covered). fn is called for every entry in the bucket.
func (d *dict) scan(cursor uint64, fn func(*Entry)) uint64 {
	if d.count == 0 {
		return 0
	}
	mask := uint64(len(d.buckets) - 1)
	for e := d.buckets[cursor&mask]; e != nil; e = e.next {
		fn(e)
	}
	// Increment the reversed cursor over the masked bits.
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	cursor = bits.Reverse64(cursor)
	return cursor
}

// randomEntry returns a uniformly random bucket's chain member, or nil if
// empty. rnd supplies random numbers.
func (d *dict) randomEntry(rnd func() uint64) *Entry {
	if d.count == 0 {
		return nil
	}
	mask := uint64(len(d.buckets) - 1)
	for tries := 0; ; tries++ {
		e := d.buckets[rnd()&mask]
		if e == nil {
			if tries < 64 {
				continue
			}
			// A very sparse table: fall back to a linear walk from a random point.
			start := rnd() & mask
			for i := uint64(0); i <= mask; i++ {
				if e = d.buckets[(start+i)&mask]; e != nil {
					break
				}
			}
		}
		// Pick a random member of the chain, as Redis does.
		n := 0
		for x := e; x != nil; x = x.next {
			n++
		}
		k := int(rnd() % uint64(n))
		for ; k > 0; k-- {
			e = e.next
		}
		return e
	}
}

// sample calls fn for up to n entries, with their bucket's index, found
// walking the buckets from a random one (Redis's dictGetSomeKeys) and
// returns how many it called fn for. rnd supplies random numbers.
func (d *dict) sample(n int, rnd func() uint64, fn func(bucket uint64, e *Entry)) int {
	if d.count == 0 || n <= 0 {
		return 0
	}
	mask := uint64(len(d.buckets) - 1)
	i := rnd() & mask
	got := 0
	for visited := uint64(0); visited <= mask && got < n; visited++ {
		b := (i + visited) & mask
		for e := d.buckets[b]; e != nil && got < n; e = e.next {
			fn(b, e)
			got++
		}
	}
	return got
}
