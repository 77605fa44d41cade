package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/shoal-db/shoal/strconvx"
)

// ZSet is a sorted set, in one of Redis 7.0's two encodings:
//
//   - "listpack" (small sets): one byte slice of entries sorted by (score,
//     member), each a uvarint member length, the member bytes and the score
//     as 8 little-endian bytes. Lookups are linear, as in Redis.
//   - "skiplist": a skiplist with spans plus a member index (skiplist.go).
//
// A set starts as a listpack when it is small enough and is converted to a
// skiplist when it grows past zset-max-listpack-entries elements or receives
// a member longer than zset-max-listpack-value bytes; it converts back only
// where Redis does (the results of ZRANGESTORE, Z*STORE, GEO*STORE).
//
// Member slices handed to callbacks alias the set: they may be read during
// the callback only, and never modified.
type ZSet struct {
	lp    packBytes // listpack entries, when sl is nil (store/packbytes.go)
	lpLen int
	sl    *skiplist
}

// ZSetLimits are the listpack thresholds (zset-max-listpack-entries and
// zset-max-listpack-value).
type ZSetLimits struct {
	MaxListpackEntries int64
	MaxListpackValue   int64
}

// listpackMaxSafety is Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack never
// grows past 1 GiB; a set that would is stored as a skiplist.
const listpackMaxSafety = 1 << 30

func init() {
	valueKinds[TypeZSet] = func(p unsafe.Pointer) Value { return (*ZSet)(p) }
}

// NewZSet returns an empty sorted set encoded as ZADD creates one: a
// listpack unless listpacks are disabled (0 entries) or the first member is
// already too long for one.
func NewZSet(lim ZSetLimits, firstMemberLen int) *ZSet {
	z := &ZSet{}
	if lim.MaxListpackEntries == 0 || int64(firstMemberLen) > lim.MaxListpackValue {
		z.sl = newSkiplist()
	}
	return z
}

// ZSet returns the entry's sorted set, or nil if it holds another type.
func (e *Entry) ZSet() *ZSet {
	if e.Type() != TypeZSet {
		return nil
	}
	return (*ZSet)(e.val)
}

// Type implements Value.
func (z *ZSet) Type() Type { return TypeZSet }

// Encoding implements Value.
func (z *ZSet) Encoding() string {
	if z.sl != nil {
		return "skiplist"
	}
	return "listpack"
}

// IsListpack reports whether the set uses the listpack encoding.
func (z *ZSet) IsListpack() bool { return z.sl == nil }

// Len implements Value.
func (z *ZSet) Len() int {
	if z.sl != nil {
		return z.sl.length
	}
	return z.lpLen
}

func (z *ZSet) pointer() unsafe.Pointer { return unsafe.Pointer(z) }

// Clone implements Value: a deep copy in the same encoding.
func (z *ZSet) Clone() Value {
	if z.sl != nil {
		return &ZSet{sl: z.sl.clone()}
	}
	c := &ZSet{lpLen: z.lpLen}
	c.lp.set(bytes.Clone(z.lp.get()))
	return c
}

// MemoryUsage implements Value, estimating the way Redis's
// objectComputeSize does: exact for a listpack, a sample of nodes scaled to
// the whole set for a skiplist.
func (z *ZSet) MemoryUsage(samples int) int64 {
	const robj = 16
	if z.sl == nil {
		return robj + int64(cap(z.lp.get()))
	}
	sl := z.sl
	size := int64(robj + unsafe.Sizeof(ZSet{}) + unsafe.Sizeof(skiplist{}))
	size += int64(len(sl.buckets)) * 8
	size += int64(unsafe.Sizeof(zslNode{})) + zslMaxLevel*int64(unsafe.Sizeof(zslLevel{})) // header
	if sl.length == 0 {
		return size
	}
	var sampled, bytesSeen int64
	for x := sl.first(); x != nil && (samples == 0 || sampled < int64(samples)); x = x.level0.forward {
		bytesSeen += int64(unsafe.Sizeof(zslNode{})) + int64(len(x.upper))*int64(unsafe.Sizeof(zslLevel{})) + int64(len(x.member))
		sampled++
	}
	return size + bytesSeen*int64(sl.length)/sampled
}

