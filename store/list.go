package store

import (
	"bytes"
	"encoding/binary"
	"iter"
	"slices"
	"sync/atomic"
	"unsafe"
)

// List is a list value. Redis 7.0 keeps every list as a quicklist (OBJECT
// ENCODING always answers "quicklist": the listpack list encoding only came
// with 7.2): a doubly linked list of listpack nodes, each bounded by
// list-max-listpack-size (the "fill"). List is built the same way: a deque
// of nodes, each a pointer-free byte buffer of length-prefixed entries, so a
// million-element list costs about a thousand heap objects and pushes and
// pops at either end are O(1) amortised.
//
// An element at least as long as the packed threshold (1 GiB by default;
// DEBUG QUICKLIST-PACKED-THRESHOLD changes it) lives alone in a "plain"
// node, as in Redis.
//
// Byte slices returned by the accessors alias the list: they are valid until
// the list is next modified, and must not be written to.
type List struct {
	nodes []*listNode // a deque: the live nodes are nodes[head:]
	head  int
	count int
	fill  int // list-max-listpack-size, clamped as quicklistSetFill does
}

// listNode is one node: count entries in buf[lo:hi]. Free space is kept on
// both sides of the live bytes so that pushes at either end of the node do
// not move the other entries.
//
// An entry is uvarint(len) + data + backlen(len), where backlen holds the
// same number in the same number of bytes, written so that it can be read
// from its last byte backwards (7 bits a byte, the high bit set on every
// byte but the first one): the node can be walked in both directions.
type listNode struct {
	buf    []byte
	lo, hi int
	count  int
	plain  bool // a single element of at least the packed threshold
}

const (
	listFillMax        = 1<<15 - 1 // Redis's FILL_MAX
	listFillMin        = -5
	listSizeSafety     = 8192 // SIZE_SAFETY_LIMIT: count-bounded nodes stay below this
	listSizeOverhead   = 8    // SIZE_ESTIMATE_OVERHEAD
	listpackHeaderSize = 7    // a listpack's header and end byte, counted in node sizes as Redis does
	listNodeMinCap     = 64
)

// listSizeLevels are the byte limits of fills -1..-5 (optimization_level).
var listSizeLevels = [...]int{4096, 8192, 16384, 32768, 65536}

// listPackedThreshold is quicklist.c's packed_threshold: elements at least
// this long get a plain node of their own. It is process-wide, as in Redis.
var listPackedThreshold atomic.Int64

const listDefaultPackedThreshold = 1 << 30

func init() {
	valueKinds[TypeList] = func(p unsafe.Pointer) Value { return (*List)(p) }
	listPackedThreshold.Store(listDefaultPackedThreshold)
}

// SetListPackedThreshold implements DEBUG QUICKLIST-PACKED-THRESHOLD: 0
// restores the default (1 GiB); values above 4 GiB - 1 MiB are refused
// (false), as quicklistisSetPackedThreshold does.
func SetListPackedThreshold(sz uint64) bool {
	if sz > 1<<32-1<<20 {
		return false
	}
	if sz == 0 {
		sz = listDefaultPackedThreshold
	}
	listPackedThreshold.Store(int64(sz))
	return true
}

func isLargeListElement(n int) bool { return int64(n) >= listPackedThreshold.Load() }

// NewList returns an empty list whose nodes are bounded by fill
// (list-max-listpack-size: a positive entry count, or -1..-5 for 4..64 KiB).
func NewList(fill int64) *List {
	f := int(max(min(fill, listFillMax), listFillMin))
	return &List{fill: f}
}

// List returns the entry's list value; the caller has checked Type().
func (e *Entry) List() *List { return (*List)(e.val) }

// Type implements Value.
func (l *List) Type() Type { return TypeList }

// Encoding implements Value.
func (l *List) Encoding() string { return "quicklist" }

// Len implements Value: the number of elements.
func (l *List) Len() int { return l.count }

func (l *List) pointer() unsafe.Pointer { return unsafe.Pointer(l) }

// ---------------------------------------------------------------- entries

