package store

import (
	"encoding/binary"
	"iter"
	"math/rand/v2"
	"unsafe"
)

// Hash is a hash value in one of Redis 7.0's two encodings:
//
//   - "listpack": one pointer-free byte slice of records, field then value,
//     each uvarint(len) bytes, in insertion order (Redis's listpack keeps the
//     same order; it also stores integers in binary, which no reply can
//     tell). Lookups are linear, which is what the size limits are for.
//   - "hashtable": a fieldTable of field/value pairs.
//
// The conversion rules are Redis's (t_hash.c): a hash starts as a listpack
// and becomes a hashtable, never back, when a field or value longer than
// hash-max-listpack-value is written, when it gets more than
// hash-max-listpack-entries fields, or when the listpack would pass 1 GiB.
// The limits are passed in by the caller, who reads them from the config at
// the time of the write, as Redis does.
//
// Slices returned by the accessors alias the value: they are valid until
// the hash is next modified, under the key's slot lock.
type Hash struct {
	pack  packBytes // listpack encoding (while table is nil; store/packbytes.go)
	n     int       // pairs in pack
	table *fieldTable
}

// packSafeLimit is Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack write that
// would grow past it converts the value to its hashtable encoding first.
const packSafeLimit = 1 << 30

func init() {
	valueKinds[TypeHash] = func(p unsafe.Pointer) Value { return (*Hash)(p) }
}

// NewHash returns an empty hash in the listpack encoding.
func NewHash() *Hash { return &Hash{} }

// Hash returns the entry's hash value; the caller has checked Type().
func (e *Entry) Hash() *Hash { return (*Hash)(e.val) }

// Type implements Value.
func (h *Hash) Type() Type { return TypeHash }

// Encoding implements Value.
func (h *Hash) Encoding() string {
	if h.table != nil {
		return "hashtable"
	}
	return "listpack"
}

// IsListpack reports whether the hash is in its small encoding.
func (h *Hash) IsListpack() bool { return h.table == nil }

// Len implements Value: the number of fields.
func (h *Hash) Len() int {
	if h.table != nil {
		return h.table.len()
	}
	return h.n
}

func (h *Hash) pointer() unsafe.Pointer { return unsafe.Pointer(h) }

// packRecord decodes the record at p of a packed byte slice and returns it
// and the position after it.
func packRecord(b []byte, p int) ([]byte, int) {
	n, w := binary.Uvarint(b[p:])
	p += w
	end := p + int(n)
	return b[p:end:end], end
}

// packFind returns the position of field's record in the pack and of its
// value's record, or -1.
func (h *Hash) packFind(field []byte) (fpos, vpos int) {
	for p := 0; p < len(h.pack.get()); {
		f, vp := packRecord(h.pack.get(), p)
		_, next := packRecord(h.pack.get(), vp)
		if string(f) == string(field) {
			return p, vp
		}
		p = next
	}
	return -1, -1
}

// Get returns field's value.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.table != nil {
		i := h.table.find(field)
		if i < 0 {
			return nil, false
		}
		_, v := h.table.pair(i)
		return v, true
	}
	_, vp := h.packFind(field)
	if vp < 0 {
		return nil, false
	}
	v, _ := packRecord(h.pack.get(), vp)
	return v, true
}

// Exists reports whether field is present.
func (h *Hash) Exists(field []byte) bool {
	_, ok := h.Get(field)
	return ok
}

// TryConvert is Redis's hashTypeTryConversion, run before a write of args
// (fields and values): a listpack hash is converted when one of them is
// longer than maxValue or when their total would take the listpack past its
// safety limit.
func (h *Hash) TryConvert(maxValue int64, args [][]byte) {
	if h.table != nil {
		return
	}
	sum := 0
	for _, a := range args {
		if int64(len(a)) > maxValue {
			h.convert()
			return
		}
		sum += len(a)
	}
	if len(h.pack.get())+sum > packSafeLimit {
		h.convert()
	}
}