// Digest implements Value: each member and its score (formatted "%.17g")
// form one unordered element, as in Redis's xorObjectDigest.
func (z *ZSet) Digest(d Digester) {
	var buf [32]byte
	z.Each(false, func(member []byte, score float64) bool {
		DigestElement(d, member, strconvx.AppendDouble(buf[:0], score))
		return true
	})
}

// ---------------------------------------------------------------- listpack

// lpScore is the score a listpack hands back for score: Redis stores an
// integral score in [-2^62, 2^62] as an integer, which turns -0 into 0;
// every other score round-trips exactly through its "%.17g" text.
func lpScore(score float64) float64 {
	if score >= -(1<<62) && score <= 1<<62 && score == math.Trunc(score) {
		return float64(int64(score))
	}
	return score
}

// A listpack entry is uvarint(len(member)<<1 | isFloat), the member, and
// the score: an integral score of magnitude up to 2^53 (what lpScore makes
// of one) as a zigzag varint, any other as 8 little-endian bytes. Like
// Redis's listpack, which stores integral scores as integers, this keeps
// small sets with small integer scores (leaderboards, timestamps in
// seconds) at a few bytes per score instead of eight.

// lpIntScore reports whether score (as lpScore left it) is stored as an
// integer, and which.
func lpIntScore(score float64) (int64, bool) {
	if score >= -(1<<53) && score <= 1<<53 && score == math.Trunc(score) {
		return int64(score), true
	}
	return 0, false
}

// lpEntry decodes the entry at off: its member, score and the next offset.
func lpEntry(lp []byte, off int) (member []byte, score float64, next int) {
	h, w := binary.Uvarint(lp[off:])
	start := off + w
	end := start + int(h>>1)
	member = lp[start:end:end]
	if h&1 != 0 {
		return member, math.Float64frombits(binary.LittleEndian.Uint64(lp[end:])), end + 8
	}
	v, k := binary.Varint(lp[end:])
	return member, float64(v), end + k
}

// lpEntrySize is the size of the entry for a member of memberLen bytes and
// score (as lpScore left it).
func lpEntrySize(memberLen int, score float64) int {
	var tmp [binary.MaxVarintLen64]byte
	if v, ok := lpIntScore(score); ok {
		return binary.PutUvarint(tmp[:], uint64(memberLen)<<1) + memberLen + binary.PutVarint(tmp[:], v)
	}
	return binary.PutUvarint(tmp[:], uint64(memberLen)<<1|1) + memberLen + 8
}

// lpAppendEntry appends the entry for member and score (as lpScore left it).
func lpAppendEntry[M string | []byte](lp []byte, member M, score float64) []byte {
	if v, ok := lpIntScore(score); ok {
		lp = binary.AppendUvarint(lp, uint64(len(member))<<1)
		lp = append(lp, member...)
		return binary.AppendVarint(lp, v)
	}
	lp = binary.AppendUvarint(lp, uint64(len(member))<<1|1)
	lp = append(lp, member...)
	return binary.LittleEndian.AppendUint64(lp, math.Float64bits(score))
}

// lpFind returns the offset, end and score of member's entry.
func (z *ZSet) lpFind(member []byte) (off, end int, score float64, ok bool) {
	for off < len(z.lp.get()) {
		m, s, next := lpEntry(z.lp.get(), off)
		if bytes.Equal(m, member) {
			return off, next, s, true
		}
		off = next
	}
	return 0, 0, 0, false
}

// Reserve makes room in the listpack form for the members a multi-member
// ZADD is about to insert with their scores, so that the buffer grows once
// (see Hash.Reserve).
func (z *ZSet) Reserve(members [][]byte, scores []float64) {
	if z.sl != nil {
		return
	}
	need := 0
	for i, m := range members {
		need += lpEntrySize(len(m), lpScore(scores[i]))
	}
	if cap(z.lp.get())-len(z.lp.get()) < need {
		nb := make([]byte, len(z.lp.get()), len(z.lp.get())+need)
		copy(nb, z.lp.get())
		z.lp.set(nb)
	}
}

