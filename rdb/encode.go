package rdb

import (
	"encoding/binary"

	"github.com/shoal-db/shoal/store"
)

// Quicklist node limits (quicklist.c): the size classes of negative fills,
// the safety limit of count-bounded nodes, the per-element overhead
// estimate and the size from which an element gets a plain node.
var listSizeClasses = [...]int{4096, 8192, 16384, 32768, 65536}

const (
	listSizeSafetyLimit   = 8192
	listSizeEstimateExtra = 8
	listPackedThreshold   = 1 << 30
)

// Stream node limits used when writing streams: Redis's defaults of
// stream-node-max-bytes and stream-node-max-entries. The reader keeps the
// nodes it is given, so these only shape the payload, never its meaning.
const (
	streamNodeMaxBytes   = 4096
	streamNodeMaxEntries = 100
)

// Stream entry flags (t_stream.c STREAM_ITEM_FLAG_*).
const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// Encoder holds the setting rdbSaveObject reads: Compress is
// rdbcompression (LZF for strings over 20 bytes that shrink by more than
// 4). Its zero value writes uncompressed; Compressed is Redis's default.
type Encoder struct {
	Compress bool
}

// Compressed encodes as Redis does with rdbcompression yes, its default.
var Compressed = Encoder{Compress: true}

// AppendValue appends e's value as Redis 7.0's rdbSaveObjectType +
// rdbSaveObject write it with rdbcompression yes (Compressed.AppendValue).
func AppendValue(dst []byte, e *store.Entry) []byte { return Compressed.AppendValue(dst, e) }

// AppendValue appends e's value as Redis 7.0's rdbSaveObjectType +
// rdbSaveObject write it: the object type byte, then the object. The
// caller holds e's slot lock for the whole call; the function keeps no
// state and may run concurrently on other entries.
func (en Encoder) AppendValue(dst []byte, e *store.Entry) []byte {
	if e.Type() == store.TypeString {
		return en.str(append(dst, TypeString), e.Bytes())
	}
	switch v := e.Value().(type) {
	case *store.List:
		return en.list(dst, v)
	case *store.Hash:
		return en.hash(dst, v)
	case *store.Set:
		return en.set(dst, v)
	case *store.ZSet:
		return en.zset(dst, v)
	case *store.Stream:
		return en.stream(dst, v)
	}
	// Every store type is listed above; an unknown one is a programming
	// error that must not produce a payload a peer would misread.
	panic("rdb: value type without an RDB encoding")
}

// list writes RDB_TYPE_LIST_QUICKLIST_2: the node count, then per
// node its container and its listpack (or, for plain nodes, the element).
// Nodes are cut as Redis's quicklist cuts them when the elements are
// pushed at the tail under the list's fill.
func (en Encoder) list(dst []byte, l *store.List) []byte {
	_, fill, _ := l.QuicklistInfo()
	type node struct {
		plain []byte
		lp    lpBuilder
		count int
	}
	var nodes []node
	var cur *node
	for v := range l.All() {
		if len(v) >= listPackedThreshold {
			nodes = append(nodes, node{plain: v})
			cur = nil
			continue
		}
		if cur == nil || !listAllowInsert(cur.lp.size(), cur.count, fill, len(v)) {
			nodes = append(nodes, node{lp: newLPBuilder(64)})
			cur = &nodes[len(nodes)-1]
		}
		cur.lp.appendString(v)
		cur.count++
	}
	dst = append(dst, TypeListQuicklist2)
	dst = appendLen(dst, uint64(len(nodes)))
	for i := range nodes {
		n := &nodes[i]
		if n.plain != nil {
			dst = appendLen(dst, containerPlain)
			dst = en.str(dst, n.plain)
			continue
		}
		dst = appendLen(dst, containerPacked)
		dst = en.str(dst, n.lp.finish())
	}
	return dst
}

// listAllowInsert is _quicklistNodeAllowInsert for a packed node of sz
// bytes and count elements.
func listAllowInsert(sz, count, fill, elemLen int) bool {
	newSz := sz + elemLen + listSizeEstimateExtra
	if fill < 0 {
		off := -fill - 1
		if off >= len(listSizeClasses) {
			off = len(listSizeClasses) - 1
		}
		return newSz <= listSizeClasses[off]
	}
	if newSz > listSizeSafetyLimit {
		return false
	}
	return count < fill
}

