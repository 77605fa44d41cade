package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// Model-based tests of the stream structure: random adds, deletes and
// trims are applied to a Stream and to a plain sorted slice of entries, and
// after every step the two must agree (forward and reverse ranges, counters)
// and the node invariants must hold.

type streamModelEntry struct {
	id      StreamID
	fv      [][]byte
	deleted bool
}

type streamModel struct {
	entries      []streamModelEntry // every entry ever kept by a node, tombstones included
	lastID       StreamID
	maxDeleted   StreamID
	entriesAdded uint64
}

func (m *streamModel) live() []streamModelEntry {
	var out []streamModelEntry
	for _, e := range m.entries {
		if !e.deleted {
			out = append(out, e)
		}
	}
	return out
}

func checkStream(t *testing.T, s *Stream, m *streamModel, lim StreamLimits, step string) {
	t.Helper()
	live := m.live()
	if s.Length() != uint64(len(live)) {
		t.Fatalf("%s: length %d, model %d", step, s.Length(), len(live))
	}
	if s.LastID() != m.lastID || s.EntriesAdded() != m.entriesAdded || s.MaxDeletedID() != m.maxDeleted {
		t.Fatalf("%s: counters last=%v added=%d maxdel=%v, model %v %d %v", step,
			s.LastID(), s.EntriesAdded(), s.MaxDeletedID(), m.lastID, m.entriesAdded, m.maxDeleted)
	}
	wantFirst := StreamID{}
	if len(live) > 0 {
		wantFirst = live[0].id
	}
	if s.FirstID() != wantFirst {
		t.Fatalf("%s: first id %v, model %v", step, s.FirstID(), wantFirst)
	}
	// forward and reverse over everything
	for _, rev := range []bool{false, true} {
		got := collectStreamRange(s.Range(StreamID{}, MaxStreamID, rev))
		want := slices.Clone(live)
		if rev {
			slices.Reverse(want)
		}
		compareStreamEntries(t, got, want, fmt.Sprintf("%s rev=%v", step, rev))
	}
	// structure
	var total, dead int
	for i := range s.liveNodes() {
		n := &s.liveNodes()[i]
		cnt, cntDead := 0, 0
		var prev StreamID
		for pos := n.entriesStart; pos < len(n.buf); {
			body, _, next := n.entryAt(pos)
			flags, id, _, _ := n.entryHeader(body)
			if cnt+cntDead > 0 && id.Compare(prev) <= 0 {
				t.Fatalf("%s: node %d ids out of order", step, i)
			}
			prev = id
			if flags&flagDeleted != 0 {
				cntDead++
			} else {
				cnt++
			}
			pos = next
		}
		back := 0
		for pos := len(n.buf); pos > n.entriesStart; {
			pos, _, _ = n.entryBefore(pos)
			back++
		}
		if cnt != n.live || cntDead != n.dead || back != cnt+cntDead {
			t.Fatalf("%s: node %d counts live %d/%d dead %d/%d back %d", step, i, cnt, n.live, cntDead, n.dead, back)
		}
		if prev != n.last {
			t.Fatalf("%s: node %d last %v, holds %v", step, i, n.last, prev)
		}
		if lim.MaxEntries > 0 && int64(cnt+cntDead) > lim.MaxEntries {
			t.Fatalf("%s: node %d holds %d entries, limit %d", step, i, cnt+cntDead, lim.MaxEntries)
		}
		if i > 0 && s.liveNodes()[i-1].master.Compare(n.master) >= 0 {
			t.Fatalf("%s: node masters out of order", step)
		}
		total += cnt
		dead += cntDead
	}
	if total != len(live) {
		t.Fatalf("%s: nodes hold %d live entries, model %d", step, total, len(live))
	}
	if want := len(m.entries) - len(live); dead != want {
		t.Fatalf("%s: nodes hold %d tombstones, model %d", step, dead, want)
	}
	// Has / LastValidID
	if len(live) > 0 {
		if id, ok := s.LastValidID(); !ok || id != live[len(live)-1].id {
			t.Fatalf("%s: LastValidID %v", step, id)
		}
		e := live[len(live)/2]
		if !s.Has(e.id) {
			t.Fatalf("%s: Has(%v) false", step, e.id)
		}
	} else if _, ok := s.LastValidID(); ok {
		t.Fatalf("%s: LastValidID on an empty stream", step)
	}
}

