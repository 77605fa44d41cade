package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/shoal-db/shoal/listpack"
)

// Stream is a stream value (Redis 5+ streams, with Redis 7.0's counters).
//
// Redis keeps a stream as a radix tree of listpacks: each tree key is the
// 128-bit ID of the node's first ("master") entry, and each listpack holds
// a run of consecutive entries delta-encoded against the master, with the
// field names of entries that repeat the master's fields left out. Stream
// keeps the same shape without the tree: an ordered deque of nodes, each a
// pointer-free byte buffer of packed entries, found by binary search on
// the master IDs (streams only grow at the tail and shrink mostly at the
// head, which a deque does in O(1)).
//
// Nodes are cut exactly where Redis cuts its listpacks: a node takes at
// most stream-node-max-entries entries (live and deleted) and is closed
// when its Redis listpack size plus the new entry's field and value bytes
// reaches stream-node-max-bytes; each node tracks the size its listpack
// would have for that purpose. As in Redis, XDEL and exact trimming inside
// a node only flag entries as deleted (tombstones), and a node goes away
// when its last live entry does. So approximate trimming (MAXLEN ~, which
// drops whole nodes only), XINFO's radix-tree-keys and radix-tree-nodes,
// and the entries-read / lag rules that depend on tombstones all come out
// as in Redis.
//
// Byte slices returned by iterators alias the stream: valid until the
// stream is next modified, never to be written to.
type Stream struct {
	nodes []streamNode // a deque: the live nodes are nodes[head:]
	head  int

	length       uint64
	lastID       StreamID // the last ID ever added (or set by XSETID)
	firstID      StreamID // the first live entry's ID, 0-0 if empty
	maxDeletedID StreamID // the greatest ID deleted by XDEL
	entriesAdded uint64   // all-time count of added entries

	groups []*StreamGroup // by name, in byte order (Redis's rax order)
}

// StreamID is a stream entry ID: milliseconds and sequence number.
type StreamID struct {
	Ms, Seq uint64
}

// MaxStreamID is the greatest possible ID (what "+" means).
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Compare returns -1, 0 or 1 as a is less than, equal to or greater than b.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// IsZero reports whether id is 0-0.
func (id StreamID) IsZero() bool { return id.Ms == 0 && id.Seq == 0 }