// Set is Redis's hashTypeSet: it stores value under field, converting the
// hash as the limits require, and reports whether the field is new.
func (h *Hash) Set(field, value []byte, maxEntries, maxValue int64) (created bool) {
	if h.table == nil && (int64(len(field)) > maxValue || int64(len(value)) > maxValue ||
		len(h.pack.get())+len(field)+len(value) > packSafeLimit) {
		h.convert()
	}
	if h.table != nil {
		if i := h.table.find(field); i >= 0 {
			h.table.setValue(i, value)
			return false
		}
		h.table.insert(field, value)
		return true
	}
	if _, vp := h.packFind(field); vp >= 0 {
		old, end := packRecord(h.pack.get(), vp)
		if len(old) == len(value) {
			copy(old, value)
		} else {
			rec := binary.AppendUvarint(make([]byte, 0, len(value)+10), uint64(len(value)))
			rec = append(rec, value...)
			h.pack.set(splice(h.pack.get(), vp, end, rec))
		}
		return false
	}
	b := binary.AppendUvarint(h.pack.get(), uint64(len(field)))
	b = append(b, field...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	h.pack.set(append(b, value...))
	h.n++
	if int64(h.n) > maxEntries {
		h.convert()
	}
	return true
}

// Reserve makes room in the listpack form for the field/value pairs a
// multi-field write is about to add, so that the buffer grows once to
// about its final size: no chain of intermediate buffers becomes garbage
// between the long-lived values (heap fragmentation). No-op for the table
// form.
func (h *Hash) Reserve(pairs [][]byte) {
	if h.table != nil {
		return
	}
	need := 0
	for _, b := range pairs {
		need += uvarintLen(uint64(len(b))) + len(b)
	}
	if cap(h.pack.get())-len(h.pack.get()) < need {
		nb := make([]byte, len(h.pack.get()), len(h.pack.get())+need)
		copy(nb, h.pack.get())
		h.pack.set(nb)
	}
}

// splice replaces b[from:to] with rec.
func splice(b []byte, from, to int, rec []byte) []byte {
	tail := len(b) - to
	newLen := from + len(rec) + tail
	if newLen > cap(b) {
		nb := make([]byte, newLen, newLen+newLen/4)
		copy(nb, b[:from])
		copy(nb[from:], rec)
		copy(nb[from+len(rec):], b[to:])
		return nb
	}
	old := len(b)
	b = b[:max(old, newLen)]
	copy(b[from+len(rec):], b[to:old])
	copy(b[from:], rec)
	return b[:newLen]
}

// Delete removes field and reports whether it was present.
func (h *Hash) Delete(field []byte) bool {
	if h.table != nil {
		return h.table.remove(field)
	}
	fp, vp := h.packFind(field)
	if fp < 0 {
		return false
	}
	_, end := packRecord(h.pack.get(), vp)
	h.pack.set(splice(h.pack.get(), fp, end, nil))
	h.n--
	if h.n == 0 {
		h.pack.set(nil)
	} else if cap(h.pack.get()) > 256 && cap(h.pack.get()) > 2*len(h.pack.get()) {
		h.pack.set(append([]byte(nil), h.pack.get()...))
	}
	return true
}

// convert turns a listpack hash into a hashtable.
func (h *Hash) convert() {
	t := newFieldTable(true, h.n)
	for f, v := range h.All() {
		t.insert(f, v)
	}
	h.table, h.pack, h.n = t, packBytes{}, 0
}

// ConvertToTable forces the hashtable encoding.
func (h *Hash) ConvertToTable() {
	if h.table == nil {
		h.convert()
	}
}

// All iterates over the field/value pairs: in insertion order for a
// listpack, in table order for a hashtable. The hash must not be modified
// during the iteration.
func (h *Hash) All() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		if h.table != nil {
			for i := range h.table.len() {
				if !yield(h.table.pair(i)) {
					return
				}
			}
			return
		}
		for p := 0; p < len(h.pack.get()); {
			f, vp := packRecord(h.pack.get(), p)
			v, next := packRecord(h.pack.get(), vp)
			if !yield(f, v) {
				return
			}
			p = next
		}
	}
}

// ScanTable visits the hashtable bucket at cursor and returns the next
// cursor (0 at the end); a listpack hash visits everything and returns 0.
func (h *Hash) ScanTable(cursor uint64, fn func(field, value []byte)) uint64 {
	if h.table == nil {
		for f, v := range h.All() {
			fn(f, v)
		}
		return 0
	}
	return h.table.scan(cursor, func(i int) { fn(h.table.pair(i)) })
}