func collectStreamRange(it *StreamIterator) []streamModelEntry {
	var out []streamModelEntry
	for it.Next() {
		e := streamModelEntry{id: it.ID()}
		for it.NextField() {
			f, v := it.Field()
			e.fv = append(e.fv, bytes.Clone(f), bytes.Clone(v))
		}
		if len(e.fv) != 2*it.NumFields() {
			panic("field count mismatch")
		}
		out = append(out, e)
	}
	return out
}

func compareStreamEntries(t *testing.T, got, want []streamModelEntry, step string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, model %d", step, len(got), len(want))
	}
	for i := range got {
		if got[i].id != want[i].id || len(got[i].fv) != len(want[i].fv) {
			t.Fatalf("%s: entry %d = %v (%d elems), model %v (%d)", step, i, got[i].id, len(got[i].fv), want[i].id, len(want[i].fv))
		}
		for j := range got[i].fv {
			if !bytes.Equal(got[i].fv[j], want[i].fv[j]) {
				t.Fatalf("%s: entry %v elem %d = %q, model %q", step, got[i].id, j, got[i].fv[j], want[i].fv[j])
			}
		}
	}
}

func randStreamFields(r *rand.Rand) [][]byte {
	n := 1 + r.IntN(3)
	fv := make([][]byte, 0, 2*n)
	common := r.IntN(3) == 0 // mostly the same field names, to exercise SAMEFIELDS
	for i := range n {
		var f string
		if common {
			f = "f" + strconv.Itoa(r.IntN(5))
		} else {
			f = "field" + strconv.Itoa(i)
		}
		v := make([]byte, r.IntN(40))
		for j := range v {
			v[j] = byte('a' + r.IntN(26))
		}
		if r.IntN(4) == 0 {
			v = strconv.AppendInt(v[:0], r.Int64N(1<<40)-1<<39, 10)
		}
		fv = append(fv, []byte(f), v)
	}
	return fv
}

// modelTrim applies a trim to the model the way Stream.Trim must, given
// which node boundaries exist (for approximate trims the model asks the
// stream for its node sizes before trimming).
func TestStreamModel(t *testing.T) {
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, seed*7+1))
		lim := StreamLimits{MaxBytes: []int64{0, 4096, 300, 1}[seed%4], MaxEntries: []int64{100, 3, 0, 10}[(seed/4)%4]}
		s := NewStream()
		m := &streamModel{}
		var clock uint64 = 1000
		for step := range 1500 {
			label := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := r.IntN(20); {
			case op < 11: // add
				var id StreamID
				if r.IntN(3) == 0 {
					clock += uint64(r.IntN(3))
					var ok bool
					id, ok = s.NextAutoID(clock)
					if !ok {
						t.Fatal("auto id overflow")
					}
				} else {
					id = StreamID{m.lastID.Ms + uint64(r.IntN(3)), uint64(r.IntN(5))}
				}
				fv := randStreamFields(r)
				res := s.Add(id, fv, lim)
				if id.Compare(m.lastID) <= 0 {
					if res != AddIDTooSmall {
						t.Fatalf("%s: add %v after %v = %v", label, id, m.lastID, res)
					}
					continue
				}
				if res != AddOK {
					t.Fatalf("%s: add %v = %v", label, id, res)
				}
				m.entries = append(m.entries, streamModelEntry{id: id, fv: fv})
				m.lastID = id
				m.entriesAdded++
			case op < 15: // delete
				live := m.live()
				var id StreamID
				if len(live) > 0 && r.IntN(4) > 0 {
					id = live[r.IntN(len(live))].id
				} else {
					id = StreamID{uint64(r.IntN(int(clock + 10))), uint64(r.IntN(5))}
				}
				got := s.Delete(id)
				want := false
				for i := range m.entries {
					if m.entries[i].id == id && !m.entries[i].deleted {
						m.entries[i].deleted = true
						want = true
					}
				}
				if got != want {
					t.Fatalf("%s: delete %v = %v, model %v", label, id, got, want)
				}
				if want && id.Compare(m.maxDeleted) > 0 {
					m.maxDeleted = id
				}
				syncNodesToModel(s, m)
			default: // trim
				a := TrimArgs{Approx: r.IntN(2) == 0}
				live := m.live()
				if r.IntN(2) == 0 {
					a.MaxLen = int64(r.IntN(len(live) + 2))
				} else {
					a.ByID = true
					a.MinID = StreamID{uint64(r.IntN(int(clock + 5))), uint64(r.IntN(5))}
				}
				if a.Approx && r.IntN(3) == 0 {
					a.Limit = int64(r.IntN(20) + 1)
				}
				before := len(live)
				n := s.Trim(a)
				after := m.live()
				_ = after
				// What remains in the stream must be a suffix of the model's
				// live entries; exact trims must reach their target.
				got := collectStreamRange(s.Range(StreamID{}, MaxStreamID, false))
				if int64(len(got)) != int64(before)-n {
					t.Fatalf("%s: trim removed %d, %d left of %d", label, n, len(got), before)
				}
				compareStreamEntries(t, got, live[before-len(got):], label+" trim suffix")
				if !a.Approx && a.Limit == 0 {
					if !a.ByID && int64(len(got)) > a.MaxLen {
						t.Fatalf("%s: exact MAXLEN %d left %d", label, a.MaxLen, len(got))
					}
					if a.ByID && len(got) > 0 && got[0].id.Compare(a.MinID) < 0 {
						t.Fatalf("%s: exact MINID %v left %v", label, a.MinID, got[0].id)
					}
				}
				for i := range m.entries {
					if !m.entries[i].deleted && (len(got) == 0 || m.entries[i].id.Compare(got[0].id) < 0) {
						m.entries[i].deleted = true
					}
				}
				syncNodesToModel(s, m)
			}
			checkStream(t, s, m, lim, label)
		}
		// a clone is equal and independent
		c := s.Clone().(*Stream)
		checkStream(t, c, m, lim, fmt.Sprintf("seed %d clone", seed))
		if s.Length() > 0 {
			first := m.live()[0].id
			c.Delete(first)
			checkStream(t, s, m, lim, fmt.Sprintf("seed %d original after clone change", seed))
		}
	}
}