// lpInsert adds member (not present) at its ordered position.
func (z *ZSet) lpInsert(member []byte, score float64) {
	score = lpScore(score)
	off := 0
	for off < len(z.lp.get()) {
		m, s, next := lpEntry(z.lp.get(), off)
		if s > score || s == score && bytes.Compare(m, member) > 0 {
			break
		}
		off = next
	}
	var buf [96]byte // an entry of a member up to zset-max-listpack-value's default fits
	ent := lpAppendEntry(buf[:0], member, score)
	size := len(ent)
	z.lp.set(append(z.lp.get(), ent...)) // grows the buffer (its tail is overwritten next)
	copy(z.lp.get()[off+size:], z.lp.get()[off:len(z.lp.get())-size])
	copy(z.lp.get()[off:], ent)
	z.lpLen++
}

// lpDeleteRange removes the bytes [off, end) holding count entries.
func (z *ZSet) lpDeleteRange(off, end, count int) {
	z.lp.set(append(z.lp.get()[:off], z.lp.get()[end:]...))
	z.lpLen -= count
	if z.lpLen == 0 {
		z.lp.set(nil)
	}
}

// lpOffsets returns every entry's offset, using buf when it is big enough.
func (z *ZSet) lpOffsets(buf []int32) []int32 {
	offs := buf[:0]
	for off := 0; off < len(z.lp.get()); {
		offs = append(offs, int32(off))
		_, _, off = lpEntry(z.lp.get(), off)
	}
	return offs
}

// lpRankOffset returns the offset of the entry at 0-based rank r.
func (z *ZSet) lpRankOffset(r int) int {
	off := 0
	for ; r > 0; r-- {
		_, _, off = lpEntry(z.lp.get(), off)
	}
	return off
}

// convertToSkiplist switches a listpack to the skiplist encoding.
func (z *ZSet) convertToSkiplist() {
	sl := newSkiplist()
	if z.lpLen > 0 {
		size := zslIndexMinSize
		for size < z.lpLen {
			size *= 2
		}
		sl.buckets = make([]*zslNode, size)
	}
	// Insert from the last entry so every insertion stops at the header.
	var buf [128]int32
	offs := z.lpOffsets(buf[:])
	for i := len(offs) - 1; i >= 0; i-- {
		m, s, _ := lpEntry(z.lp.get(), int(offs[i]))
		n := newZslNode(zslRandomLevel(), s, string(m))
		sl.insertNode(n)
		sl.indexAdd(n)
	}
	z.sl, z.lp, z.lpLen = sl, packBytes{}, 0
}

// convertToListpack switches a skiplist to the listpack encoding.
func (z *ZSet) convertToListpack() {
	size := 0
	for x := z.sl.first(); x != nil; x = x.level0.forward {
		size += lpEntrySize(len(x.member), lpScore(x.score))
	}
	lp := make([]byte, 0, size)
	for x := z.sl.first(); x != nil; x = x.level0.forward {
		lp = lpAppendEntry(lp, x.member, lpScore(x.score))
	}
	z.lp.set(lp)
	z.lpLen, z.sl = z.sl.length, nil
}

// ConvertToListpackIfNeeded is Redis's zsetConvertToListpackIfNeeded: a
// skiplist set small enough for a listpack becomes one. maxMemberLen and
// totalMemberLen describe its members.
func (z *ZSet) ConvertToListpackIfNeeded(lim ZSetLimits, maxMemberLen, totalMemberLen int) {
	if z.sl == nil {
		return
	}
	if int64(z.sl.length) <= lim.MaxListpackEntries && int64(maxMemberLen) <= lim.MaxListpackValue &&
		totalMemberLen <= listpackMaxSafety {
		z.convertToListpack()
	}
}