// pairIndex returns a way to reach pair i in O(1): the table itself, or the
// positions of the listpack's fields.
func (h *Hash) pairIndex() func(i int) (f, v []byte) {
	if h.table != nil {
		return h.table.pair
	}
	pos := make([]int, 0, h.n)
	for p := 0; p < len(h.pack.get()); {
		pos = append(pos, p)
		_, vp := packRecord(h.pack.get(), p)
		_, p = packRecord(h.pack.get(), vp)
	}
	return func(i int) ([]byte, []byte) {
		f, vp := packRecord(h.pack.get(), pos[i])
		v, _ := packRecord(h.pack.get(), vp)
		return f, v
	}
}

// RandomPair returns a uniformly random pair; the hash must not be empty.
func (h *Hash) RandomPair() (field, value []byte) {
	if h.table != nil {
		return h.table.pair(h.table.random())
	}
	i := rand.IntN(h.n)
	for f, v := range h.All() {
		if i == 0 {
			return f, v
		}
		i--
	}
	return nil, nil
}

// RandomPairs calls fn count times with a uniformly random pair, repeats
// allowed (HRANDFIELD with a negative count). It stops early when fn
// returns false. The hash must not be empty.
func (h *Hash) RandomPairs(count int, fn func(field, value []byte) bool) {
	at := h.pairIndex()
	n := h.Len()
	for range count {
		if !fn(at(rand.IntN(n))) {
			return
		}
	}
}

// RandomDistinctPairs calls fn with count distinct pairs chosen uniformly at
// random, 0 < count < Len (HRANDFIELD with a positive count). Like Redis it
// picks by elimination when count is close to the size and by sampling
// otherwise.
func (h *Hash) RandomDistinctPairs(count int, fn func(field, value []byte)) {
	randomDistinct(h.Len(), count, h.table == nil, h.pairIndex(), fn)
}

// randomDistinct chooses count of n indexes uniformly and calls fn with the
// elements at returns. ordered selects sequential selection sampling
// (cheap for packed encodings, whose elements come out in order) over random
// probing with a seen-set.
func randomDistinct(n, count int, ordered bool, at func(i int) ([]byte, []byte), fn func(a, b []byte)) {
	switch {
	case count*3 > n:
		// Most elements are wanted: shuffle the first count of a full
		// index permutation (Redis copies everything and removes random
		// elements instead; the distribution is the same).
		idx := make([]uint32, n)
		for i := range idx {
			idx[i] = uint32(i)
		}
		for i := range count {
			j := i + rand.IntN(n-i)
			idx[i], idx[j] = idx[j], idx[i]
			fn(at(int(idx[i])))
		}
	case ordered:
		// Knuth's algorithm S: element i is taken with probability
		// (still needed) / (still available).
		need := count
		for i := 0; i < n && need > 0; i++ {
			if rand.IntN(n-i) < need {
				fn(at(i))
				need--
			}
		}
	default:
		seen := make(map[int]struct{}, count)
		for len(seen) < count {
			i := rand.IntN(n)
			if _, dup := seen[i]; dup {
				continue
			}
			seen[i] = struct{}{}
			fn(at(i))
		}
	}
}

// DataBytes returns about how many bytes the fields and values take.
func (h *Hash) DataBytes() int {
	if h.table != nil {
		return h.table.live
	}
	return len(h.pack.get())
}

// Clone implements Value.
func (h *Hash) Clone() Value {
	c := &Hash{n: h.n}
	if h.table != nil {
		c.table = h.table.clone()
	} else if h.pack.get() != nil {
		c.pack.set(append([]byte(nil), h.pack.get()...))
	}
	return c
}

// MemoryUsage implements Value.
func (h *Hash) MemoryUsage(samples int) int64 {
	const header = 16 + 48 // robj-like header + the Hash struct
	if h.table != nil {
		return header + h.table.memoryUsage()
	}
	return header + int64(cap(h.pack.get()))
}

// Digest implements Value: every pair is one unordered element, field then
// value, as Redis's xorObjectDigest does for hashes.
func (h *Hash) Digest(d Digester) {
	for f, v := range h.All() {
		DigestElement(d, f, v)
	}
}