func listUvarintSize(n int) int {
	s := 1
	for n >= 0x80 {
		n >>= 7
		s++
	}
	return s
}

// listEntrySize is the encoded size of an element of n bytes.
func listEntrySize(n int) int { return 2*listUvarintSize(n) + n }

// putListEntry encodes v at the start of dst, which has room for it.
func putListEntry(dst []byte, v []byte) {
	k := binary.PutUvarint(dst, uint64(len(v)))
	copy(dst[k:], v)
	// backlen: the most significant group first, the continuation bit on
	// every byte except that first one.
	p := k + len(v)
	for i := k - 1; i >= 0; i-- {
		b := byte(len(v)>>(7*i)) & 0x7f
		if i < k-1 {
			b |= 0x80
		}
		dst[p] = b
		p++
	}
}

// listEntryAt decodes the entry starting at pos: its data and the position of
// the next entry.
func listEntryAt(buf []byte, pos int) (data []byte, next int) {
	n, k := binary.Uvarint(buf[pos:])
	start := pos + k
	end := start + int(n)
	return buf[start:end:end], end + k
}

// listEntryBefore decodes the entry ending at end: its data and its start.
func listEntryBefore(buf []byte, end int) (data []byte, start int) {
	n, shift, i := 0, 0, end-1
	for {
		b := buf[i]
		n |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
		i--
		shift += 7
	}
	k := end - i
	dataEnd := i
	return buf[dataEnd-n : dataEnd : dataEnd], dataEnd - n - k
}

// ---------------------------------------------------------------- nodes

func (n *listNode) bytes() int { return n.hi - n.lo }

// sz is the node size Redis's limits are checked against.
func (n *listNode) sz() int { return n.hi - n.lo + listpackHeaderSize }

func newListNode(v []byte, roomAtFront bool) *listNode {
	k := listEntrySize(len(v))
	n := &listNode{count: 1}
	if isLargeListElement(len(v)) {
		n.plain = true
		n.buf = make([]byte, k)
		n.hi = k
	} else {
		c := max(listNodeMinCap, 2*k)
		n.buf = make([]byte, c)
		if roomAtFront {
			n.lo = c - k
			n.hi = c
		} else {
			n.hi = k
		}
	}
	putListEntry(n.buf[n.lo:], v)
	return n
}

// listSizeMeetsFill is _quicklistNodeSizeMeetsOptimizationRequirement.
func listSizeMeetsFill(sz, fill int) bool {
	if fill >= 0 {
		return false
	}
	off := -fill - 1
	return off < len(listSizeLevels) && sz <= listSizeLevels[off]
}

// listAllowInsert is _quicklistNodeAllowInsert: may an element of sz bytes join
// node n?
func listAllowInsert(n *listNode, fill, sz int) bool {
	if n == nil || n.plain || isLargeListElement(sz) {
		return false
	}
	newSz := n.sz() + sz + listSizeOverhead
	if listSizeMeetsFill(newSz, fill) {
		return true
	}
	if newSz > listSizeSafety {
		return false
	}
	return n.count < fill
}

// withinLimits reports whether a multi-entry node respects the fill.
func (n *listNode) withinLimits(fill int) bool {
	if n.count <= 1 {
		return true
	}
	if n.plain {
		return false
	}
	if listSizeMeetsFill(n.sz(), fill) {
		return true
	}
	return n.sz() <= listSizeSafety && n.count <= fill
}

// reserveFront makes room for k bytes before lo.
func (n *listNode) reserveFront(k int) {
	if n.lo >= k {
		return
	}
	live := n.bytes()
	c := max(listNodeMinCap, 2*(live+k))
	nb := make([]byte, c)
	lo := c - live
	copy(nb[lo:], n.buf[n.lo:n.hi])
	n.buf, n.lo, n.hi = nb, lo, c
}

// reserveBack makes room for k bytes after hi.
func (n *listNode) reserveBack(k int) {
	if len(n.buf)-n.hi >= k {
		return
	}
	live := n.bytes()
	if n.lo >= k+live/2 {
		// Plenty of free space at the front (pops from the head): slide.
		copy(n.buf, n.buf[n.lo:n.hi])
		n.lo, n.hi = 0, live
		return
	}
	c := max(listNodeMinCap, 2*(live+k))
	nb := make([]byte, c)
	copy(nb, n.buf[n.lo:n.hi])
	n.buf, n.lo, n.hi = nb, 0, live
}