// ---------------------------------------------------------------- element ops

// ZAddFlags are ZADD's options.
type ZAddFlags uint8

const (
	ZAddIncr ZAddFlags = 1 << iota
	ZAddNX
	ZAddXX
	ZAddGT
	ZAddLT
)

// ZAddResult says what Add did.
type ZAddResult uint8

const (
	ZAddNaN     ZAddResult = 1 << iota // the resulting score is NaN: nothing changed
	ZAddAdded                          // a new member
	ZAddUpdated                        // an existing member's score changed
	ZAddNop                            // nothing done because of NX, XX, GT or LT
)

// Add is Redis's zsetAdd: it adds member or updates its score according to
// flags and returns what happened and the member's new score. It may convert
// the set to a skiplist.
func (z *ZSet) Add(member []byte, score float64, flags ZAddFlags, lim ZSetLimits) (ZAddResult, float64) {
	if math.IsNaN(score) {
		return ZAddNaN, 0
	}
	incr, nx, xx := flags&ZAddIncr != 0, flags&ZAddNX != 0, flags&ZAddXX != 0
	gt, lt := flags&ZAddGT != 0, flags&ZAddLT != 0
	if z.sl == nil {
		if off, end, cur, ok := z.lpFind(member); ok {
			if nx {
				return ZAddNop, 0
			}
			if incr {
				score += cur
				if math.IsNaN(score) {
					return ZAddNaN, 0
				}
			}
			if lt && score >= cur || gt && score <= cur {
				return ZAddNop, 0
			}
			if score == cur {
				return 0, score
			}
			z.lpDeleteRange(off, end, 1)
			z.lpInsert(member, score)
			return ZAddUpdated, score
		}
		if xx {
			return ZAddNop, 0
		}
		if int64(z.lpLen)+1 > lim.MaxListpackEntries || int64(len(member)) > lim.MaxListpackValue ||
			len(z.lp.get())+len(member) > listpackMaxSafety {
			z.convertToSkiplist()
		} else {
			z.lpInsert(member, score)
			return ZAddAdded, score
		}
	}
	if n := z.sl.find(bstring(member)); n != nil {
		if nx {
			return ZAddNop, 0
		}
		cur := n.score
		if incr {
			score += cur
			if math.IsNaN(score) {
				return ZAddNaN, 0
			}
		}
		if lt && score >= cur || gt && score <= cur {
			return ZAddNop, 0
		}
		if score == cur {
			return 0, score
		}
		z.sl.updateScore(n, score)
		return ZAddUpdated, score
	}
	if xx {
		return ZAddNop, 0
	}
	z.sl.insert(score, string(member))
	return ZAddAdded, score
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	if z.sl == nil {
		off, end, _, ok := z.lpFind(member)
		if ok {
			z.lpDeleteRange(off, end, 1)
		}
		return ok
	}
	n := z.sl.find(bstring(member))
	if n == nil {
		return false
	}
	return z.sl.remove(n.score, n.member)
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.sl == nil {
		_, _, s, ok := z.lpFind(member)
		return s, ok
	}
	if n := z.sl.find(bstring(member)); n != nil {
		return n.score, true
	}
	return 0, false
}

// Rank returns member's 0-based rank, from the highest score if reverse.
func (z *ZSet) Rank(member []byte, reverse bool) (int, bool) {
	var r int // 1-based
	if z.sl == nil {
		r = 1
		found := false
		for off := 0; off < len(z.lp.get()); r++ {
			m, _, next := lpEntry(z.lp.get(), off)
			if bytes.Equal(m, member) {
				found = true
				break
			}
			off = next
		}
		if !found {
			return 0, false
		}
	} else {
		n := z.sl.find(bstring(member))
		if n == nil {
			return 0, false
		}
		r = z.sl.rank(n.score, n.member)
	}
	if reverse {
		return z.Len() - r, true
	}
	return r - 1, true
}

// ZVisit receives one element; it returns false to stop the iteration.
type ZVisit func(member []byte, score float64) bool

