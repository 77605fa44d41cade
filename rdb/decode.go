package rdb

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/shoal-db/shoal/store"
)

// Limits shape what a decoded value becomes and bound what a payload may
// make the decoder allocate.
type Limits struct {
	// The encoding thresholds of the receiving server (redis.conf names):
	// a decoded value gets the encoding it would have had if its elements
	// had been written one by one there.
	HashMaxListpackEntries int64
	HashMaxListpackValue   int64
	SetMaxIntsetEntries    int64
	ZSetMaxListpackEntries int64
	ZSetMaxListpackValue   int64
	ListMaxListpackSize    int64
	StreamNodeMaxBytes     int64
	StreamNodeMaxEntries   int64
	// MaxString bounds the size of any one decompressed string
	// (proto-max-bulk-len); compressed data claiming more is refused.
	MaxString int
}

// DefaultLimits are Redis 7.0's default thresholds.
func DefaultLimits() Limits {
	return Limits{
		HashMaxListpackEntries: 512,
		HashMaxListpackValue:   64,
		SetMaxIntsetEntries:    512,
		ZSetMaxListpackEntries: 128,
		ZSetMaxListpackValue:   64,
		ListMaxListpackSize:    -2,
		StreamNodeMaxBytes:     4096,
		StreamNodeMaxEntries:   100,
		MaxString:              512 << 20,
	}
}

// Object is a decoded value: a string's bytes or a non-string value, ready
// to be stored under a key (the caller owns both).
type Object struct {
	Type  store.Type
	Str   []byte      // TypeString
	Value store.Value // every other type
}

// SetIn stores the object as key's value in db, replacing any value and
// clearing any expiry, and returns the key's entry. The caller holds the
// key's slot lock.
func (o Object) SetIn(db *store.DB, key []byte) *store.Entry {
	if o.Type == store.TypeString {
		return db.SetString(key, o.Str, false)
	}
	return db.SetValue(key, o.Value)
}

// DecodeValue decodes one object as AppendValue writes it (type byte, then
// the object) from the start of b, and returns it with the number of bytes
// it took. It accepts every type Redis 7.0 loads except modules. A
// malformed or empty value is ErrBadData; nothing panics.
func DecodeValue(b []byte, lim Limits) (Object, int, error) {
	if lim.MaxString <= 0 {
		lim.MaxString = DefaultLimits().MaxString
	}
	r := &reader{b: b, maxAlloc: lim.MaxString}
	t, err := r.byte()
	if err != nil {
		return Object{}, 0, err
	}
	o, err := decodeObject(r, t, lim)
	if err != nil {
		return Object{}, 0, err
	}
	return o, r.pos, nil
}

// decodeObject decodes the object of type t at r's position (in files the
// key sits between the type byte and the object).
func decodeObject(r *reader, t byte, lim Limits) (Object, error) {
	d := decoder{r: r, lim: lim}
	switch t {
	case TypeString:
		s, err := r.str()
		if err != nil {
			return Object{}, err
		}
		return Object{Type: store.TypeString, Str: ownedCopy(s)}, nil
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return d.list(t)
	case TypeSet, TypeSetIntset:
		return d.set(t)
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return d.zset(t)
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack:
		return d.hash(t)
	case TypeStreamListpacks, TypeStreamListpacks2:
		return d.stream(t)
	}
	return Object{}, ErrBadData
}

// ownedCopy copies s unless it is already a fresh allocation that does not
// alias the payload (decoded integers and LZF output are fresh, but telling
// them apart is not worth it: strings are copied once).
func ownedCopy(s []byte) []byte {
	out := make([]byte, len(s))
	copy(out, s)
	return out
}

type decoder struct {
	r   *reader
	lim Limits
}

// maxElems bounds element counts inside a blob: a blob of n bytes holds
// fewer than n entries.
func maxElems(blob []byte) int { return len(blob) }

// ---------------------------------------------------------------- lists