// hash writes RDB_TYPE_HASH_LISTPACK for a listpack-encoded hash,
// else RDB_TYPE_HASH (count, then field and value strings).
func (en Encoder) hash(dst []byte, h *store.Hash) []byte {
	if h.IsListpack() {
		lp := newLPBuilder(h.DataBytes() + 4*h.Len())
		for f, v := range h.All() {
			lp.appendString(f)
			lp.appendString(v)
		}
		return en.str(append(dst, TypeHashListpack), lp.finish())
	}
	dst = append(dst, TypeHash)
	dst = appendLen(dst, uint64(h.Len()))
	for f, v := range h.All() {
		dst = en.str(dst, f)
		dst = en.str(dst, v)
	}
	return dst
}

// set writes RDB_TYPE_SET_INTSET (the intset blob) or RDB_TYPE_SET.
func (en Encoder) set(dst []byte, s *store.Set) []byte {
	if s.IsIntset() {
		n := s.Len()
		width := 2
		for i := 0; i < n; i++ {
			v := s.IntAt(i)
			switch {
			case v < -1<<31 || v > 1<<31-1:
				width = 8
			case (v < -1<<15 || v > 1<<15-1) && width < 4:
				width = 4
			}
		}
		blob := make([]byte, 8, 8+n*width)
		binary.LittleEndian.PutUint32(blob, uint32(width))
		binary.LittleEndian.PutUint32(blob[4:], uint32(n))
		for i := 0; i < n; i++ {
			v := s.IntAt(i)
			switch width {
			case 2:
				blob = binary.LittleEndian.AppendUint16(blob, uint16(v))
			case 4:
				blob = binary.LittleEndian.AppendUint32(blob, uint32(v))
			default:
				blob = binary.LittleEndian.AppendUint64(blob, uint64(v))
			}
		}
		return en.str(append(dst, TypeSetIntset), blob)
	}
	dst = append(dst, TypeSet)
	dst = appendLen(dst, uint64(s.Len()))
	for m := range s.All() {
		dst = en.str(dst, m)
	}
	return dst
}

// zset writes RDB_TYPE_ZSET_LISTPACK (member, score, ... in order;
// scores as listpack integers when integral, else as Redis's %.17g text)
// or RDB_TYPE_ZSET_2 (count, then member + binary double from the greatest
// element down, as Redis walks its skiplist backwards).
func (en Encoder) zset(dst []byte, z *store.ZSet) []byte {
	if z.IsListpack() {
		lp := newLPBuilder(16 * z.Len())
		var buf []byte
		z.Each(false, func(member []byte, score float64) bool {
			lp.appendString(member)
			buf = store.ListpackScoreText(buf[:0], score)
			lp.appendString(buf)
			return true
		})
		return en.str(append(dst, TypeZSetListpack), lp.finish())
	}
	dst = append(dst, TypeZSet2)
	dst = appendLen(dst, uint64(z.Len()))
	z.Each(true, func(member []byte, score float64) bool {
		dst = en.str(dst, member)
		dst = appendBinaryDouble(dst, score)
		return true
	})
	return dst
}

// streamNodeWriter accumulates the entries of one stream listpack.
type streamNodeWriter struct {
	master       store.StreamID
	masterFields [][]byte
	entries      lpBuilder // the entries after the master entry
	count        int
	fieldBytes   int
}

// masterEntry builds the listpack head: count, deleted (0: only live
// entries are written), the master fields and the 0 terminator.
func (w *streamNodeWriter) head() lpBuilder {
	h := newLPBuilder(len(w.entries.buf) + 8 + w.fieldBytes)
	h.appendInt(int64(w.count))
	h.appendInt(0)
	h.appendInt(int64(len(w.masterFields)))
	for _, f := range w.masterFields {
		h.appendString(f)
	}
	h.appendInt(0)
	return h
}

// bytes is the node's listpack size now (what streamAppendItem compares
// with stream-node-max-bytes).
func (w *streamNodeWriter) bytes() int {
	h := w.head()
	return h.size() + len(w.entries.buf) - lpHeaderSize
}