// syncNodesToModel drops from the model the tombstones the stream no longer
// keeps (a node goes away with its last live entry, tombstones and all).
func syncNodesToModel(s *Stream, m *streamModel) {
	kept := map[StreamID]bool{}
	for i := range s.liveNodes() {
		n := &s.liveNodes()[i]
		for pos := n.entriesStart; pos < len(n.buf); {
			body, _, next := n.entryAt(pos)
			_, id, _, _ := n.entryHeader(body)
			kept[id] = true
			pos = next
		}
	}
	m.entries = slices.DeleteFunc(m.entries, func(e streamModelEntry) bool { return !kept[e.id] })
}

func TestStreamRanges(t *testing.T) {
	s := NewStream()
	lim := StreamLimits{MaxBytes: 4096, MaxEntries: 4}
	var ids []StreamID
	for i := range 50 {
		id := StreamID{uint64(100 + i/3), uint64(i % 3)}
		if s.Add(id, [][]byte{[]byte("k"), []byte(strconv.Itoa(i))}, lim) != AddOK {
			t.Fatal("add")
		}
		ids = append(ids, id)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		a := StreamID{uint64(95 + r.IntN(25)), uint64(r.IntN(4))}
		b := StreamID{uint64(95 + r.IntN(25)), uint64(r.IntN(4))}
		var want []StreamID
		for _, id := range ids {
			if id.Compare(a) >= 0 && id.Compare(b) <= 0 {
				want = append(want, id)
			}
		}
		for _, rev := range []bool{false, true} {
			var got []StreamID
			it := s.Range(a, b, rev)
			for it.Next() {
				got = append(got, it.ID())
			}
			w := slices.Clone(want)
			if rev {
				slices.Reverse(w)
			}
			if !slices.Equal(got, w) {
				t.Fatalf("range %v..%v rev=%v: %v, want %v", a, b, rev, got, w)
			}
		}
	}
}

func TestStreamIDs(t *testing.T) {
	if id, ok := MaxStreamID.Next(); ok || !id.IsZero() {
		t.Fatal("max.Next")
	}
	if id, ok := (StreamID{}).Prev(); ok || id != MaxStreamID {
		t.Fatal("zero.Prev")
	}
	if id, _ := (StreamID{1, math.MaxUint64}).Next(); id != (StreamID{2, 0}) {
		t.Fatal("carry")
	}
	if id, _ := (StreamID{2, 0}).Prev(); id != (StreamID{1, math.MaxUint64}) {
		t.Fatal("borrow")
	}
	if got := (StreamID{18446744073709551615, 7}).String(); got != "18446744073709551615-7" {
		t.Fatal(got)
	}
	s := NewStream()
	if s.Add(StreamID{5, 5}, [][]byte{[]byte("a"), []byte("b")}, StreamLimits{}) != AddOK {
		t.Fatal("add")
	}
	if id, _ := s.NextAutoID(3); id != (StreamID{5, 6}) {
		t.Fatalf("auto id with clock behind: %v", id)
	}
	if id, _ := s.NextAutoID(9); id != (StreamID{9, 0}) {
		t.Fatalf("auto id: %v", id)
	}
	if s.Add(StreamID{5, 5}, [][]byte{[]byte("a"), []byte("b")}, StreamLimits{}) != AddIDTooSmall {
		t.Fatal("equal id accepted")
	}
}