func (d *decoder) list(t byte) (Object, error) {
	l := store.NewList(d.lim.ListMaxListpackSize)
	var buf []byte
	switch t {
	case TypeList:
		n, err := d.r.count(1)
		if err != nil {
			return Object{}, err
		}
		for i := 0; i < n; i++ {
			s, err := d.r.str()
			if err != nil {
				return Object{}, err
			}
			l.Push(s, false)
		}
	case TypeListZiplist:
		blob, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		es, err := parseZiplist(blob, maxElems(blob))
		if err != nil {
			return Object{}, err
		}
		for _, e := range es {
			l.Push(e.bytes(&buf), false)
		}
	case TypeListQuicklist, TypeListQuicklist2:
		nodes, err := d.r.count(1)
		if err != nil {
			return Object{}, err
		}
		for i := 0; i < nodes; i++ {
			container := uint64(containerPacked)
			if t == TypeListQuicklist2 {
				if container, err = d.r.length(); err != nil {
					return Object{}, err
				}
				if container != containerPacked && container != containerPlain {
					return Object{}, ErrBadData
				}
			}
			blob, err := d.r.str()
			if err != nil {
				return Object{}, err
			}
			if container == containerPlain {
				l.Push(blob, false)
				continue
			}
			var es []lpEntry
			if t == TypeListQuicklist {
				es, err = parseZiplist(blob, maxElems(blob))
			} else {
				es, err = parseListpack(blob, maxElems(blob))
			}
			if err != nil {
				return Object{}, err
			}
			// Empty nodes are skipped, as Redis does; an empty list fails
			// below.
			for _, e := range es {
				l.Push(e.bytes(&buf), false)
			}
		}
	}
	if l.Len() == 0 {
		return Object{}, ErrBadData
	}
	return Object{Type: store.TypeList, Value: l}, nil
}

// ---------------------------------------------------------------- sets

func (d *decoder) set(t byte) (Object, error) {
	maxIntset := d.lim.SetMaxIntsetEntries
	if t == TypeSetIntset {
		blob, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		vals, err := parseIntset(blob, maxElems(blob))
		if err != nil {
			return Object{}, err
		}
		s := store.NewIntSet()
		var buf []byte
		for _, v := range vals {
			buf = strconv.AppendInt(buf[:0], v, 10)
			s.Add(buf, maxIntset)
		}
		return Object{Type: store.TypeSet, Value: s}, nil
	}
	n, err := d.r.count(1)
	if err != nil {
		return Object{}, err
	}
	if n == 0 {
		return Object{}, ErrBadData
	}
	var s *store.Set
	for i := 0; i < n; i++ {
		m, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		if s == nil {
			s = store.NewSetFor(m)
			if int64(n) > maxIntset {
				s.ConvertToTable()
			}
		}
		if !s.Add(m, maxIntset) {
			return Object{}, ErrBadData // duplicate member
		}
	}
	return Object{Type: store.TypeSet, Value: s}, nil
}

// ---------------------------------------------------------------- hashes

func (d *decoder) hash(t byte) (Object, error) {
	h := store.NewHash()
	maxEntries, maxValue := d.lim.HashMaxListpackEntries, d.lim.HashMaxListpackValue
	add := func(f, v []byte) error {
		if !h.Set(f, v, maxEntries, maxValue) {
			return ErrBadData // duplicate field
		}
		return nil
	}
	switch t {
	case TypeHash:
		n, err := d.r.count(2)
		if err != nil {
			return Object{}, err
		}
		if int64(n) > maxEntries {
			h.ConvertToTable()
		}
		for i := 0; i < n; i++ {
			f, err := d.r.str()
			if err != nil {
				return Object{}, err
			}
			v, err := d.r.str()
			if err != nil {
				return Object{}, err
			}
			if err := add(f, v); err != nil {
				return Object{}, err
			}
		}
	case TypeHashZipmap:
		blob, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		kv, err := parseZipmap(blob, maxElems(blob))
		if err != nil {
			return Object{}, err
		}
		for i := 0; i < len(kv); i += 2 {
			if err := add(kv[i], kv[i+1]); err != nil {
				return Object{}, err
			}
		}
	case TypeHashZiplist, TypeHashListpack:
		es, err := d.packedPairs(t == TypeHashZiplist)
		if err != nil {
			return Object{}, err
		}
		if int64(len(es)/2) > maxEntries {
			h.ConvertToTable()
		}
		var fb, vb []byte
		for i := 0; i < len(es); i += 2 {
			if err := add(es[i].bytes(&fb), es[i+1].bytes(&vb)); err != nil {
				return Object{}, err
			}
		}
	}
	if h.Len() == 0 {
		return Object{}, ErrBadData
	}
	return Object{Type: store.TypeHash, Value: h}, nil
}