func (n *listNode) pushFront(v []byte) {
	k := listEntrySize(len(v))
	n.reserveFront(k)
	n.lo -= k
	putListEntry(n.buf[n.lo:], v)
	n.count++
}

func (n *listNode) pushBack(v []byte) {
	k := listEntrySize(len(v))
	n.reserveBack(k)
	putListEntry(n.buf[n.hi:], v)
	n.hi += k
	n.count++
}

// compact drops the free space of a node that will not grow any more.
func (n *listNode) compact() {
	live := n.bytes()
	if len(n.buf)-live <= live/8+16 {
		return
	}
	nb := make([]byte, live)
	copy(nb, n.buf[n.lo:n.hi])
	n.buf, n.lo, n.hi = nb, 0, live
}

// offsetOf returns the byte offset of entry j (0 <= j <= count; count gives
// hi), scanning from the nearer end.
func (n *listNode) offsetOf(j int) int {
	if j <= n.count/2 {
		pos := n.lo
		for ; j > 0; j-- {
			_, pos = listEntryAt(n.buf, pos)
		}
		return pos
	}
	pos := n.hi
	for k := n.count - j; k > 0; k-- {
		_, pos = listEntryBefore(n.buf, pos)
	}
	return pos
}

// splice replaces the bytes buf[from:to] (whole entries) with repl, which
// holds added entries, and adjusts count by delta.
func (n *listNode) splice(from, to int, repl []byte, delta int) {
	grow := len(repl) - (to - from)
	switch {
	case grow <= 0:
		copy(n.buf[from:], repl)
		copy(n.buf[from+len(repl):], n.buf[to:n.hi])
		n.hi += grow
	case len(n.buf)-n.hi >= grow:
		copy(n.buf[to+grow:], n.buf[to:n.hi])
		copy(n.buf[from:], repl)
		n.hi += grow
	default:
		live := n.bytes() + grow
		nb := make([]byte, max(listNodeMinCap, live+live/4))
		w := copy(nb, n.buf[n.lo:from])
		w += copy(nb[w:], repl)
		w += copy(nb[w:], n.buf[to:n.hi])
		n.buf, n.lo, n.hi = nb, 0, w
	}
	n.count += delta
}

// ---------------------------------------------------------------- deque of nodes

func (l *List) live() []*listNode { return l.nodes[l.head:] }

func (l *List) first() *listNode {
	if l.head == len(l.nodes) {
		return nil
	}
	return l.nodes[l.head]
}

func (l *List) last() *listNode {
	if l.head == len(l.nodes) {
		return nil
	}
	return l.nodes[len(l.nodes)-1]
}

func (l *List) addFirstNode(n *listNode) {
	if l.head == 0 {
		live := len(l.nodes)
		room := max(4, live)
		nn := make([]*listNode, room+live, room+live+max(4, live/2))
		copy(nn[room:], l.nodes)
		l.nodes, l.head = nn, room
	}
	l.head--
	l.nodes[l.head] = n
}

func (l *List) addLastNode(n *listNode) {
	if l.head > 0 && len(l.nodes) == cap(l.nodes) && l.head >= len(l.nodes)/2 {
		// Mostly free space at the front: slide instead of growing.
		live := copy(l.nodes, l.nodes[l.head:])
		clear(l.nodes[live:])
		l.nodes, l.head = l.nodes[:live], 0
	}
	l.nodes = append(l.nodes, n)
}

// removeNodes drops the live nodes [i, j) (indexes into live()).
func (l *List) removeNodes(i, j int) {
	if i == j {
		return
	}
	if i == 0 {
		clear(l.nodes[l.head : l.head+j])
		l.head += j
	} else {
		l.nodes = slices.Delete(l.nodes, l.head+i, l.head+j)
	}
	if l.head == len(l.nodes) {
		l.nodes, l.head = l.nodes[:0], 0
	}
}