// TestRaxNodes checks RaxNodes against a direct construction of the same
// canonical radix tree (every distinct prefix is a trie position; rax keeps
// a node at the root, at branches, right after branches and at key ends).
func TestRaxNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		s := NewStream()
		n := 1 + r.IntN(40)
		var id StreamID
		for range n {
			switch r.IntN(3) {
			case 0:
				id.Seq += 1 + uint64(r.IntN(300))
			case 1:
				id.Ms += 1 + uint64(r.IntN(1<<uint(r.IntN(40))))
				id.Seq = uint64(r.IntN(3))
			default:
				id.Ms += 1 + uint64(r.IntN(1000))
			}
			s.Add(id, [][]byte{[]byte("f"), []byte("v")}, StreamLimits{MaxEntries: 1})
		}
		if got, want := s.RaxNodes(), bruteRaxNodes(s); got != want {
			t.Fatalf("trial %d: RaxNodes %d, brute force %d", trial, got, want)
		}
	}
	if got := NewStream().RaxNodes(); got != 1 {
		t.Fatalf("empty: %d", got)
	}
}

func bruteRaxNodes(s *Stream) int64 {
	children := map[string]map[byte]bool{}
	var keys []string
	for _, n := range s.liveNodes() {
		var k [16]byte
		for i := range 8 {
			k[i] = byte(n.master.Ms >> (56 - 8*i))
			k[8+i] = byte(n.master.Seq >> (56 - 8*i))
		}
		keys = append(keys, string(k[:]))
		for d := range 16 {
			p := string(k[:d])
			if children[p] == nil {
				children[p] = map[byte]bool{}
			}
			children[p][k[d]] = true
		}
	}
	count := int64(0)
	seen := map[string]bool{}
	for _, k := range keys {
		for d := 0; d <= 16; d++ {
			p := k[:d]
			if seen[p] {
				continue
			}
			seen[p] = true
			switch {
			case d == 0 || d == 16:
				count++
			case len(children[p]) >= 2 || len(children[k[:d-1]]) >= 2:
				count++
			}
		}
	}
	return count
}

// TestIDChunksModel compares idChunks with a sorted slice under random
// inserts and deletes, with enough records to split and merge chunks.
func TestIDChunksModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var c idChunks[StreamID]
	var model []StreamID
	for step := range 20000 {
		id := StreamID{uint64(r.IntN(3000)), uint64(r.IntN(2))}
		if step < 6000 && r.IntN(3) == 0 {
			id = StreamID{uint64(10000 + step), 0} // appends
		}
		i, found := slices.BinarySearchFunc(model, id, StreamID.Compare)
		if r.IntN(5) < 3 {
			if got := c.Insert(id); got == found {
				t.Fatalf("step %d: insert %v = %v, present %v", step, id, got, found)
			}
			if !found {
				model = slices.Insert(model, i, id)
			}
		} else {
			if got := c.Delete(id); got != found {
				t.Fatalf("step %d: delete %v = %v, present %v", step, id, got, found)
			}
			if found {
				model = slices.Delete(model, i, i+1)
			}
		}
		if c.Len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, c.Len(), len(model))
		}
		if step%500 == 0 || step > 19900 {
			var all []StreamID
			c.Each(func(x *StreamID) bool { all = append(all, *x); return true })
			if !slices.Equal(all, model) {
				t.Fatalf("step %d: contents differ", step)
			}
			for _, ch := range c.chunks {
				if len(ch) == 0 || len(ch) > idChunkMax {
					t.Fatalf("step %d: chunk of %d", step, len(ch))
				}
			}
			probe := StreamID{uint64(r.IntN(3000)), 0}
			j, _ := slices.BinarySearchFunc(model, probe, StreamID.Compare)
			got := c.Seek(probe)
			if (got == nil) != (j == len(model)) || got != nil && *got != model[j] {
				t.Fatalf("step %d: seek %v", step, probe)
			}
		}
	}
	if len(model) > 0 && (*c.First() != model[0] || *c.Last() != model[len(model)-1]) {
		t.Fatal("first/last")
	}
}

