package store

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// The "skiplist" encoding of a sorted set, as Redis has it: a skiplist
// ordered by (score, member) whose forward links carry spans, so that rank
// lookups are O(log n), plus a hash index from member to node (Redis's dict
// maps the member to the node's score; ours reaches the whole node). The
// index is a chained table with a power-of-two size and Redis's
// reverse-binary SCAN cursor, which Go's map cannot provide.

const (
	zslMaxLevel = 32 // enough for 2^64 elements with p = 1/4
	// zslLevelThreshold is p = 1/4 of the uint32 range.
	zslLevelThreshold = 1 << 30
	zslIndexMinSize   = 4
)

// zslSeed hashes members of every skiplist-encoded sorted set.
var zslSeed = maphash.MakeSeed()

type zslLevel struct {
	forward *zslNode
	span    int // elements crossed by following forward (0 when it is nil)
}

// zslNode is one element. Three in four nodes have a single level, which is
// kept inline so that they cost one allocation.
type zslNode struct {
	member   string
	score    float64
	backward *zslNode
	hnext    *zslNode // next node in the same index bucket
	level0   zslLevel
	upper    []zslLevel // levels 1..n-1
}

func (n *zslNode) lvl(i int) *zslLevel {
	if i == 0 {
		return &n.level0
	}
	return &n.upper[i-1]
}

func (n *zslNode) levels() int { return len(n.upper) + 1 }

// memberBytes views the node's member as bytes (read-only).
func (n *zslNode) memberBytes() []byte {
	return unsafe.Slice(unsafe.StringData(n.member), len(n.member))
}

// zslBefore reports whether (score, member) of n sorts before (score, member).
func zslBefore(n *zslNode, score float64, member string) bool {
	return n.score < score || n.score == score && n.member < member
}

type skiplist struct {
	header *zslNode
	tail   *zslNode
	length int
	level  int

	buckets []*zslNode // member index
}

func newSkiplist() *skiplist {
	h := &zslNode{upper: make([]zslLevel, zslMaxLevel-1)}
	return &skiplist{header: h, level: 1}
}

// zslRandomLevel returns a level in 1..zslMaxLevel with P(level > k) = 4^-k.
func zslRandomLevel() int {
	level := 1
	for level < zslMaxLevel && rand.Uint32() < zslLevelThreshold {
		level++
	}
	return level
}

// newZslNode allocates a node with level levels. The upper levels share
// the node's allocation (sizes rounded up to a few classes), so that a
// search touches one memory block per node, as Redis's inline level array.
func newZslNode(level int, score float64, member string) *zslNode {
	var n *zslNode
	switch {
	case level <= 1:
		n = &zslNode{}
	case level == 2:
		b := &struct {
			n zslNode
			l [1]zslLevel
		}{}
		n = &b.n
		n.upper = b.l[:]
	case level <= 4:
		b := &struct {
			n zslNode
			l [3]zslLevel
		}{}
		n = &b.n
		n.upper = b.l[:level-1]
	case level <= 8:
		b := &struct {
			n zslNode
			l [7]zslLevel
		}{}
		n = &b.n
		n.upper = b.l[:level-1]
	default:
		n = &zslNode{upper: make([]zslLevel, level-1)}
	}
	n.member, n.score = member, score
	return n
}

// insert adds member, which must not be present, and returns its node.
func (sl *skiplist) insert(score float64, member string) *zslNode {
	n := newZslNode(zslRandomLevel(), score, member)
	sl.insertNode(n)
	sl.indexAdd(n)
	return n
}

// insertNode links n (its levels already sized) at its ordered position.
func (sl *skiplist) insertNode(n *zslNode) {
	var update [zslMaxLevel]*zslNode
	var rank [zslMaxLevel]int
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for f := x.lvl(i).forward; f != nil && zslBefore(f, n.score, n.member); f = x.lvl(i).forward {
			rank[i] += x.lvl(i).span
			x = f
		}
		update[i] = x
	}
	level := n.levels()
	if level > sl.level {
		for i := sl.level; i < level; i++ {
			rank[i] = 0
			update[i] = sl.header
			update[i].lvl(i).span = sl.length
		}
		sl.level = level
	}
	for i := 0; i < level; i++ {
		nl, ul := n.lvl(i), update[i].lvl(i)
		nl.forward = ul.forward
		ul.forward = n
		nl.span = ul.span - (rank[0] - rank[i])
		ul.span = rank[0] - rank[i] + 1
	}
	for i := level; i < sl.level; i++ {
		update[i].lvl(i).span++
	}
	if update[0] == sl.header {
		n.backward = nil
	} else {
		n.backward = update[0]
	}
	if f := n.level0.forward; f != nil {
		f.backward = n
	} else {
		sl.tail = n
	}
	sl.length++
}