// Each visits every element in order (from the highest if reverse).
func (z *ZSet) Each(reverse bool, fn ZVisit) {
	if z.Len() > 0 {
		z.RangeByRank(0, z.Len()-1, reverse, fn)
	}
}

// RangeByRank visits ranks start..end (0-based, inclusive, already clamped
// to the set: 0 <= start <= end < Len), counted from the highest score if
// reverse.
func (z *ZSet) RangeByRank(start, end int, reverse bool, fn ZVisit) {
	if start < 0 || end >= z.Len() || start > end {
		return
	}
	if z.sl == nil {
		if reverse {
			var buf [128]int32
			offs := z.lpOffsets(buf[:])
			for r := start; r <= end; r++ {
				m, s, _ := lpEntry(z.lp.get(), int(offs[len(offs)-1-r]))
				if !fn(m, s) {
					return
				}
			}
			return
		}
		off := z.lpRankOffset(start)
		for r := start; r <= end; r++ {
			m, s, next := lpEntry(z.lp.get(), off)
			if !fn(m, s) {
				return
			}
			off = next
		}
		return
	}
	var x *zslNode
	if reverse {
		x = z.sl.tail
		if start > 0 {
			x = z.sl.byRank(z.sl.length - start)
		}
	} else {
		x = z.sl.first()
		if start > 0 {
			x = z.sl.byRank(start + 1)
		}
	}
	for r := start; r <= end && x != nil; r++ {
		if !fn(x.memberBytes(), x.score) {
			return
		}
		if reverse {
			x = x.backward
		} else {
			x = x.level0.forward
		}
	}
}

// lpFirstLast returns the first and last entries of a non-empty listpack.
func (z *ZSet) lpFirstLast() (fm []byte, fs float64, lm []byte, ls float64) {
	fm, fs, _ = lpEntry(z.lp.get(), 0)
	off := 0
	for {
		m, s, next := lpEntry(z.lp.get(), off)
		if next >= len(z.lp.get()) {
			return fm, fs, m, s
		}
		off = next
	}
}

// lpInScoreRange is zzlIsInRange: r is not empty, the last score is >= min
// and the first <= max.
func (z *ZSet) lpInScoreRange(r *ScoreRange) bool {
	if r.empty() || z.lpLen == 0 {
		return false
	}
	_, fs, _, ls := z.lpFirstLast()
	return r.gteMin(ls) && r.lteMax(fs)
}

// lpInLexRange is zzlIsInLexRange. With mixed scores the members are not
// sorted, and this test, which looks at the first and last entries only,
// decides as in Redis.
func (z *ZSet) lpInLexRange(r *LexRange) bool {
	if r.empty() || z.lpLen == 0 {
		return false
	}
	fm, _, lm, _ := z.lpFirstLast()
	return r.gteMin(lm) && r.lteMax(fm)
}

// lpWalk visits the listpack entries from the first (or, reverse, the last)
// one that satisfies start, skipping offset of them and visiting while inRange
// holds, at most limit (negative: no limit).
func (z *ZSet) lpWalk(reverse bool, start, inRange func(m []byte, s float64) bool, offset, limit int, fn ZVisit) {
	var buf [128]int32
	offs := z.lpOffsets(buf[:])
	i, step := 0, 1
	if reverse {
		i, step = len(offs)-1, -1
	}
	for ; i >= 0 && i < len(offs); i += step {
		m, s, _ := lpEntry(z.lp.get(), int(offs[i]))
		if start(m, s) {
			break
		}
	}
	if i < 0 || i >= len(offs) {
		return
	}
	// Redis checks that the first element found is inside the range (the
	// zzlFirstInRange contract) before it applies the offset.
	if m, s, _ := lpEntry(z.lp.get(), int(offs[i])); !inRange(m, s) {
		return
	}
	for ; offset > 0 && i >= 0 && i < len(offs); offset-- {
		i += step
	}
	for ; limit != 0 && i >= 0 && i < len(offs); i += step {
		m, s, _ := lpEntry(z.lp.get(), int(offs[i]))
		if !inRange(m, s) || !fn(m, s) {
			return
		}
		limit--
	}
}