// replaceNode puts repl in place of live node i.
func (l *List) replaceNode(i int, repl []*listNode) {
	at := l.head + i
	l.nodes = slices.Replace(l.nodes, at, at+1, repl...)
}

// locate returns the live node index holding element i (0 <= i < count)
// and the element's position in that node.
func (l *List) locate(i int) (ni, j int) {
	live := l.live()
	if i < l.count/2 {
		for ni = 0; i >= live[ni].count; ni++ {
			i -= live[ni].count
		}
		return ni, i
	}
	back := l.count - 1 - i // position counted from the tail
	for ni = len(live) - 1; back >= live[ni].count; ni-- {
		back -= live[ni].count
	}
	return ni, live[ni].count - 1 - back
}

// rechunk splits live node i, when it no longer respects the fill (after
// LSET or LINSERT made it grow), into nodes that do, plain ones for large
// elements.
func (l *List) rechunk(i int) {
	n := l.live()[i]
	if n.withinLimits(l.fill) && (n.count <= 1 || !n.hasLarge()) {
		if n.count == 1 {
			v, _ := listEntryAt(n.buf, n.lo)
			n.plain = isLargeListElement(len(v))
		}
		return
	}
	var out []*listNode
	var cur *listNode
	for pos := n.lo; pos < n.hi; {
		v, next := listEntryAt(n.buf, pos)
		if listAllowInsert(cur, l.fill, len(v)) {
			cur.pushBack(v)
		} else {
			if cur != nil {
				cur.compact()
			}
			cur = newListNode(v, false)
			out = append(out, cur)
		}
		pos = next
	}
	cur.compact()
	l.replaceNode(i, out)
}

func (n *listNode) hasLarge() bool {
	for pos := n.lo; pos < n.hi; {
		v, next := listEntryAt(n.buf, pos)
		if isLargeListElement(len(v)) {
			return true
		}
		pos = next
	}
	return false
}

// ---------------------------------------------------------------- list API

// Push adds v at the head (LPUSH) or the tail (RPUSH).
func (l *List) Push(v []byte, head bool) {
	if head {
		if n := l.first(); listAllowInsert(n, l.fill, len(v)) {
			n.pushFront(v)
		} else {
			if n != nil {
				n.compact()
			}
			l.addFirstNode(newListNode(v, true))
		}
	} else {
		if n := l.last(); listAllowInsert(n, l.fill, len(v)) {
			n.pushBack(v)
		} else {
			if n != nil {
				n.compact()
			}
			l.addLastNode(newListNode(v, false))
		}
	}
	l.count++
}

// Pop removes and returns (a copy of) the head or tail element; nil if the
// list is empty.
func (l *List) Pop(head bool) []byte {
	if l.count == 0 {
		return nil
	}
	var v []byte
	if head {
		n := l.first()
		data, next := listEntryAt(n.buf, n.lo)
		v = bytes.Clone(data)
		if v == nil {
			v = []byte{}
		}
		n.lo = next
		n.count--
		if n.count == 0 {
			l.removeNodes(0, 1)
		}
	} else {
		n := l.last()
		data, start := listEntryBefore(n.buf, n.hi)
		v = bytes.Clone(data)
		if v == nil {
			v = []byte{}
		}
		n.hi = start
		n.count--
		if n.count == 0 {
			l.removeNodes(len(l.live())-1, len(l.live()))
		}
	}
	l.count--
	return v
}

// normIndex turns a Redis index (negative = from the tail) into a position,
// reporting whether it is in range.
func (l *List) normIndex(i int64) (int, bool) {
	if i < 0 {
		i += int64(l.count)
	}
	if i < 0 || i >= int64(l.count) {
		return 0, false
	}
	return int(i), true
}

// Index returns element i (negative counts from the tail), as LINDEX.
func (l *List) Index(i int64) ([]byte, bool) {
	p, ok := l.normIndex(i)
	if !ok {
		return nil, false
	}
	ni, j := l.locate(p)
	n := l.live()[ni]
	v, _ := listEntryAt(n.buf, n.offsetOf(j))
	return v, true
}