// findPath fills update with the rightmost node before (score, member) on
// every level and returns the node at that position, if it matches.
func (sl *skiplist) findPath(score float64, member string, update *[zslMaxLevel]*zslNode) *zslNode {
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && zslBefore(f, score, member); f = x.lvl(i).forward {
			x = f
		}
		update[i] = x
	}
	x = x.level0.forward
	if x != nil && x.score == score && x.member == member {
		return x
	}
	return nil
}

// unlinkNode removes x from the list; update is its findPath.
func (sl *skiplist) unlinkNode(x *zslNode, update *[zslMaxLevel]*zslNode) {
	for i := 0; i < sl.level; i++ {
		ul := update[i].lvl(i)
		if ul.forward == x {
			xl := x.lvl(i)
			ul.span += xl.span - 1
			ul.forward = xl.forward
		} else {
			ul.span--
		}
	}
	if f := x.level0.forward; f != nil {
		f.backward = x.backward
	} else {
		sl.tail = x.backward
	}
	for sl.level > 1 && sl.header.lvl(sl.level-1).forward == nil {
		sl.level--
	}
	sl.length--
	for i := 0; i < x.levels(); i++ {
		*x.lvl(i) = zslLevel{}
	}
	x.backward = nil
}

// remove deletes member with the given score; it reports whether it was there.
func (sl *skiplist) remove(score float64, member string) bool {
	var update [zslMaxLevel]*zslNode
	x := sl.findPath(score, member, &update)
	if x == nil {
		return false
	}
	sl.unlinkNode(x, &update)
	sl.indexRemove(x)
	return true
}

// updateScore moves the node of member from curScore to newScore, in place
// when its neighbours keep it where it is.
func (sl *skiplist) updateScore(x *zslNode, newScore float64) {
	if (x.backward == nil || x.backward.score < newScore) &&
		(x.level0.forward == nil || x.level0.forward.score > newScore) {
		x.score = newScore
		return
	}
	var update [zslMaxLevel]*zslNode
	sl.findPath(x.score, x.member, &update)
	sl.unlinkNode(x, &update)
	x.score = newScore
	sl.insertNode(x) // keeps its index entry: the node is the same
}

// rank returns the 1-based rank of (score, member), 0 if absent.
func (sl *skiplist) rank(score float64, member string) int {
	r := 0
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && (zslBefore(f, score, member) || f.score == score && f.member == member); f = x.lvl(i).forward {
			r += x.lvl(i).span
			x = f
		}
		if x != sl.header && x.score == score && x.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based rank r, or nil.
func (sl *skiplist) byRank(r int) *zslNode {
	if r < 1 || r > sl.length {
		return nil
	}
	traversed := 0
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for x.lvl(i).forward != nil && traversed+x.lvl(i).span <= r {
			traversed += x.lvl(i).span
			x = x.lvl(i).forward
		}
		if traversed == r {
			return x
		}
	}
	return nil
}

func (sl *skiplist) first() *zslNode { return sl.header.level0.forward }

// ---------------------------------------------------------------- score ranges

// isInRange reports whether some element may fall in r.
func (sl *skiplist) isInRange(r *ScoreRange) bool {
	if r.empty() {
		return false
	}
	if sl.tail == nil || !r.gteMin(sl.tail.score) {
		return false
	}
	f := sl.first()
	return f != nil && r.lteMax(f.score)
}

func (sl *skiplist) firstInRange(r *ScoreRange) *zslNode {
	if !sl.isInRange(r) {
		return nil
	}
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && !r.gteMin(f.score); f = x.lvl(i).forward {
			x = f
		}
	}
	x = x.level0.forward
	if x == nil || !r.lteMax(x.score) {
		return nil
	}
	return x
}

func (sl *skiplist) lastInRange(r *ScoreRange) *zslNode {
	if !sl.isInRange(r) {
		return nil
	}
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && r.lteMax(f.score); f = x.lvl(i).forward {
			x = f
		}
	}
	if x == sl.header || !r.gteMin(x.score) {
		return nil
	}
	return x
}

// ---------------------------------------------------------------- lex ranges

func (sl *skiplist) isInLexRange(r *LexRange) bool {
	if r.empty() {
		return false
	}
	if sl.tail == nil || !r.gteMin(sl.tail.memberBytes()) {
		return false
	}
	f := sl.first()
	return f != nil && r.lteMax(f.memberBytes())
}

func (sl *skiplist) firstInLexRange(r *LexRange) *zslNode {
	if !sl.isInLexRange(r) {
		return nil
	}
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && !r.gteMin(f.memberBytes()); f = x.lvl(i).forward {
			x = f
		}
	}
	x = x.level0.forward
	if x == nil || !r.lteMax(x.memberBytes()) {
		return nil
	}
	return x
}

func (sl *skiplist) lastInLexRange(r *LexRange) *zslNode {
	if !sl.isInLexRange(r) {
		return nil
	}
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && r.lteMax(f.memberBytes()); f = x.lvl(i).forward {
			x = f
		}
	}
	if x == sl.header || !r.gteMin(x.memberBytes()) {
		return nil
	}
	return x
}