// slWalk is lpWalk for a skiplist, from the node first.
func slWalk(x *zslNode, reverse bool, inRange func(*zslNode) bool, offset, limit int, fn ZVisit) {
	for ; x != nil && offset > 0; offset-- {
		if reverse {
			x = x.backward
		} else {
			x = x.level0.forward
		}
	}
	for ; x != nil && limit != 0; limit-- {
		if !inRange(x) || !fn(x.memberBytes(), x.score) {
			return
		}
		if reverse {
			x = x.backward
		} else {
			x = x.level0.forward
		}
	}
}

// RangeByScore visits the elements in r in order (from the highest if
// reverse), skipping the first offset (>= 0) of them and visiting at most
// limit (negative: all).
func (z *ZSet) RangeByScore(r *ScoreRange, offset, limit int, reverse bool, fn ZVisit) {
	if z.sl == nil {
		if !z.lpInScoreRange(r) {
			return
		}
		if reverse {
			z.lpWalk(true, func(_ []byte, s float64) bool { return r.lteMax(s) },
				func(_ []byte, s float64) bool { return r.gteMin(s) }, offset, limit, fn)
		} else {
			z.lpWalk(false, func(_ []byte, s float64) bool { return r.gteMin(s) },
				func(_ []byte, s float64) bool { return r.lteMax(s) }, offset, limit, fn)
		}
		return
	}
	if reverse {
		slWalk(z.sl.lastInRange(r), true, func(n *zslNode) bool { return r.gteMin(n.score) }, offset, limit, fn)
	} else {
		slWalk(z.sl.firstInRange(r), false, func(n *zslNode) bool { return r.lteMax(n.score) }, offset, limit, fn)
	}
}

// RangeByLex is RangeByScore for a lexicographic range.
func (z *ZSet) RangeByLex(r *LexRange, offset, limit int, reverse bool, fn ZVisit) {
	if z.sl == nil {
		if !z.lpInLexRange(r) {
			return
		}
		if reverse {
			z.lpWalk(true, func(m []byte, _ float64) bool { return r.lteMax(m) },
				func(m []byte, _ float64) bool { return r.gteMin(m) }, offset, limit, fn)
		} else {
			z.lpWalk(false, func(m []byte, _ float64) bool { return r.gteMin(m) },
				func(m []byte, _ float64) bool { return r.lteMax(m) }, offset, limit, fn)
		}
		return
	}
	if reverse {
		slWalk(z.sl.lastInLexRange(r), true, func(n *zslNode) bool { return r.gteMin(n.memberBytes()) }, offset, limit, fn)
	} else {
		slWalk(z.sl.firstInLexRange(r), false, func(n *zslNode) bool { return r.lteMax(n.memberBytes()) }, offset, limit, fn)
	}
}

// CountByScore returns the number of elements in r.
func (z *ZSet) CountByScore(r *ScoreRange) int {
	if z.sl == nil {
		n := 0
		z.RangeByScore(r, 0, -1, false, func([]byte, float64) bool { n++; return true })
		return n
	}
	first := z.sl.firstInRange(r)
	if first == nil {
		return 0
	}
	last := z.sl.lastInRange(r)
	if last == nil {
		return 0
	}
	return z.sl.rank(last.score, last.member) - z.sl.rank(first.score, first.member) + 1
}

// CountByLex returns the number of elements in r.
func (z *ZSet) CountByLex(r *LexRange) int {
	if z.sl == nil {
		n := 0
		z.RangeByLex(r, 0, -1, false, func([]byte, float64) bool { n++; return true })
		return n
	}
	first := z.sl.firstInLexRange(r)
	if first == nil {
		return 0
	}
	last := z.sl.lastInLexRange(r)
	if last == nil {
		return 0
	}
	return z.sl.rank(last.score, last.member) - z.sl.rank(first.score, first.member) + 1
}