func (w *streamNodeWriter) finish() []byte {
	h := w.head()
	h.buf = append(h.buf, w.entries.buf[lpHeaderSize:]...)
	h.n += w.entries.n
	return h.finish()
}

// stream writes RDB_TYPE_STREAM_LISTPACKS_2: the listpack nodes keyed
// by their master ID, the stream's counters and IDs, then each consumer
// group with its PEL and consumers.
func (en Encoder) stream(dst []byte, s *store.Stream) []byte {
	var nodes []*streamNodeWriter
	var w *streamNodeWriter
	var fv [][]byte
	it := s.Range(store.StreamID{}, store.MaxStreamID, false)
	for it.Next() {
		id := it.ID()
		fv = fv[:0]
		total := 0
		for it.NextField() {
			f, v := it.Field()
			fv = append(fv, f, v)
			total += len(f) + len(v)
		}
		if w != nil && (w.bytes()+total >= streamNodeMaxBytes || w.count >= streamNodeMaxEntries) {
			w = nil
		}
		if w == nil {
			w = &streamNodeWriter{master: id, entries: newLPBuilder(256)}
			for i := 0; i < len(fv); i += 2 {
				w.masterFields = append(w.masterFields, fv[i])
				w.fieldBytes += len(fv[i])
			}
			nodes = append(nodes, w)
		}
		same := len(fv)/2 == len(w.masterFields)
		for i := 0; same && i < len(fv); i += 2 {
			same = string(fv[i]) == string(w.masterFields[i/2])
		}
		e := &w.entries
		lpCount := len(fv)/2 + 3
		if same {
			e.appendInt(streamFlagSameFields)
		} else {
			e.appendInt(0)
			lpCount += len(fv)/2 + 1
		}
		e.appendInt(int64(id.Ms - w.master.Ms))
		e.appendInt(int64(id.Seq - w.master.Seq))
		if !same {
			e.appendInt(int64(len(fv) / 2))
		}
		for i, b := range fv {
			if same && i%2 == 0 {
				continue
			}
			e.appendString(b)
		}
		e.appendInt(int64(lpCount))
		w.count++
	}

	dst = append(dst, TypeStreamListpacks2)
	dst = appendLen(dst, uint64(len(nodes)))
	for _, n := range nodes {
		dst = en.str(dst, appendRawID(nil, n.master))
		dst = en.str(dst, n.finish())
	}
	dst = appendLen(dst, s.Length())
	last := s.LastID()
	dst = appendLen(dst, last.Ms)
	dst = appendLen(dst, last.Seq)
	first := s.FirstID()
	if s.Length() == 0 {
		first = store.StreamID{}
	}
	dst = appendLen(dst, first.Ms)
	dst = appendLen(dst, first.Seq)
	maxDel := s.MaxDeletedID()
	dst = appendLen(dst, maxDel.Ms)
	dst = appendLen(dst, maxDel.Seq)
	dst = appendLen(dst, s.EntriesAdded())

	groups := s.Groups()
	dst = appendLen(dst, uint64(len(groups)))
	for _, g := range groups {
		dst = en.str(dst, []byte(g.Name()))
		dst = appendLen(dst, g.LastID.Ms)
		dst = appendLen(dst, g.LastID.Seq)
		dst = appendLen(dst, uint64(g.EntriesRead))
		dst = appendLen(dst, uint64(g.PendingLen()))
		g.EachPending(func(p store.PendingEntry) bool {
			dst = appendRawID(dst, p.ID)
			dst = appendMillis(dst, p.DeliveryTime)
			dst = appendLen(dst, p.DeliveryCount)
			return true
		})
		consumers := g.Consumers()
		dst = appendLen(dst, uint64(len(consumers)))
		for _, c := range consumers {
			dst = en.str(dst, []byte(c.Name()))
			dst = appendMillis(dst, c.SeenTime)
			dst = appendLen(dst, uint64(c.PendingLen()))
			g.EachConsumerPending(c, func(p store.PendingEntry) bool {
				dst = appendRawID(dst, p.ID)
				return true
			})
		}
	}
	return dst
}

// appendRawID appends a stream ID as 128-bit big endian (the rax key form).
func appendRawID(dst []byte, id store.StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}
