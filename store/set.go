package store

import (
	"iter"
	"math/rand/v2"
	"unsafe"

	"github.com/shoal-db/shoal/strconvx"
)

// Set is a set value in one of Redis 7.0's two encodings (7.0 has no
// listpack sets):
//
//   - "intset": every member is the canonical decimal form of an int64;
//     they are kept as a sorted array of 16, 32 or 64-bit integers (see
//     intset), so members come out in ascending numeric order, as in Redis;
//   - "hashtable": a fieldTable of members.
//
// The rules are Redis's (t_set.c): a set created for an integer member
// starts as an intset and becomes a hashtable, never back, when a
// non-integer member is added or when it gets more than
// set-max-intset-entries members (capped at 2^30, as Redis caps it). The
// limit is passed in by the caller, read from the config at write time.
type Set struct {
	ints  intset
	table *fieldTable
}

// maxIntsetCap is the cap Redis puts on set-max-intset-entries.
const maxIntsetCap = 1 << 30

func init() {
	valueKinds[TypeSet] = func(p unsafe.Pointer) Value { return (*Set)(p) }
}

// NewSetFor returns an empty set in the encoding suited to its first member,
// as Redis's setTypeCreate: an intset for an integer, else a hashtable.
func NewSetFor(first []byte) *Set {
	if _, ok := strconvx.ParseInt(first); ok {
		return &Set{}
	}
	return &Set{table: newFieldTable(false, 0)}
}

// NewIntSet returns an empty intset-encoded set (Redis's
// createIntsetObject: where SINTERSTORE and friends collect their result).
func NewIntSet() *Set { return &Set{} }

// Set returns the entry's set value; the caller has checked Type().
func (e *Entry) Set() *Set { return (*Set)(e.val) }

// Type implements Value.
func (s *Set) Type() Type { return TypeSet }

// Encoding implements Value.
func (s *Set) Encoding() string {
	if s.table != nil {
		return "hashtable"
	}
	return "intset"
}

// IsIntset reports whether the set is in its intset encoding.
func (s *Set) IsIntset() bool { return s.table == nil }

// Len implements Value: the number of members.
func (s *Set) Len() int {
	if s.table != nil {
		return s.table.len()
	}
	return s.ints.len()
}

func (s *Set) pointer() unsafe.Pointer { return unsafe.Pointer(s) }

// Add inserts member and reports whether it was absent (Redis's setTypeAdd).
func (s *Set) Add(member []byte, maxIntset int64) bool {
	if s.table != nil {
		if s.table.find(member) >= 0 {
			return false
		}
		s.table.insert(member, nil)
		return true
	}
	v, ok := strconvx.ParseInt(member)
	if !ok {
		s.convert()
		s.table.insert(member, nil)
		return true
	}
	if !s.ints.add(v) {
		return false
	}
	if int64(s.ints.len()) > min(maxIntset, maxIntsetCap) {
		s.convert()
	}
	return true
}

// Remove deletes member and reports whether it was present.
func (s *Set) Remove(member []byte) bool {
	if s.table != nil {
		return s.table.remove(member)
	}
	v, ok := strconvx.ParseInt(member)
	return ok && s.ints.remove(v)
}

// Contains reports whether member is in the set.
func (s *Set) Contains(member []byte) bool {
	if s.table != nil {
		return s.table.find(member) >= 0
	}
	v, ok := strconvx.ParseInt(member)
	return ok && s.ints.contains(v)
}

// ContainsInt reports whether the decimal form of v is a member.
func (s *Set) ContainsInt(v int64) bool {
	if s.table == nil {
		return s.ints.contains(v)
	}
	var buf [24]byte
	return s.table.find(appendInt(buf[:0], v)) >= 0
}

// IntAt returns intset member i; the set must be an intset.
func (s *Set) IntAt(i int) int64 { return s.ints.get(i) }

func (s *Set) convert() {
	t := newFieldTable(false, s.ints.len())
	var buf [24]byte
	for i := range s.ints.len() {
		t.insert(appendInt(buf[:0], s.ints.get(i)), nil)
	}
	s.table, s.ints = t, intset{}
}

// ConvertToTable forces the hashtable encoding.
func (s *Set) ConvertToTable() {
	if s.table == nil {
		s.convert()
	}
}