// RemoveRangeByRank deletes ranks start..end (0-based, inclusive, clamped
// as for RangeByRank) and returns how many it deleted.
func (z *ZSet) RemoveRangeByRank(start, end int) int {
	if start < 0 || end >= z.Len() || start > end {
		return 0
	}
	if z.sl != nil {
		return z.sl.removeRangeByRank(start+1, end+1)
	}
	off := z.lpRankOffset(start)
	stop := off
	for r := start; r <= end; r++ {
		_, _, stop = lpEntry(z.lp.get(), stop)
	}
	z.lpDeleteRange(off, stop, end-start+1)
	return end - start + 1
}

// lpRemoveWhere deletes the contiguous run of entries that starts at the
// first entry with start true and goes on while inRange holds.
func (z *ZSet) lpRemoveWhere(start, inRange func(m []byte, s float64) bool) int {
	off := 0
	for off < len(z.lp.get()) {
		m, s, next := lpEntry(z.lp.get(), off)
		if start(m, s) {
			break
		}
		off = next
	}
	end, n := off, 0
	for end < len(z.lp.get()) {
		m, s, next := lpEntry(z.lp.get(), end)
		if !inRange(m, s) {
			break
		}
		end = next
		n++
	}
	if n > 0 {
		z.lpDeleteRange(off, end, n)
	}
	return n
}

// RemoveRangeByScore deletes the elements in r and returns how many.
func (z *ZSet) RemoveRangeByScore(r *ScoreRange) int {
	if z.sl != nil {
		return z.sl.removeRangeByScore(r)
	}
	if !z.lpInScoreRange(r) {
		return 0
	}
	return z.lpRemoveWhere(func(_ []byte, s float64) bool { return r.gteMin(s) },
		func(_ []byte, s float64) bool { return r.lteMax(s) })
}

// RemoveRangeByLex deletes the elements in r and returns how many.
func (z *ZSet) RemoveRangeByLex(r *LexRange) int {
	if z.sl != nil {
		return z.sl.removeRangeByLex(r)
	}
	if !z.lpInLexRange(r) {
		return 0
	}
	return z.lpRemoveWhere(func(m []byte, _ float64) bool { return r.gteMin(m) },
		func(m []byte, _ float64) bool { return r.lteMax(m) })
}

// Pop removes the lowest-scored element (the highest if max) and returns a
// copy of its member with its score. The set must not be empty.
func (z *ZSet) Pop(max bool) (member []byte, score float64) {
	r := 0
	if max {
		r = z.Len() - 1
	}
	z.RangeByRank(r, r, false, func(m []byte, s float64) bool {
		member, score = bytes.Clone(m), s
		return false
	})
	if member == nil {
		member = []byte{}
	}
	z.Remove(member)
	return member, score
}

// At calls fn with the element at 0-based rank r (ascending).
func (z *ZSet) At(r int, fn func(member []byte, score float64)) {
	z.RangeByRank(r, r, false, func(m []byte, s float64) bool {
		fn(m, s)
		return false
	})
}

// Scan continues a ZSCAN: a listpack is returned whole (cursor 0); a
// skiplist's member index is walked from cursor until about count elements
// were visited (at most count*10 buckets), as Redis's dictScan loop does.
func (z *ZSet) Scan(cursor uint64, count int, fn func(member []byte, score float64)) uint64 {
	if z.sl == nil {
		z.Each(false, func(m []byte, s float64) bool { fn(m, s); return true })
		return 0
	}
	count = min(count, 1<<30)
	visited, buckets := 0, 0
	for {
		cursor = z.sl.scan(cursor, func(n *zslNode) {
			visited++
			fn(n.memberBytes(), n.score)
		})
		buckets++
		if cursor == 0 || visited >= count || buckets >= count*10 {
			return cursor
		}
	}
}

// ---------------------------------------------------------------- building

// ZMember is one element of a sorted set being built.
type ZMember struct {
	Member string
	Score  float64
}