// ---------------------------------------------------------------- range deletion

// removeWhile deletes the nodes following update[0] as long as more accepts
// them, and returns how many it deleted.
func (sl *skiplist) removeWhile(update *[zslMaxLevel]*zslNode, more func(*zslNode) bool) int {
	removed := 0
	x := update[0].level0.forward
	for x != nil && more(x) {
		next := x.level0.forward
		sl.unlinkNode(x, update)
		sl.indexRemove(x)
		removed++
		x = next
	}
	return removed
}

func (sl *skiplist) removeRangeByScore(r *ScoreRange) int {
	var update [zslMaxLevel]*zslNode
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && !r.gteMin(f.score); f = x.lvl(i).forward {
			x = f
		}
		update[i] = x
	}
	return sl.removeWhile(&update, func(n *zslNode) bool { return r.lteMax(n.score) })
}

func (sl *skiplist) removeRangeByLex(r *LexRange) int {
	var update [zslMaxLevel]*zslNode
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.lvl(i).forward; f != nil && !r.gteMin(f.memberBytes()); f = x.lvl(i).forward {
			x = f
		}
		update[i] = x
	}
	return sl.removeWhile(&update, func(n *zslNode) bool { return r.lteMax(n.memberBytes()) })
}

// removeRangeByRank deletes 1-based ranks start..end inclusive.
func (sl *skiplist) removeRangeByRank(start, end int) int {
	var update [zslMaxLevel]*zslNode
	traversed := 0
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for x.lvl(i).forward != nil && traversed+x.lvl(i).span < start {
			traversed += x.lvl(i).span
			x = x.lvl(i).forward
		}
		update[i] = x
	}
	rank := traversed + 1
	return sl.removeWhile(&update, func(*zslNode) bool {
		if rank > end {
			return false
		}
		rank++
		return true
	})
}

// ---------------------------------------------------------------- member index

func zslHash(member string) uint64 { return maphash.String(zslSeed, member) }

func (sl *skiplist) find(member string) *zslNode {
	if len(sl.buckets) == 0 {
		return nil
	}
	for n := sl.buckets[zslHash(member)&uint64(len(sl.buckets)-1)]; n != nil; n = n.hnext {
		if n.member == member {
			return n
		}
	}
	return nil
}

// indexAdd links n, whose member must not be indexed yet. Called after the
// node was counted in sl.length.
func (sl *skiplist) indexAdd(n *zslNode) {
	if sl.length > len(sl.buckets) {
		sl.resizeIndex(max(zslIndexMinSize, len(sl.buckets)*2))
	}
	i := zslHash(n.member) & uint64(len(sl.buckets)-1)
	n.hnext = sl.buckets[i]
	sl.buckets[i] = n
}

// indexRemove unlinks n; called after sl.length was decremented.
func (sl *skiplist) indexRemove(n *zslNode) {
	p := &sl.buckets[zslHash(n.member)&uint64(len(sl.buckets)-1)]
	for *p != nil {
		if *p == n {
			*p = n.hnext
			n.hnext = nil
			break
		}
		p = &(*p).hnext
	}
	if size := len(sl.buckets); size > zslIndexMinSize && sl.length*8 < size {
		target := zslIndexMinSize
		for target < sl.length*2 {
			target *= 2
		}
		sl.resizeIndex(target)
	}
}

func (sl *skiplist) resizeIndex(size int) {
	nb := make([]*zslNode, size)
	mask := uint64(size - 1)
	for _, n := range sl.buckets {
		for n != nil {
			next := n.hnext
			i := zslHash(n.member) & mask
			n.hnext = nb[i]
			nb[i] = n
			n = next
		}
	}
	sl.buckets = nb
}

// scan visits the index bucket at cursor and returns the next cursor (0 when
// the table has been covered): Redis's dictScan guarantees, with one table.
func (sl *skiplist) scan(cursor uint64, fn func(*zslNode)) uint64 {
	if sl.length == 0 || len(sl.buckets) == 0 {
		return 0
	}
	mask := uint64(len(sl.buckets) - 1)
	for n := sl.buckets[cursor&mask]; n != nil; n = n.hnext {
		fn(n)
	}
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// clone copies the list, inserting from the tail so that every insertion
// stops at the header (as Redis's zsetDup does).
func (sl *skiplist) clone() *skiplist {
	c := newSkiplist()
	if sl.length > 0 {
		size := zslIndexMinSize
		for size < sl.length {
			size *= 2
		}
		c.buckets = make([]*zslNode, size)
	}
	for x := sl.tail; x != nil; x = x.backward {
		n := newZslNode(x.levels(), x.score, x.member) // members are immutable: shared
		c.insertNode(n)
		c.indexAdd(n)
	}
	return c
}