// Set replaces element i (negative counts from the tail), as LSET; false
// if i is out of range.
func (l *List) Set(i int64, v []byte) bool {
	p, ok := l.normIndex(i)
	if !ok {
		return false
	}
	ni, j := l.locate(p)
	n := l.live()[ni]
	from := n.offsetOf(j)
	_, to := listEntryAt(n.buf, from)
	enc := make([]byte, listEntrySize(len(v)))
	putListEntry(enc, v)
	n.splice(from, to, enc, 0)
	l.rechunk(ni)
	return true
}

// Insert puts v before or after the first element equal to pivot (from the
// head), as LINSERT; false if there is no such element.
func (l *List) Insert(pivot, v []byte, after bool) bool {
	for ni, n := range l.live() {
		for pos := n.lo; pos < n.hi; {
			e, next := listEntryAt(n.buf, pos)
			if bytes.Equal(e, pivot) {
				at := pos
				if after {
					at = next
				}
				enc := make([]byte, listEntrySize(len(v)))
				putListEntry(enc, v)
				n.splice(at, at, enc, 1)
				l.count++
				l.rechunk(ni)
				return true
			}
			pos = next
		}
	}
	return false
}

// Range calls fn for the elements start..stop (inclusive positions, 0 <=
// start <= stop < Len()), from start to stop, or from stop down to start if
// reverse; fn returns false to stop early.
func (l *List) Range(start, stop int, reverse bool, fn func(v []byte) bool) {
	if start < 0 || stop >= l.count || start > stop {
		return
	}
	left := stop - start + 1
	live := l.live()
	if !reverse {
		ni, j := l.locate(start)
		pos := live[ni].offsetOf(j)
		for left > 0 {
			n := live[ni]
			for pos < n.hi && left > 0 {
				v, next := listEntryAt(n.buf, pos)
				if !fn(v) {
					return
				}
				pos = next
				left--
			}
			ni++
			if ni < len(live) {
				pos = live[ni].lo
			}
		}
		return
	}
	ni, j := l.locate(stop)
	pos := live[ni].offsetOf(j + 1)
	for left > 0 {
		n := live[ni]
		for pos > n.lo && left > 0 {
			v, start := listEntryBefore(n.buf, pos)
			if !fn(v) {
				return
			}
			pos = start
			left--
		}
		ni--
		if ni >= 0 {
			pos = live[ni].hi
		}
	}
}

// All iterates over every element from head to tail.
func (l *List) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, n := range l.live() {
			for pos := n.lo; pos < n.hi; {
				v, next := listEntryAt(n.buf, pos)
				if !yield(v) {
					return
				}
				pos = next
			}
		}
	}
}

// DelRange removes n elements from position start on (0 <= start, start+n
// <= Len()).
func (l *List) DelRange(start, n int) {
	if n <= 0 || start < 0 || start >= l.count {
		return
	}
	n = min(n, l.count-start)
	ni, j := l.locate(start)
	l.count -= n
	live := l.live()
	firstDrop, lastDrop := -1, -1 // whole nodes removed: live[firstDrop:lastDrop]
	for n > 0 {
		node := live[ni]
		del := min(n, node.count-j)
		switch {
		case j == 0 && del == node.count:
			if firstDrop < 0 {
				firstDrop = ni
			}
			lastDrop = ni + 1
		case j == 0:
			node.lo = node.offsetOf(del)
			node.count -= del
		case j+del == node.count:
			node.hi = node.offsetOf(j)
			node.count -= del
		default:
			from, to := node.offsetOf(j), node.offsetOf(j+del)
			node.splice(from, to, nil, -del)
		}
		n -= del
		ni++
		j = 0
	}
	if firstDrop >= 0 {
		l.removeNodes(firstDrop, lastDrop)
	}
}