// BuildZSet makes a set of the given elements, which must be sorted by
// (score, member) with no duplicate members, encoded as Redis encodes the
// results of ZUNIONSTORE and friends: a listpack when small enough.
func BuildZSet(elems []ZMember, lim ZSetLimits) *ZSet {
	maxLen, total := 0, 0
	for i := range elems {
		maxLen = max(maxLen, len(elems[i].Member))
		total += len(elems[i].Member)
	}
	if int64(len(elems)) <= lim.MaxListpackEntries && int64(maxLen) <= lim.MaxListpackValue && total <= listpackMaxSafety {
		size := 0
		for i := range elems {
			size += lpEntrySize(len(elems[i].Member), lpScore(elems[i].Score))
		}
		lp := make([]byte, 0, size)
		for i := range elems {
			lp = lpAppendEntry(lp, elems[i].Member, lpScore(elems[i].Score))
		}
		if len(elems) == 0 {
			lp = nil
		}
		z := &ZSet{lpLen: len(elems)}
		z.lp.set(lp)
		return z
	}
	sl := newSkiplist()
	size := zslIndexMinSize
	for size < len(elems) {
		size *= 2
	}
	sl.buckets = make([]*zslNode, size)
	for i := len(elems) - 1; i >= 0; i-- {
		n := newZslNode(zslRandomLevel(), elems[i].Score, elems[i].Member)
		sl.insertNode(n)
		sl.indexAdd(n)
	}
	return &ZSet{sl: sl}
}

// ---------------------------------------------------------------- ranges

// ScoreRange is a score interval (zrangespec): Min and Max with their
// exclusive flags.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r *ScoreRange) gteMin(v float64) bool {
	if r.MinEx {
		return v > r.Min
	}
	return v >= r.Min
}

func (r *ScoreRange) lteMax(v float64) bool {
	if r.MaxEx {
		return v < r.Max
	}
	return v <= r.Max
}

// empty reports a range that can hold nothing whatever the set.
func (r *ScoreRange) empty() bool {
	return r.Min > r.Max || r.Min == r.Max && (r.MinEx || r.MaxEx)
}

// LexBound is one end of a lexicographic range: "-" (Inf < 0), "+"
// (Inf > 0), or a member, inclusive ('[') or exclusive ('(').
type LexBound struct {
	Inf   int8
	Value []byte
	Ex    bool
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct {
	Min, Max LexBound
}

// cmpLex compares a member with a bound as Redis's sdscmplex does with its
// shared min/max strings.
func cmpLex(v []byte, b *LexBound) int {
	switch {
	case b.Inf < 0:
		return 1
	case b.Inf > 0:
		return -1
	}
	return bytes.Compare(v, b.Value)
}

func (r *LexRange) gteMin(v []byte) bool {
	c := cmpLex(v, &r.Min)
	if r.Min.Ex {
		return c > 0
	}
	return c >= 0
}

func (r *LexRange) lteMax(v []byte) bool {
	c := cmpLex(v, &r.Max)
	if r.Max.Ex {
		return c < 0
	}
	return c <= 0
}

// empty is zslIsInLexRange's first test: min after max, or equal and one
// of them exclusive.
func (r *LexRange) empty() bool {
	var c int
	a, b := &r.Min, &r.Max
	switch {
	case a.Inf != 0 && a.Inf == b.Inf:
		c = 0
	case a.Inf < 0 || b.Inf > 0:
		c = -1
	case a.Inf > 0 || b.Inf < 0:
		c = 1
	default:
		c = bytes.Compare(a.Value, b.Value)
	}
	return c > 0 || c == 0 && (a.Ex || b.Ex)
}

// ---------------------------------------------------------------- formatting

// ListpackScoreText appends a listpack-encoded set's stored score text
// (Redis's d2string): an integer when the score is integral and within
// ±2^62, else "%.17g". ZSCAN shows a listpack's scores this way.
func ListpackScoreText(dst []byte, f float64) []byte {
	if f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconvx.AppendDouble(dst, f)
}

// bstring views b as a string for lookups (never retained).
func bstring(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