func TestStreamGroups(t *testing.T) {
	s := NewStream()
	for i := range 10 {
		s.Add(StreamID{uint64(i + 1), 0}, [][]byte{[]byte("f"), []byte("v")}, StreamLimits{MaxEntries: 3})
	}
	g := s.CreateGroup([]byte("g"), StreamID{}, InvalidEntriesRead)
	if g == nil || s.CreateGroup([]byte("g"), StreamID{}, 0) != nil {
		t.Fatal("create group")
	}
	s.CreateGroup([]byte("a"), StreamID{}, 0)
	if s.Groups()[0].Name() != "a" {
		t.Fatal("groups not sorted")
	}
	alice := g.CreateConsumer([]byte("alice"), 1)
	bob := g.CreateConsumer([]byte("bob"), 1)
	for i := range 6 {
		g.Deliver(StreamID{uint64(i + 1), 0}, alice, 5)
	}
	g.Deliver(StreamID{2, 0}, bob, 6) // hand-over
	if p, ok := g.Pending(StreamID{2, 0}); !ok || p.Consumer != bob || p.DeliveryCount != 1 || p.DeliveryTime != 6 {
		t.Fatalf("hand-over: %+v", p)
	}
	g.Claim(StreamID{3, 0}, bob, 9, 4)
	g.Claim(StreamID{9, 0}, bob, 9, 1) // FORCE-style creation
	if !g.Ack(StreamID{1, 0}) || g.Ack(StreamID{1, 0}) {
		t.Fatal("ack")
	}
	if msg := g.checkInvariants(); msg != "" {
		t.Fatal(msg)
	}
	if alice.PendingLen() != 3 || bob.PendingLen() != 3 || g.PendingLen() != 6 {
		t.Fatalf("pending: alice %d bob %d group %d", alice.PendingLen(), bob.PendingLen(), g.PendingLen())
	}
	cl := s.Clone().(*Stream)
	if n := g.DeleteConsumer(alice); n != 3 || g.PendingLen() != 3 {
		t.Fatalf("delete consumer: %d, group %d", n, g.PendingLen())
	}
	carol := g.CreateConsumer([]byte("carol"), 2) // reuses alice's slot
	g.Deliver(StreamID{10, 0}, carol, 7)
	if msg := g.checkInvariants(); msg != "" {
		t.Fatal(msg)
	}
	cg := cl.Group([]byte("g"))
	if cg.PendingLen() != 6 || cg.Consumer([]byte("alice")).PendingLen() != 3 {
		t.Fatal("clone changed with the original")
	}
	if msg := cg.checkInvariants(); msg != "" {
		t.Fatal(msg)
	}
	if !s.DestroyGroup([]byte("g")) || s.DestroyGroup([]byte("g")) || len(s.Groups()) != 1 {
		t.Fatal("destroy")
	}
}

// TestStreamCounters checks the Redis 7.0 read-counter and lag rules on the
// cases of the consumer-group tests of Redis's suite.
func TestStreamCounters(t *testing.T) {
	s := NewStream()
	add := func(ms uint64) {
		s.Add(StreamID{ms, 0}, [][]byte{[]byte("data"), []byte("x")}, StreamLimits{MaxEntries: 100})
	}
	for i := range 5 {
		add(uint64(i + 1))
	}
	s.Delete(StreamID{3, 0})
	g := s.CreateGroup([]byte("g1"), StreamID{}, InvalidEntriesRead)
	if _, ok := s.Lag(g); ok {
		t.Fatal("lag known with a tombstone ahead")
	}
	for i, want := range []int64{-1, -1, -1, 5} {
		it := s.Range(StreamID{}, MaxStreamID, false)
		for it.Next() {
			if it.ID().Compare(g.LastID) > 0 {
				s.AdvanceGroup(g, it.ID())
				break
			}
		}
		if g.EntriesRead != want {
			t.Fatalf("read %d: entries-read %d, want %d", i, g.EntriesRead, want)
		}
	}
	if lag, ok := s.Lag(g); !ok || lag != 0 {
		t.Fatalf("lag %d %v", lag, ok)
	}
	add(6)
	if lag, ok := s.Lag(g); !ok || lag != 1 {
		t.Fatalf("lag after add %d %v", lag, ok)
	}
	g2 := s.CreateGroup([]byte("g2"), StreamID{}, InvalidEntriesRead)
	s.Trim(TrimArgs{ByID: true, MinID: StreamID{3, 0}})
	if lag, ok := s.Lag(g2); !ok || lag != 3 {
		t.Fatalf("g2 lag after MINID 3: %d %v", lag, ok)
	}
	s.Trim(TrimArgs{ByID: true, MinID: StreamID{5, 0}})
	if lag, ok := s.Lag(g2); !ok || lag != 2 {
		t.Fatalf("g2 lag after MINID 5: %d %v", lag, ok)
	}
}