// All iterates over the members: ascending for an intset (each formatted
// into a buffer reused for the next member), in table order for a
// hashtable. The set must not be modified during the iteration, and a
// member must be copied to be kept past its step.
func (s *Set) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if s.table != nil {
			for i := range s.table.len() {
				if !yield(s.table.key(i)) {
					return
				}
			}
			return
		}
		var buf [24]byte
		for i := range s.ints.len() {
			if !yield(appendInt(buf[:0], s.ints.get(i))) {
				return
			}
		}
	}
}

// ScanTable visits the hashtable bucket at cursor and returns the next
// cursor (0 at the end); an intset visits everything and returns 0.
func (s *Set) ScanTable(cursor uint64, fn func(member []byte)) uint64 {
	if s.table == nil {
		for m := range s.All() {
			fn(m)
		}
		return 0
	}
	return s.table.scan(cursor, func(i int) { fn(s.table.key(i)) })
}

// memberAt returns member i, formatting intset members into buf.
func (s *Set) memberAt(i int, buf []byte) []byte {
	if s.table != nil {
		return s.table.key(i)
	}
	return appendInt(buf[:0], s.ints.get(i))
}

// RandomMember returns a uniformly random member (intset members are
// formatted into buf); the set must not be empty.
func (s *Set) RandomMember(buf []byte) []byte {
	return s.memberAt(rand.IntN(s.Len()), buf)
}

// RandomMembers calls fn count times with a uniformly random member,
// repeats allowed (SRANDMEMBER with a negative count); it stops early when
// fn returns false. The set must not be empty.
func (s *Set) RandomMembers(count int, fn func(member []byte) bool) {
	var buf [24]byte
	n := s.Len()
	for range count {
		if !fn(s.memberAt(rand.IntN(n), buf[:0])) {
			return
		}
	}
}

// RandomDistinctMembers calls fn with count distinct members chosen
// uniformly at random, 0 < count < Len (SRANDMEMBER with a positive count).
func (s *Set) RandomDistinctMembers(count int, fn func(member []byte)) {
	var buf [24]byte
	at := func(i int) ([]byte, []byte) { return s.memberAt(i, buf[:0]), nil }
	randomDistinct(s.Len(), count, false, at, func(m, _ []byte) { fn(m) })
}

// removeAt deletes member i.
func (s *Set) removeAt(i int) {
	if s.table != nil {
		s.table.removeAt(i)
		return
	}
	v := s.ints.get(i)
	s.ints.remove(v)
}

// PopRandom removes a uniformly random member and returns it (formatted
// into buf for an intset; otherwise a copy). The set must not be empty.
func (s *Set) PopRandom(buf []byte) []byte {
	i := rand.IntN(s.Len())
	m := append(buf[:0], s.memberAt(i, buf[:0])...)
	s.removeAt(i)
	return m
}

// spopMoveStrategyMul is Redis's SPOP_MOVE_STRATEGY_MUL.
const spopMoveStrategyMul = 5

// PopMany removes count random members, 0 < count < Len, calling fn with
// each (SPOP with a count). Like Redis, when few members would remain it
// instead moves the survivors to a new set and hands out the old one's
// members; that new set is built as Redis builds it (setTypeCreate of the
// first survivor, then setTypeAdd), so its encoding may differ from the
// old one's.
func (s *Set) PopMany(count int, maxIntset int64, fn func(member []byte)) {
	remaining := s.Len() - count
	var buf [24]byte
	if remaining*spopMoveStrategyMul > count {
		for range count {
			fn(s.PopRandom(buf[:0]))
		}
		return
	}
	var kept *Set
	for range remaining {
		m := s.PopRandom(buf[:0])
		if kept == nil {
			kept = NewSetFor(m)
		}
		kept.Add(m, maxIntset)
	}
	for m := range s.All() {
		fn(m)
	}
	*s = *kept
}

// DataBytes returns about how many bytes the members take (as strings).
func (s *Set) DataBytes() int {
	if s.table != nil {
		return s.table.live
	}
	return 20 * s.ints.len()
}

// Clone implements Value.
func (s *Set) Clone() Value {
	if s.table != nil {
		return &Set{table: s.table.clone()}
	}
	return &Set{ints: s.ints.clone()}
}

// MemoryUsage implements Value.
func (s *Set) MemoryUsage(samples int) int64 {
	const header = 16 + 40 // robj-like header + the Set struct
	if s.table != nil {
		return header + s.table.memoryUsage()
	}
	return header + 8 + int64(cap(s.ints.data))
}

// Digest implements Value: every member is XORed in as SHA1(member), as
// Redis's xorObjectDigest does for sets (xorDigest of the member).
func (s *Set) Digest(d Digester) {
	for m := range s.All() {
		d.Xor(m)
	}
}