// Remove deletes elements equal to v, as LREM: up to count of them from the
// head (count > 0), up to -count from the tail (count < 0), or all of them
// (count == 0). It returns how many it removed.
func (l *List) Remove(v []byte, count int64) int64 {
	limit := count // 0 = no limit
	fromTail := count < 0
	if fromTail {
		limit = -count
		if limit < 0 {
			// -MinInt64 overflows; Redis's counter then never reaches it
			// and every match goes.
			limit = 0
		}
	}
	var removed int64
	live := l.live()
	var marks []int
	empty := false
	visit := func(n *listNode) {
		marks = marks[:0]
		if !fromTail {
			for pos := n.lo; pos < n.hi && (limit == 0 || removed < limit); {
				e, next := listEntryAt(n.buf, pos)
				if bytes.Equal(e, v) {
					marks = append(marks, pos)
					removed++
				}
				pos = next
			}
		} else {
			for pos := n.hi; pos > n.lo && (limit == 0 || removed < limit); {
				e, start := listEntryBefore(n.buf, pos)
				if bytes.Equal(e, v) {
					marks = append(marks, start)
					removed++
				}
				pos = start
			}
			slices.Reverse(marks)
		}
		if len(marks) == 0 {
			return
		}
		// One compaction pass skipping the marked entries.
		w, m := n.lo, 0
		for pos := n.lo; pos < n.hi; {
			_, next := listEntryAt(n.buf, pos)
			if m < len(marks) && marks[m] == pos {
				m++
			} else {
				if w != pos {
					copy(n.buf[w:], n.buf[pos:next])
				}
				w += next - pos
			}
			pos = next
		}
		n.hi = w
		n.count -= len(marks)
		l.count -= len(marks)
		if n.count == 0 {
			empty = true
		}
	}
	if !fromTail {
		for _, n := range live {
			if limit != 0 && removed >= limit {
				break
			}
			visit(n)
		}
	} else {
		for i := len(live) - 1; i >= 0; i-- {
			if limit != 0 && removed >= limit {
				break
			}
			visit(live[i])
		}
	}
	if empty {
		kept := l.nodes[:l.head]
		for _, n := range live {
			if n.count > 0 {
				kept = append(kept, n)
			}
		}
		clear(l.nodes[len(kept):])
		l.nodes = kept
		if l.head == len(l.nodes) {
			l.nodes, l.head = l.nodes[:0], 0
		}
	}
	return removed
}

// Clone implements Value.
func (l *List) Clone() Value {
	c := &List{fill: l.fill, count: l.count, nodes: make([]*listNode, 0, len(l.live()))}
	for _, n := range l.live() {
		nb := make([]byte, n.bytes())
		copy(nb, n.buf[n.lo:n.hi])
		c.nodes = append(c.nodes, &listNode{buf: nb, hi: len(nb), count: n.count, plain: n.plain})
	}
	return c
}

// MemoryUsage implements Value, the way Redis's objectComputeSize does for
// a quicklist: the headers plus the average of the first samples nodes
// (0 = all of them) times the number of nodes.
func (l *List) MemoryUsage(samples int) int64 {
	const header = 16 + 40 // robj + quicklist, as Redis counts them
	const nodeHeader = 32  // quicklistNode
	live := l.live()
	if len(live) == 0 {
		return header
	}
	if samples <= 0 || samples > len(live) {
		samples = len(live)
	}
	var sum int64
	for _, n := range live[:samples] {
		sum += nodeHeader + int64(cap(n.buf))
	}
	return header + int64(float64(sum)/float64(samples)*float64(len(live)))
}

// Digest implements Value: each element mixed in order, as Redis's
// xorObjectDigest does for lists.
func (l *List) Digest(d Digester) {
	for v := range l.All() {
		d.Mix(v)
	}
}

// QuicklistInfo returns what DEBUG OBJECT reports about a quicklist: the
// number of nodes, the fill (list-max-listpack-size as clamped) and the
// total size of the nodes, counted as Redis counts listpack bytes.
func (l *List) QuicklistInfo() (nodes, fill int, size int64) {
	for _, n := range l.live() {
		size += int64(n.sz())
	}
	return len(l.live()), l.fill, size
}

// nodeCount is the number of nodes (tests).
func (l *List) nodeCount() int { return len(l.live()) }