// packedPairs reads a ziplist (or listpack) blob of field/value pairs, as
// hashes and sorted sets store them.
func (d *decoder) packedPairs(ziplist bool) ([]lpEntry, error) {
	blob, err := d.r.str()
	if err != nil {
		return nil, err
	}
	var es []lpEntry
	if ziplist {
		es, err = parseZiplist(blob, maxElems(blob))
	} else {
		es, err = parseListpack(blob, maxElems(blob))
	}
	if err != nil {
		return nil, err
	}
	if len(es)%2 != 0 {
		return nil, ErrBadData
	}
	return es, nil
}

// ---------------------------------------------------------------- sorted sets

func (d *decoder) zset(t byte) (Object, error) {
	var elems []store.ZMember
	switch t {
	case TypeZSet, TypeZSet2:
		n, err := d.r.count(2)
		if err != nil {
			return Object{}, err
		}
		elems = make([]store.ZMember, 0, n)
		for i := 0; i < n; i++ {
			m, err := d.r.str()
			if err != nil {
				return Object{}, err
			}
			var score float64
			if t == TypeZSet2 {
				score, err = d.r.binaryDouble()
			} else {
				score, err = d.r.textDouble()
			}
			if err != nil {
				return Object{}, err
			}
			if math.IsNaN(score) {
				return Object{}, ErrBadData
			}
			elems = append(elems, store.ZMember{Member: string(m), Score: score})
		}
	case TypeZSetZiplist, TypeZSetListpack:
		es, err := d.packedPairs(t == TypeZSetZiplist)
		if err != nil {
			return Object{}, err
		}
		elems = make([]store.ZMember, 0, len(es)/2)
		for i := 0; i < len(es); i += 2 {
			var score float64
			if es[i+1].isInt {
				score = float64(es[i+1].v)
			} else {
				score, err = strconv.ParseFloat(string(es[i+1].s), 64)
				if err != nil && !isRangeErr(err) || math.IsNaN(score) {
					return Object{}, ErrBadData
				}
			}
			elems = append(elems, store.ZMember{Member: string(es[i].owned()), Score: score})
		}
	}
	if len(elems) == 0 {
		return Object{}, ErrBadData
	}
	// Duplicate members make a corrupt set.
	byMember := make([]int, len(elems))
	for i := range byMember {
		byMember[i] = i
	}
	slices.SortFunc(byMember, func(a, b int) int { return cmp.Compare(elems[a].Member, elems[b].Member) })
	for i := 1; i < len(byMember); i++ {
		if elems[byMember[i]].Member == elems[byMember[i-1]].Member {
			return Object{}, ErrBadData
		}
	}
	slices.SortFunc(elems, func(a, b store.ZMember) int {
		if c := cmp.Compare(a.Score, b.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Member, b.Member)
	})
	z := store.BuildZSet(elems, store.ZSetLimits{
		MaxListpackEntries: d.lim.ZSetMaxListpackEntries,
		MaxListpackValue:   d.lim.ZSetMaxListpackValue,
	})
	return Object{Type: store.TypeZSet, Value: z}, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ---------------------------------------------------------------- streams

func (d *decoder) stream(t byte) (Object, error) {
	s := store.NewStream()
	lim := store.StreamLimits{MaxBytes: d.lim.StreamNodeMaxBytes, MaxEntries: d.lim.StreamNodeMaxEntries}
	nodes, err := d.r.count(2)
	if err != nil {
		return Object{}, err
	}
	var maxDeletedSeen store.StreamID
	var fv [][]byte
	for i := 0; i < nodes; i++ {
		key, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		if len(key) != 16 {
			return Object{}, ErrBadData
		}
		master := store.StreamID{Ms: binary.BigEndian.Uint64(key), Seq: binary.BigEndian.Uint64(key[8:])}
		blob, err := d.r.str()
		if err != nil {
			return Object{}, err
		}
		es, err := parseListpack(blob, maxElems(blob))
		if err != nil {
			return Object{}, err
		}
		if len(es) == 0 {
			return Object{}, ErrBadData // Redis: empty listpack inside stream
		}
		// Master entry: count, deleted, num-fields, fields..., 0.
		p := 0
		next := func() (lpEntry, bool) {
			if p >= len(es) {
				return lpEntry{}, false
			}
			p++
			return es[p-1], true
		}
		nextInt := func() (int64, bool) {
			e, ok := next()
			if !ok {
				return 0, false
			}
			return e.int()
		}
		count, ok1 := nextInt()
		deleted, ok2 := nextInt()
		nMaster, ok3 := nextInt()
		if !ok1 || !ok2 || !ok3 || count < 0 || deleted < 0 || nMaster < 0 || nMaster > int64(len(es)) {
			return Object{}, ErrBadData
		}
		masterFields := make([][]byte, nMaster)
		for j := range masterFields {
			e, ok := next()
			if !ok {
				return Object{}, ErrBadData
			}
			masterFields[j] = e.owned()
		}
		if z, ok := nextInt(); !ok || z != 0 {
			return Object{}, ErrBadData
		}
		var live, dead int64
		for p < len(es) {
			flags, ok1 := nextInt()
			msDiff, ok2 := nextInt()
			seqDiff, ok3 := nextInt()
			if !ok1 || !ok2 || !ok3 || flags&^(streamFlagDeleted|streamFlagSameFields) != 0 {
				return Object{}, ErrBadData
			}
			id := store.StreamID{Ms: master.Ms + uint64(msDiff), Seq: master.Seq + uint64(seqDiff)}
			fv = fv[:0]
			nf := nMaster
			same := flags&streamFlagSameFields != 0
			if !same {
				var ok bool
				if nf, ok = nextInt(); !ok || nf < 0 || nf > int64(len(es)) {
					return Object{}, ErrBadData
				}
			}
			for j := int64(0); j < nf; j++ {
				var f []byte
				if same {
					f = masterFields[j]
				} else {
					e, ok := next()
					if !ok {
						return Object{}, ErrBadData
					}
					f = e.owned()
				}
				e, ok := next()
				if !ok {
					return Object{}, ErrBadData
				}
				fv = append(fv, f, e.owned())
			}
			lpCount, ok := nextInt()
			want := nf + 3
			if !same {
				want += nf + 1
			}
			if !ok || lpCount != want {
				return Object{}, ErrBadData
			}
			if flags&streamFlagDeleted != 0 {
				dead++
				if id.Compare(maxDeletedSeen) > 0 {
					maxDeletedSeen = id
				}
				continue
			}
			live++
			if s.Add(id, fv, lim) != store.AddOK {
				return Object{}, ErrBadData // IDs out of order, or 0-0
			}
		}
		if live != count || dead != deleted {
			return Object{}, ErrBadData
		}
	}
	length, err := d.r.length()
	if err != nil {
		return Object{}, err
	}
	if length != s.Length() {
		return Object{}, ErrBadData
	}
	var last, maxDeleted store.StreamID
	if last.Ms, err = d.r.length(); err != nil {
		return Object{}, err
	}
	if last.Seq, err = d.r.length(); err != nil {
		return Object{}, err
	}
	if last.Compare(s.LastID()) < 0 {
		return Object{}, ErrBadData
	}
	entriesAdded := int64(s.Length())
	v2 := t == TypeStreamListpacks2
	if v2 {
		var first store.StreamID
		if first.Ms, err = d.r.length(); err != nil {
			return Object{}, err
		}
		if first.Seq, err = d.r.length(); err != nil {
			return Object{}, err
		}
		if maxDeleted.Ms, err = d.r.length(); err != nil {
			return Object{}, err
		}
		if maxDeleted.Seq, err = d.r.length(); err != nil {
			return Object{}, err
		}
		added, err := d.r.length()
		if err != nil {
			return Object{}, err
		}
		if added > math.MaxInt64 || added < s.Length() {
			return Object{}, ErrBadData
		}
		entriesAdded = int64(added)
	}
	s.SetID(last, entriesAdded, maxDeleted)

	groups, err := d.r.count(3)
	if err != nil {
		return Object{}, err
	}
	for i := 0; i < groups; i++ {
		if err := d.group(s, v2); err != nil {
			return Object{}, err
		}
	}
	return Object{Type: store.TypeStream, Value: s}, nil
}

func (r *reader) rawID() (store.StreamID, error) {
	b, err := r.take(16)
	if err != nil {
		return store.StreamID{}, err
	}
	return store.StreamID{Ms: binary.BigEndian.Uint64(b), Seq: binary.BigEndian.Uint64(b[8:])}, nil
}

// group decodes one consumer group: name, last ID, entries-read (v2 only;
// estimated otherwise, as Redis does), the global PEL (ID, delivery time,
// delivery count), then the consumers with their seen time and the IDs of
// their pending entries, each of which must be in the global PEL and owned
// by exactly one consumer.
func (d *decoder) group(s *store.Stream, v2 bool) error {
	r := d.r
	name, err := r.str()
	if err != nil {
		return err
	}
	var last store.StreamID
	if last.Ms, err = r.length(); err != nil {
		return err
	}
	if last.Seq, err = r.length(); err != nil {
		return err
	}
	entriesRead := int64(store.InvalidEntriesRead)
	if v2 {
		n, err := r.length()
		if err != nil {
			return err
		}
		entriesRead = int64(n)
	} else {
		entriesRead = s.EstimateDistance(last)
	}
	g := s.CreateGroup(name, last, entriesRead)
	if g == nil {
		return ErrBadData // duplicate group
	}
	type nack struct {
		time  int64
		count uint64
		owned bool
	}
	npel, err := r.count(17)
	if err != nil {
		return err
	}
	pel := make(map[store.StreamID]*nack, npel)
	for i := 0; i < npel; i++ {
		id, err := r.rawID()
		if err != nil {
			return err
		}
		t, err := r.millis()
		if err != nil {
			return err
		}
		c, err := r.length()
		if err != nil {
			return err
		}
		if _, dup := pel[id]; dup {
			return ErrBadData
		}
		pel[id] = &nack{time: t, count: c}
	}
	nconsumers, err := r.count(9)
	if err != nil {
		return err
	}
	owned := 0
	for i := 0; i < nconsumers; i++ {
		cname, err := r.str()
		if err != nil {
			return err
		}
		seen, err := r.millis()
		if err != nil {
			return err
		}
		c := g.CreateConsumer(cname, seen)
		if c == nil {
			return ErrBadData // duplicate consumer
		}
		n, err := r.count(16)
		if err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			id, err := r.rawID()
			if err != nil {
				return err
			}
			p := pel[id]
			if p == nil || p.owned {
				return ErrBadData
			}
			p.owned = true
			owned++
			g.Claim(id, c, p.time, p.count)
		}
	}
	if owned != len(pel) {
		// A pending entry without a consumer: Redis's deep sanitization
		// refuses it too, and the keyspace has no ownerless entries.
		return ErrBadData
	}
	return nil
}