// Next returns the following ID; ok is false (and the ID 0-0) when id is
// the greatest ID (streamIncrID).
func (id StreamID) Next() (StreamID, bool) {
	switch {
	case id.Seq < math.MaxUint64:
		return StreamID{id.Ms, id.Seq + 1}, true
	case id.Ms < math.MaxUint64:
		return StreamID{id.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Prev returns the preceding ID; ok is false (and the ID the greatest one)
// when id is 0-0 (streamDecrID).
func (id StreamID) Prev() (StreamID, bool) {
	switch {
	case id.Seq > 0:
		return StreamID{id.Ms, id.Seq - 1}, true
	case id.Ms > 0:
		return StreamID{id.Ms - 1, math.MaxUint64}, true
	}
	return MaxStreamID, false
}

// AppendTo appends the "ms-seq" form of id.
func (id StreamID) AppendTo(dst []byte) []byte {
	dst = strconv.AppendUint(dst, id.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, id.Seq, 10)
}

// String returns "ms-seq".
func (id StreamID) String() string { return string(id.AppendTo(nil)) }

// key lets a StreamID be an idChunks record (a consumer's pending IDs).
func (id StreamID) key() StreamID { return id }

// ---------------------------------------------------------------- nodes

// streamNode is one run of entries, Redis's listpack. buf holds the master
// fields, then the entries:
//
//	master fields: uvarint(n) then n × (uvarint(len) + bytes)
//	entry:         uvarint(L) + body(L bytes) + backlen(L)
//	body:          flags(1) + uvarint(ms - master.ms) + uvarint(seq)
//	               [+ uvarint(nfields) unless flagSameFields]
//	               + the elements: values only with flagSameFields,
//	               field, value, field, value... otherwise; each element
//	               uvarint(len) + bytes.
//
// backlen is L again, written to be read from its last byte backwards, so
// that the entries can be walked in both directions.
type streamNode struct {
	master       StreamID
	last         StreamID // the last entry's ID, deleted or not
	buf          []byte
	entriesStart int // where the entries begin in buf
	masterFields int
	live, dead   int // entries not deleted / flagged deleted
	// lpBody is the size Redis's listpack for the node would have, minus
	// its header and end byte and its live/deleted counters (which change
	// size as they grow): see lpBytes.
	lpBody int64
}

const (
	flagDeleted    = 1 << 0 // STREAM_ITEM_FLAG_DELETED
	flagSameFields = 1 << 1 // STREAM_ITEM_FLAG_SAMEFIELDS

	// streamListpackMaxSize is STREAM_LISTPACK_MAX_SIZE: no node grows past
	// it whatever stream-node-max-bytes says, and no entry may carry more
	// field and value bytes.
	streamListpackMaxSize = 1 << 30
)

// lpBytes is the size of the node's Redis listpack (lpBytes(lp)): header
// (6) + end byte (1) + the live and deleted counters + the rest.
func (n *streamNode) lpBytes() int64 {
	return 7 + lpIntSize(int64(n.live)) + lpIntSize(int64(n.dead)) + n.lpBody
}

// lpIntSize is the size of an integer element in a listpack, backlen
// included.
func lpIntSize(v int64) int64 { return int64(listpack.IntEntrySize(v)) }

// lpStrSize is the size of a string element in a listpack: strings that
// read as 64-bit integers are stored as integers (lpEncodeGetType).
func lpStrSize(s []byte) int64 { return int64(listpack.StringEntrySize(s)) }

// ---------------------------------------------------------------- encoding helpers

func appendElement(dst, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// readElement decodes the element at pos: its bytes and the next position.
func readElement(buf []byte, pos int) ([]byte, int) {
	n, k := binary.Uvarint(buf[pos:])
	start := pos + k
	end := start + int(n)
	return buf[start:end:end], end
}

func readUvarint(buf []byte, pos int) (uint64, int) {
	v, k := binary.Uvarint(buf[pos:])
	return v, pos + k
}

// appendBacklen appends l so that it can be read from its last byte
// backwards: 7 bits a byte, the most significant group first, the high bit
// set on every byte but the first.
func appendBacklen(dst []byte, l int) []byte {
	k := uvarintLen(uint64(l))
	for i := k - 1; i >= 0; i-- {
		b := byte(l>>(7*i)) & 0x7f
		if i < k-1 {
			b |= 0x80
		}
		dst = append(dst, b)
	}
	return dst
}

// readBacklen decodes the backlen ending at end: the value and its size.
func readBacklen(buf []byte, end int) (l, size int) {
	shift := 0
	for i := end - 1; ; i-- {
		b := buf[i]
		l |= int(b&0x7f) << shift
		shift += 7
		size++
		if b&0x80 == 0 {
			return l, size
		}
	}
}

// entryAt decodes the entry starting at pos: its body bounds and the start
// of the next entry.
func (n *streamNode) entryAt(pos int) (body, bodyEnd, next int) {
	l, k := binary.Uvarint(n.buf[pos:])
	body = pos + k
	bodyEnd = body + int(l)
	return body, bodyEnd, bodyEnd + uvarintLen(l)
}

// entryBefore decodes the entry ending at end: its start and body bounds.
func (n *streamNode) entryBefore(end int) (start, body, bodyEnd int) {
	l, size := readBacklen(n.buf, end)
	bodyEnd = end - size
	body = bodyEnd - l
	return body - uvarintLen(uint64(l)), body, bodyEnd
}

// entryHeader decodes an entry body's header: flags, ID, number of fields
// and where the elements begin.
func (n *streamNode) entryHeader(body int) (flags byte, id StreamID, nfields, elems int) {
	flags = n.buf[body]
	msDelta, p := readUvarint(n.buf, body+1)
	seq, p := readUvarint(n.buf, p)
	id = StreamID{n.master.Ms + msDelta, seq}
	if flags&flagSameFields != 0 {
		return flags, id, n.masterFields, p
	}
	nf, p := readUvarint(n.buf, p)
	return flags, id, int(nf), p
}

// ---------------------------------------------------------------- Value

func init() {
	valueKinds[TypeStream] = func(p unsafe.Pointer) Value { return (*Stream)(p) }
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// Stream returns the entry's stream value; the caller has checked Type().
func (e *Entry) Stream() *Stream { return (*Stream)(e.val) }

// Type implements Value.
func (s *Stream) Type() Type { return TypeStream }

// Encoding implements Value.
func (s *Stream) Encoding() string { return "stream" }

// Len implements Value: the number of entries.
func (s *Stream) Len() int { return int(min(s.length, math.MaxInt)) }

func (s *Stream) pointer() unsafe.Pointer { return unsafe.Pointer(s) }

// Length is the number of entries (XLEN).
func (s *Stream) Length() uint64 { return s.length }

// LastID is the last generated ID (last-generated-id).
func (s *Stream) LastID() StreamID { return s.lastID }

// FirstID is the first live entry's ID as recorded (recorded-first-entry-id).
func (s *Stream) FirstID() StreamID { return s.firstID }

// MaxDeletedID is the greatest ID removed by XDEL (max-deleted-entry-id).
func (s *Stream) MaxDeletedID() StreamID { return s.maxDeletedID }

// EntriesAdded is the all-time number of added entries (entries-added).
func (s *Stream) EntriesAdded() uint64 { return s.entriesAdded }

// Clone implements Value: a deep copy, consumer groups included (COPY).
func (s *Stream) Clone() Value {
	out := &Stream{
		nodes:        make([]streamNode, len(s.nodes)-s.head),
		length:       s.length,
		lastID:       s.lastID,
		firstID:      s.firstID,
		maxDeletedID: s.maxDeletedID,
		entriesAdded: s.entriesAdded,
	}
	for i, n := range s.nodes[s.head:] {
		n.buf = bytes.Clone(n.buf)
		out.nodes[i] = n
	}
	if len(s.groups) > 0 {
		out.groups = make([]*StreamGroup, len(s.groups))
		for i, g := range s.groups {
			out.groups[i] = g.clone()
		}
	}
	return out
}

// Digest implements Value as xorObjectDigest does for streams: each entry's
// "ms.seq" ID, then its fields and values, mixed in order. Consumer groups
// are not part of the digest.
func (s *Stream) Digest(d Digester) {
	var idBuf []byte
	it := s.Range(StreamID{}, MaxStreamID, false)
	for it.Next() {
		id := it.ID()
		idBuf = strconv.AppendUint(idBuf[:0], id.Ms, 10)
		idBuf = append(idBuf, '.')
		idBuf = strconv.AppendUint(idBuf, id.Seq, 10)
		d.Mix(idBuf)
		for it.NextField() {
			f, v := it.Field()
			d.Mix(f)
			d.Mix(v)
		}
	}
}

// MemoryUsage implements Value: the node buffers, the node and group
// structures, sampling at most samples nodes and groups (0 = all).
func (s *Stream) MemoryUsage(samples int) int64 {
	const streamSize, nodeSize, groupSize, consumerSize, pelEntrySize = 96, 96, 128, 96, 40
	size := int64(streamSize)
	nodes := s.nodes[s.head:]
	if len(nodes) > 0 {
		seen := len(nodes)
		if samples > 0 && seen > samples {
			seen = samples
		}
		var bufs int64
		for i := range seen {
			bufs += int64(cap(nodes[i].buf)) + nodeSize
		}
		size += bufs * int64(len(nodes)) / int64(seen)
	}
	for i, g := range s.groups {
		if samples > 0 && i >= samples {
			break
		}
		size += groupSize + int64(len(g.name)) + int64(g.pel.Len())*pelEntrySize
		for _, c := range g.consumers {
			size += consumerSize + int64(len(c.name)) + int64(c.pel.Len())*16
		}
	}
	return size
}

// ---------------------------------------------------------------- node lookup

func (s *Stream) liveNodes() []streamNode { return s.nodes[s.head:] }

// nodeFor returns the index (into liveNodes) of the node an entry with id
// would be in: the last node whose master is <= id, or 0 when id is below
// every master (the stream iterator's "<=" seek). It returns -1 when there
// are no nodes.
func (s *Stream) nodeFor(id StreamID) int {
	nodes := s.liveNodes()
	if len(nodes) == 0 {
		return -1
	}
	i, found := slices.BinarySearchFunc(nodes, id, func(n streamNode, id StreamID) int {
		return n.master.Compare(id)
	})
	if found {
		return i
	}
	return max(i-1, 0)
}

// removeNode drops live node i.
func (s *Stream) removeNode(i int) {
	if i == 0 {
		s.nodes[s.head] = streamNode{}
		s.head++
		if s.head == len(s.nodes) {
			s.nodes = s.nodes[:0]
			s.head = 0
		} else if s.head >= 64 && s.head*2 >= len(s.nodes) {
			n := copy(s.nodes, s.nodes[s.head:])
			clear(s.nodes[n:])
			s.nodes = s.nodes[:n]
			s.head = 0
		}
		return
	}
	s.nodes = slices.Delete(s.nodes, s.head+i, s.head+i+1)
}

// NodeCount is the number of nodes (XINFO STREAM radix-tree-keys).
func (s *Stream) NodeCount() int { return len(s.nodes) - s.head }

// RaxNodes is the number of radix tree nodes Redis's rax would have for the
// nodes' master IDs (XINFO STREAM radix-tree-nodes). rax keeps a canonical
// shape for a set of keys of one length: a node at the root, at every
// position where keys branch, at every position right after a branch, and
// at every key's end (single-child runs in between are compressed into the
// node that starts them). With the keys sorted, the positions at depth d
// are the runs of keys sharing d bytes; a run branches at d when two
// neighbours in it share exactly d bytes.
func (s *Stream) RaxNodes() int64 {
	nodes := s.liveNodes()
	n := len(nodes)
	if n == 0 {
		return 1 // the empty root
	}
	keys := make([][16]byte, n)
	for i := range nodes {
		binary.BigEndian.PutUint64(keys[i][:8], nodes[i].master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], nodes[i].master.Seq)
	}
	// lcp[i]: bytes shared by keys i and i+1.
	lcp := make([]int, n-1)
	for i := range lcp {
		l := 0
		for l < 16 && keys[i][l] == keys[i+1][l] {
			l++
		}
		lcp[i] = l
	}
	// For depth d, a run is a maximal range of keys whose lcps (inside the
	// range) are all >= d. branchAt[r] tells whether the run starting at
	// key r branched at the previous depth.
	prevBranch := make([]bool, n) // indexed by run start at depth d-1
	curBranch := make([]bool, n)
	count := int64(1) + int64(n) // the root and the leaves
	for d := 0; d < 16; d++ {
		clear(curBranch)
		parentStart := 0 // run start at depth d-1 containing the current run
		for start := 0; start < n; {
			end := start // last key of the run at depth d
			branches := false
			for end < n-1 && lcp[end] >= d {
				if lcp[end] == d {
					branches = true
				}
				end++
			}
			if d > 0 {
				// The parent run at depth d-1 begins at or before start:
				// it begins at start unless lcp[start-1] >= d-1.
				if start == 0 || lcp[start-1] < d-1 {
					parentStart = start
				}
				childOfBranch := prevBranch[parentStart]
				if branches || childOfBranch {
					count++
				}
			}
			curBranch[start] = branches
			start = end + 1
		}
		prevBranch, curBranch = curBranch, prevBranch
	}
	// Depth 16 runs are the leaves (already counted); depth 0 is the root.
	return count
}

// ---------------------------------------------------------------- appending

// StreamLimits are the node size limits (stream-node-max-bytes,
// stream-node-max-entries; 0 = no limit).
type StreamLimits struct {
	MaxBytes   int64
	MaxEntries int64
}

// AddErr is why Add failed.
type AddErr uint8

const (
	AddOK AddErr = iota
	// AddIDTooSmall: the ID is not greater than the last one (EDOM).
	AddIDTooSmall
	// AddTooLarge: the fields and values exceed 1 GiB (ERANGE).
	AddTooLarge
)

// NextAutoID returns the ID XADD * generates at time now (ms): now-0, or
// the last ID's successor if the clock has not moved past it
// (streamNextID); ok is false when that would wrap around.
func (s *Stream) NextAutoID(now uint64) (StreamID, bool) {
	if now > s.lastID.Ms {
		return StreamID{now, 0}, true
	}
	return s.lastID.Next()
}

// Add appends an entry with the given ID and fields (field, value, field,
// value...) and reports AddOK, or why it could not: the ID must be greater
// than the last one, and the field and value bytes must not exceed 1 GiB.
func (s *Stream) Add(id StreamID, fv [][]byte, lim StreamLimits) AddErr {
	if id.Compare(s.lastID) <= 0 {
		return AddIDTooSmall
	}
	var total int64
	for _, b := range fv {
		total += int64(len(b))
	}
	if total > streamListpackMaxSize {
		return AddTooLarge
	}
	nfields := len(fv) / 2
	nodes := s.liveNodes()
	var tail *streamNode
	if len(nodes) > 0 {
		tail = &nodes[len(nodes)-1]
		maxBytes := lim.MaxBytes
		if maxBytes <= 0 || maxBytes > streamListpackMaxSize {
			maxBytes = streamListpackMaxSize
		}
		if tail.lpBytes()+total >= maxBytes ||
			lim.MaxEntries > 0 && int64(tail.live+tail.dead) >= lim.MaxEntries {
			// The node is closed: give back the growth room.
			if cap(tail.buf) > len(tail.buf)+len(tail.buf)/8 {
				tail.buf = bytes.Clone(tail.buf)
			}
			tail = nil
		}
	}
	var flags byte
	if tail == nil {
		s.nodes = append(s.nodes, streamNode{master: id, masterFields: nfields})
		tail = &s.nodes[len(s.nodes)-1]
		capHint := 64
		for i := 0; i < len(fv); i += 2 {
			capHint += len(fv[i]) + 2
		}
		tail.buf = binary.AppendUvarint(make([]byte, 0, capHint*2), uint64(nfields))
		// Listpack: num-fields, the fields, the 0 terminator.
		tail.lpBody = lpIntSize(int64(nfields)) + lpIntSize(0)
		for i := 0; i < len(fv); i += 2 {
			tail.buf = appendElement(tail.buf, fv[i])
			tail.lpBody += lpStrSize(fv[i])
		}
		tail.entriesStart = len(tail.buf)
		flags = flagSameFields
	} else if nfields == tail.masterFields && tail.sameFields(fv) {
		flags = flagSameFields
	}
	tail.appendEntry(id, flags, fv)
	s.length++
	s.entriesAdded++
	s.lastID = id
	if s.length == 1 {
		s.firstID = id
	}
	return AddOK
}

// sameFields reports whether fv's fields are the node's master fields.
func (n *streamNode) sameFields(fv [][]byte) bool {
	p := uvarintLen(uint64(n.masterFields))
	for i := 0; i < len(fv); i += 2 {
		var f []byte
		f, p = readElement(n.buf, p)
		if !bytes.Equal(f, fv[i]) {
			return false
		}
	}
	return true
}

// appendEntry encodes one entry at the end of the node and accounts for
// its listpack size.
func (n *streamNode) appendEntry(id StreamID, flags byte, fv [][]byte) {
	same := flags&flagSameFields != 0
	nfields := len(fv) / 2
	msDelta := id.Ms - n.master.Ms
	bodyLen := 1 + uvarintLen(msDelta) + uvarintLen(id.Seq)
	if !same {
		bodyLen += uvarintLen(uint64(nfields))
	}
	for i, b := range fv {
		if same && i%2 == 0 {
			continue
		}
		bodyLen += uvarintLen(uint64(len(b))) + len(b)
	}
	n.buf = slices.Grow(n.buf, 2*uvarintLen(uint64(bodyLen))+bodyLen)
	n.buf = binary.AppendUvarint(n.buf, uint64(bodyLen))
	n.buf = append(n.buf, flags)
	n.buf = binary.AppendUvarint(n.buf, msDelta)
	n.buf = binary.AppendUvarint(n.buf, id.Seq)
	if !same {
		n.buf = binary.AppendUvarint(n.buf, uint64(nfields))
	}
	// Listpack: flags, ms-diff, seq-diff, [num-fields], [fields], values,
	// lp-count.
	lp := lpIntSize(int64(flags)) + lpIntSize(int64(msDelta)) + lpIntSize(int64(id.Seq-n.master.Seq))
	lpCount := int64(nfields) + 3
	if !same {
		lp += lpIntSize(int64(nfields))
		lpCount += int64(nfields) + 1
	}
	for i, b := range fv {
		if same && i%2 == 0 {
			continue
		}
		n.buf = appendElement(n.buf, b)
		lp += lpStrSize(b)
	}
	n.buf = appendBacklen(n.buf, bodyLen)
	n.lpBody += lp + lpIntSize(lpCount)
	n.live++
	n.last = id
}

// ---------------------------------------------------------------- iteration

// StreamIterator walks the entries of a range in either direction:
//
//	it := s.Range(start, end, false)
//	for it.Next() {
//		id, n := it.ID(), it.NumFields()
//		for it.NextField() { f, v := it.Field() ... }
//	}
//
// The stream must not be modified while an iterator is in use, except
// through the iterator's own Delete.
type StreamIterator struct {
	s          *Stream
	start, end StreamID
	rev        bool
	tombstones bool // also emit deleted entries

	ni      int // current node (index into liveNodes), -1 before the first
	pos     int // forward: start of the next entry; reverse: end of the next entry
	started bool
	done    bool

	// the current entry
	id      StreamID
	flags   byte
	body    int // body start of the current entry
	nfields int
	fieldI  int
	elem    int // next element position
	master  int // next master field position (same-fields entries)
	field   []byte
	value   []byte
}

// Range returns an iterator over the live entries with start <= ID <= end,
// from start to end, or from end to start when rev is set.
func (s *Stream) Range(start, end StreamID, rev bool) *StreamIterator {
	it := &StreamIterator{}
	it.Reset(s, start, end, rev)
	return it
}

// Reset reuses it for another range (saves an allocation per lookup).
func (it *StreamIterator) Reset(s *Stream, start, end StreamID, rev bool) {
	*it = StreamIterator{s: s, start: start, end: end, rev: rev, ni: -1}
}

// Next advances to the next entry in range; false at the end.
func (it *StreamIterator) Next() bool {
	if it.done {
		return false
	}
	nodes := it.s.liveNodes()
	if !it.started {
		it.started = true
		if len(nodes) == 0 {
			it.done = true
			return false
		}
		if !it.rev {
			it.ni = it.s.nodeFor(it.start)
			it.pos = nodes[it.ni].entriesStart
		} else {
			it.ni = it.s.nodeFor(it.end)
			it.pos = len(nodes[it.ni].buf)
		}
	}
	for {
		n := &nodes[it.ni]
		if !it.rev {
			if it.pos >= len(n.buf) {
				it.ni++
				if it.ni >= len(nodes) {
					it.done = true
					return false
				}
				it.pos = nodes[it.ni].entriesStart
				continue
			}
			body, _, next := n.entryAt(it.pos)
			it.pos = next
			flags, id, nf, elems := n.entryHeader(body)
			if id.Compare(it.start) < 0 || (flags&flagDeleted != 0 && !it.tombstones) {
				continue
			}
			if id.Compare(it.end) > 0 {
				it.done = true
				return false
			}
			it.setCurrent(n, id, flags, body, nf, elems)
			return true
		}
		if it.pos <= n.entriesStart {
			it.ni--
			if it.ni < 0 {
				it.done = true
				return false
			}
			it.pos = len(nodes[it.ni].buf)
			continue
		}
		start, body, _ := n.entryBefore(it.pos)
		it.pos = start
		flags, id, nf, elems := n.entryHeader(body)
		if id.Compare(it.end) > 0 || (flags&flagDeleted != 0 && !it.tombstones) {
			continue
		}
		if id.Compare(it.start) < 0 {
			it.done = true
			return false
		}
		it.setCurrent(n, id, flags, body, nf, elems)
		return true
	}
}

func (it *StreamIterator) setCurrent(n *streamNode, id StreamID, flags byte, body, nf, elems int) {
	it.id, it.flags, it.body, it.nfields = id, flags, body, nf
	it.fieldI, it.elem = 0, elems
	it.master = uvarintLen(uint64(n.masterFields))
}

// ID is the current entry's ID.
func (it *StreamIterator) ID() StreamID { return it.id }

// NumFields is the current entry's number of field-value pairs.
func (it *StreamIterator) NumFields() int { return it.nfields }

// NextField advances to the current entry's next field-value pair.
func (it *StreamIterator) NextField() bool {
	if it.fieldI >= it.nfields {
		return false
	}
	it.fieldI++
	n := &it.s.liveNodes()[it.ni]
	if it.flags&flagSameFields != 0 {
		it.field, it.master = readElement(n.buf, it.master)
	} else {
		it.field, it.elem = readElement(n.buf, it.elem)
	}
	it.value, it.elem = readElement(n.buf, it.elem)
	return true
}

// Field returns the current field-value pair.
func (it *StreamIterator) Field() (field, value []byte) { return it.field, it.value }

// ---------------------------------------------------------------- lookups

// Has reports whether a live entry with id exists (streamEntryExists).
func (s *Stream) Has(id StreamID) bool {
	var it StreamIterator
	it.Reset(s, id, id, false)
	return it.Next()
}

// LastValidID is the ID of the last live entry; ok is false when the
// stream is empty (streamLastValidID).
func (s *Stream) LastValidID() (StreamID, bool) {
	var it StreamIterator
	it.Reset(s, StreamID{}, MaxStreamID, true)
	if it.Next() {
		return it.id, true
	}
	return StreamID{}, false
}

// firstLiveID is streamGetEdgeID(s, first, skip tombstones).
func (s *Stream) firstLiveID() StreamID {
	var it StreamIterator
	it.Reset(s, StreamID{}, MaxStreamID, false)
	if it.Next() {
		return it.id
	}
	return MaxStreamID
}

// ---------------------------------------------------------------- deletion

// Delete removes the live entry with id (XDEL): it reports whether there
// was one. It maintains the first ID and the maximal deleted ID as XDEL
// does.
func (s *Stream) Delete(id StreamID) bool {
	ni := s.nodeFor(id)
	if ni < 0 {
		return false
	}
	n := &s.liveNodes()[ni]
	for pos := n.entriesStart; pos < len(n.buf); {
		body, _, next := n.entryAt(pos)
		flags, eid, _, _ := n.entryHeader(body)
		if c := eid.Compare(id); c > 0 {
			return false
		} else if c < 0 || flags&flagDeleted != 0 {
			pos = next
			continue
		}
		if n.live == 1 {
			s.removeNode(ni)
		} else {
			n.buf[body] |= flagDeleted
			n.live--
			n.dead++
		}
		s.length--
		if id.Compare(s.maxDeletedID) > 0 {
			s.maxDeletedID = id
		}
		switch {
		case s.length == 0:
			s.firstID = StreamID{}
		case id == s.firstID:
			s.firstID = s.firstLiveID()
		}
		return true
	}
	return false
}

// TrimArgs is a trimming request (XADD's and XTRIM's MAXLEN / MINID).
type TrimArgs struct {
	ByID   bool     // MINID rather than MAXLEN
	MaxLen int64    // MAXLEN: keep at most this many entries
	MinID  StreamID // MINID: drop entries below this ID
	Approx bool     // "~": drop whole nodes only
	Limit  int64    // stop before deleting more than this many (0 = no limit)
}

// Trim removes entries from the head as streamTrim does and returns how
// many it removed. Whole nodes go first; with Approx it stops at the first
// node it cannot drop whole, otherwise it flags entries of that node as
// deleted, as far as needed.
func (s *Stream) Trim(a TrimArgs) int64 {
	var deleted int64
	for s.NodeCount() > 0 {
		if !a.ByID && s.length <= uint64(a.MaxLen) {
			break
		}
		n := &s.nodes[s.head]
		entries := int64(n.live)
		if a.Limit > 0 && deleted+entries > a.Limit {
			break
		}
		var removeNode bool
		if !a.ByID {
			removeNode = s.length-uint64(entries) >= uint64(a.MaxLen)
		} else {
			removeNode = n.last.Compare(a.MinID) < 0
		}
		if removeNode {
			s.length -= uint64(entries)
			deleted += entries
			s.removeNode(0)
			continue
		}
		if a.Approx {
			break
		}
		var fromNode int64
		for pos := n.entriesStart; pos < len(n.buf); {
			body, _, next := n.entryAt(pos)
			flags, id, _, _ := n.entryHeader(body)
			if !a.ByID && s.length <= uint64(a.MaxLen) || a.ByID && id.Compare(a.MinID) >= 0 {
				break
			}
			if flags&flagDeleted == 0 {
				n.buf[body] |= flagDeleted
				fromNode++
				s.length--
			}
			pos = next
		}
		n.live -= int(fromNode)
		n.dead += int(fromNode)
		deleted += fromNode
		break
	}
	switch {
	case s.length == 0:
		s.firstID = StreamID{}
	case deleted > 0:
		s.firstID = s.firstLiveID()
	}
	return deleted
}

// ---------------------------------------------------------------- XSETID and consumer-group counters

// SetID implements XSETID's changes once the caller has validated them:
// the last ID, and when given the entries-added counter (>= 0) and the
// maximal deleted ID (non-zero).
func (s *Stream) SetID(last StreamID, entriesAdded int64, maxDeleted StreamID) {
	s.lastID = last
	if entriesAdded >= 0 {
		s.entriesAdded = uint64(entriesAdded)
	}
	if !maxDeleted.IsZero() {
		s.maxDeletedID = maxDeleted
	}
}

// rangeHasTombstones is streamRangeHasTombstones: whether [start, end] may
// contain a deleted entry, as far as the maximal deleted ID tells.
func (s *Stream) rangeHasTombstones(start, end StreamID) bool {
	if s.length == 0 || s.maxDeletedID.IsZero() {
		return false
	}
	if s.firstID.Compare(s.maxDeletedID) > 0 {
		return false
	}
	return start.Compare(s.maxDeletedID) <= 0 && s.maxDeletedID.Compare(end) <= 0
}

// InvalidEntriesRead is SCG_INVALID_ENTRIES_READ: a group's read counter
// is unknown.
const InvalidEntriesRead = -1

// EstimateDistance is streamEstimateDistanceFromFirstEverEntry: the logical
// read counter of id, or InvalidEntriesRead when it cannot be known.
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.lastID) < 1 {
		return int64(s.entriesAdded)
	}
	switch id.Compare(s.lastID) {
	case 0:
		return int64(s.entriesAdded)
	case 1:
		return InvalidEntriesRead
	}
	if s.maxDeletedID.IsZero() || s.maxDeletedID.Compare(s.firstID) < 0 {
		switch id.Compare(s.firstID) {
		case -1:
			return int64(s.entriesAdded - s.length)
		case 0:
			return int64(s.entriesAdded - s.length + 1)
		}
	}
	return InvalidEntriesRead
}

// Lag is a group's lag (XINFO's "lag"); ok is false when it cannot be
// known (streamReplyWithCGLag replies null then).
func (s *Stream) Lag(g *StreamGroup) (lag int64, ok bool) {
	if s.entriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != InvalidEntriesRead && !s.rangeHasTombstones(g.LastID, MaxStreamID) {
		return int64(s.entriesAdded) - g.EntriesRead, true
	}
	if er := s.EstimateDistance(g.LastID); er != InvalidEntriesRead {
		return int64(s.entriesAdded) - er, true
	}
	return 0, false
}

// AdvanceGroup moves a group's last delivered ID to id (an entry being
// delivered past it) and keeps its read counter as streamReplyWithRange
// does.
func (s *Stream) AdvanceGroup(g *StreamGroup, id StreamID) {
	if id.Compare(g.LastID) <= 0 {
		return
	}
	if g.EntriesRead != InvalidEntriesRead && !s.rangeHasTombstones(id, MaxStreamID) {
		g.EntriesRead++
	} else if s.entriesAdded > 0 {
		g.EntriesRead = s.EstimateDistance(id)
	}
	g.LastID = id
}
