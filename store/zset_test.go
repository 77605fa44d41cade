package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func collect(z *ZSet, f func(fn ZVisit)) []ZMember {
	var out []ZMember
	f(func(m []byte, s float64) bool {
		out = append(out, ZMember{string(m), s})
		return true
	})
	return out
}

func checkZSet(t *testing.T, z *ZSet, m *model) {
	t.Helper()
	if z.Len() != len(m.elems) {
		t.Fatalf("Len %d, want %d", z.Len(), len(m.elems))
	}
	got := collect(z, func(fn ZVisit) { z.Each(false, fn) })
	if !slices.Equal(got, m.elems) && !(len(got) == 0 && len(m.elems) == 0) {
		t.Fatalf("elements\n got %v\nwant %v", got, m.elems)
	}
	rev := collect(z, func(fn ZVisit) { z.Each(true, fn) })
	slices.Reverse(rev)
	if !slices.Equal(rev, got) {
		t.Fatalf("reverse iteration differs: %v", rev)
	}
	if z.sl != nil {
		checkSkiplist(t, z.sl)
	}
}

// modelRange is Redis's range walk on the sorted elements: the first
// element satisfying start (from the chosen end) must be in range, then
// offset elements are skipped and up to limit visited while in range.
func modelRange(elems []ZMember, reverse bool, start, in func(ZMember) bool, offset, limit int) []ZMember {
	order := slices.Clone(elems)
	if reverse {
		slices.Reverse(order)
	}
	i := slices.IndexFunc(order, start)
	if i < 0 || !in(order[i]) {
		return nil
	}
	var out []ZMember
	for i += offset; i < len(order) && limit != 0 && in(order[i]); i++ {
		out = append(out, order[i])
		limit--
	}
	return out
}

func TestZSetAgainstModel(t *testing.T) {
	limits := []ZSetLimits{
		{MaxListpackEntries: 1 << 20, MaxListpackValue: 1 << 20}, // always listpack
		{MaxListpackEntries: 0, MaxListpackValue: 0},             // always skiplist
		{MaxListpackEntries: 16, MaxListpackValue: 6},            // converts
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for li, lim := range limits {
		for round := 0; round < 10; round++ {
			var m model
			z := NewZSet(lim, 3)
			for op := 0; op < 400; op++ {
				member := fmt.Sprintf("m%d", rng.IntN(60))
				if rng.IntN(20) == 0 {
					member += "-long-member"
				}
				score := float64(rng.IntN(20)) - 10
				if rng.IntN(10) == 0 {
					score = math.Inf(1 - 2*rng.IntN(2))
				}
				switch rng.IntN(8) {
				case 0, 1, 2:
					var flags ZAddFlags
					if rng.IntN(4) == 0 {
						flags |= ZAddGT
					} else if rng.IntN(4) == 0 {
						flags |= ZAddLT
					}
					if rng.IntN(4) == 0 {
						flags |= ZAddIncr
					}
					cur, exists := math.NaN(), false
					if i := m.find(member); i >= 0 {
						cur, exists = m.elems[i].Score, true
					}
					res, newScore := z.Add([]byte(member), score, flags, lim)
					want := score
					if exists && flags&ZAddIncr != 0 {
						want = cur + score
					}
					switch {
					case math.IsNaN(want):
						if res != ZAddNaN {
							t.Fatalf("Add NaN result %v", res)
						}
					case exists && (flags&ZAddGT != 0 && want <= cur || flags&ZAddLT != 0 && want >= cur):
						if res != ZAddNop {
							t.Fatalf("Add GT/LT result %v", res)
						}
					default:
						want = lpNormalize(z, want)
						if newScore != want && !(z.IsListpack() && newScore == lpScore(want)) {
							t.Fatalf("Add new score %v, want %v", newScore, want)
						}
						if !exists && res != ZAddAdded || exists && want != cur && res != ZAddUpdated {
							t.Fatalf("Add(%q,%v,%v) result %v (exists %v cur %v)", member, score, flags, res, exists, cur)
						}
						m.set(member, newScore)
					}
				case 3:
					if got, want := z.Remove([]byte(member)), m.remove(member); got != want {
						t.Fatalf("Remove(%q) = %v, want %v", member, got, want)
					}
				case 4:
					s, ok := z.Score([]byte(member))
					i := m.find(member)
					if ok != (i >= 0) || ok && s != m.elems[i].Score {
						t.Fatalf("Score(%q) = %v %v", member, s, ok)
					}
					r, ok := z.Rank([]byte(member), false)
					if ok != (i >= 0) || ok && r != i {
						t.Fatalf("Rank(%q) = %v %v, want %d", member, r, ok, i)
					}
					r, ok = z.Rank([]byte(member), true)
					if ok && r != len(m.elems)-1-i {
						t.Fatalf("RevRank(%q) = %v, want %d", member, r, len(m.elems)-1-i)
					}
				case 5:
					r := ScoreRange{Min: float64(rng.IntN(24) - 12), Max: float64(rng.IntN(24) - 12), MinEx: rng.IntN(2) == 0, MaxEx: rng.IntN(2) == 0}
					if rng.IntN(5) == 0 {
						r.Min = math.Inf(-1)
					}
					offset, limit := rng.IntN(3), rng.IntN(6)-1
					rev := rng.IntN(2) == 0
					got := collect(z, func(fn ZVisit) { z.RangeByScore(&r, offset, limit, rev, fn) })
					var want []ZMember
					if !r.empty() {
						if rev {
							want = modelRange(m.elems, true, func(e ZMember) bool { return r.lteMax(e.Score) }, func(e ZMember) bool { return r.gteMin(e.Score) }, offset, limit)
						} else {
							want = modelRange(m.elems, false, func(e ZMember) bool { return r.gteMin(e.Score) }, func(e ZMember) bool { return r.lteMax(e.Score) }, offset, limit)
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("RangeByScore(%+v, %d, %d, rev=%v)\n got %v\nwant %v\n set %v", r, offset, limit, rev, got, want, m.elems)
					}
					all := modelRange(m.elems, false, func(e ZMember) bool { return r.gteMin(e.Score) }, func(e ZMember) bool { return r.lteMax(e.Score) }, 0, -1)
					if r.empty() {
						all = nil
					}
					if n := z.CountByScore(&r); n != len(all) {
						t.Fatalf("CountByScore(%+v) = %d, want %d", r, n, len(all))
					}
				case 6:
					if len(m.elems) == 0 {
						continue
					}
					a, b := rng.IntN(len(m.elems)), rng.IntN(len(m.elems))
					a, b = min(a, b), max(a, b)
					rev := rng.IntN(2) == 0
					got := collect(z, func(fn ZVisit) { z.RangeByRank(a, b, rev, fn) })
					order := slices.Clone(m.elems)
					if rev {
						slices.Reverse(order)
					}
					if want := order[a : b+1]; !slices.Equal(got, want) {
						t.Fatalf("RangeByRank(%d,%d,%v) = %v, want %v", a, b, rev, got, want)
					}
					if rng.IntN(3) == 0 {
						if n := z.RemoveRangeByRank(a, b); n != b-a+1 {
							t.Fatalf("RemoveRangeByRank = %d", n)
						}
						m.elems = slices.Delete(m.elems, a, b+1)
					}
				case 7:
					if len(m.elems) == 0 {
						continue
					}
					max := rng.IntN(2) == 0
					mem, s := z.Pop(max)
					want := m.elems[0]
					if max {
						want = m.elems[len(m.elems)-1]
					}
					if string(mem) != want.Member || s != want.Score {
						t.Fatalf("Pop(%v) = %q %v, want %v", max, mem, s, want)
					}
					m.remove(want.Member)
				}
				checkZSet(t, z, &m)
			}
			c := z.Clone().(*ZSet)
			checkZSet(t, c, &m)
			if c.Encoding() != z.Encoding() {
				t.Fatalf("limits %d: clone encoding %s, want %s", li, c.Encoding(), z.Encoding())
			}
		}
	}
}

// lpNormalize returns the score the set will report for want.
func lpNormalize(z *ZSet, want float64) float64 {
	if z.IsListpack() {
		return lpScore(want)
	}
	return want
}

func TestZSetLexRanges(t *testing.T) {
	for _, lim := range []ZSetLimits{{1 << 20, 1 << 20}, {0, 0}} {
		z := NewZSet(lim, 1)
		var m model
		for _, s := range []string{"a", "b", "c", "d", "e", "f", "g", "aa", "ab", "zz", ""} {
			z.Add([]byte(s), 0, 0, lim)
			m.set(s, 0)
		}
		bounds := []LexBound{{Inf: -1, Ex: true}, {Inf: 1, Ex: true}, {Value: []byte("a")}, {Value: []byte("a"), Ex: true},
			{Value: []byte("c")}, {Value: []byte("c"), Ex: true}, {Value: []byte("zz")}, {Value: []byte("")}, {Value: []byte("b"), Ex: true}}
		for _, lo := range bounds {
			for _, hi := range bounds {
				r := LexRange{Min: lo, Max: hi}
				for _, rev := range []bool{false, true} {
					got := collect(z, func(fn ZVisit) { z.RangeByLex(&r, 0, -1, rev, fn) })
					var want []ZMember
					if !r.empty() {
						if rev {
							want = modelRange(m.elems, true, func(e ZMember) bool { return r.lteMax([]byte(e.Member)) }, func(e ZMember) bool { return r.gteMin([]byte(e.Member)) }, 0, -1)
						} else {
							want = modelRange(m.elems, false, func(e ZMember) bool { return r.gteMin([]byte(e.Member)) }, func(e ZMember) bool { return r.lteMax([]byte(e.Member)) }, 0, -1)
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s RangeByLex(%+v rev=%v) = %v, want %v", z.Encoding(), r, rev, got, want)
					}
					if !rev && z.CountByLex(&r) != len(want) {
						t.Fatalf("CountByLex(%+v) = %d, want %d", r, z.CountByLex(&r), len(want))
					}
				}
			}
		}
		c := z.Clone().(*ZSet)
		r := LexRange{Min: LexBound{Value: []byte("b")}, Max: LexBound{Value: []byte("e"), Ex: true}}
		if n := c.RemoveRangeByLex(&r); n != 3 || c.Len() != 8 {
			t.Fatalf("RemoveRangeByLex = %d, len %d", n, c.Len())
		}
	}
}

func TestZSetConversionsAndBuild(t *testing.T) {
	lim := ZSetLimits{MaxListpackEntries: 4, MaxListpackValue: 5}
	z := NewZSet(lim, 1)
	for i := 0; i < 4; i++ {
		z.Add([]byte(fmt.Sprint(i)), float64(i), 0, lim)
	}
	if z.Encoding() != "listpack" {
		t.Fatalf("encoding %s", z.Encoding())
	}
	z.Add([]byte("x"), 9, 0, lim)
	if z.Encoding() != "skiplist" {
		t.Fatalf("after 5 entries: %s", z.Encoding())
	}
	z.Remove([]byte("x"))
	if z.Encoding() != "skiplist" {
		t.Fatal("a skiplist never converts back by itself")
	}
	z.ConvertToListpackIfNeeded(lim, 1, 4)
	if z.Encoding() != "listpack" || z.Len() != 4 {
		t.Fatalf("ConvertToListpackIfNeeded: %s %d", z.Encoding(), z.Len())
	}
	if NewZSet(lim, 6).Encoding() != "skiplist" {
		t.Fatal("a long first member starts a skiplist")
	}
	b := BuildZSet([]ZMember{{"a", 1}, {"b", 2}}, lim)
	if b.Encoding() != "listpack" || b.Len() != 2 {
		t.Fatal("BuildZSet small")
	}
	b = BuildZSet([]ZMember{{"a", 1}, {"toolong", 2}}, lim)
	if b.Encoding() != "skiplist" || b.Len() != 2 {
		t.Fatal("BuildZSet long member")
	}
	checkSkiplist(t, b.sl)
	// -0 becomes 0 in a listpack, as Redis's integer-encoded scores do.
	z2 := NewZSet(lim, 1)
	z2.Add([]byte("n"), math.Copysign(0, -1), 0, lim)
	if s, _ := z2.Score([]byte("n")); math.Signbit(s) {
		t.Fatal("listpack kept -0")
	}
}

func TestListpackScoreText(t *testing.T) {
	if got := string(ListpackScoreText(nil, 1<<62)); got != "4611686018427387904" {
		t.Errorf("ListpackScoreText(2^62) = %q", got)
	}
	if got := string(ListpackScoreText(nil, 1e19)); got != "1e+19" {
		t.Errorf("ListpackScoreText(1e19) = %q", got)
	}
	if got := string(ListpackScoreText(nil, 1.5)); got != "1.5" {
		t.Errorf("ListpackScoreText(1.5) = %q", got)
	}
}

type testDigester struct{ parts [][]byte }

func (d *testDigester) Mix(b []byte) { d.parts = append(d.parts, append([]byte(nil), b...)) }
func (d *testDigester) Xor(b []byte) { d.parts = append(d.parts, append([]byte(nil), b...)) }

func TestZSetValue(t *testing.T) {
	lim := ZSetLimits{128, 64}
	z := NewZSet(lim, 1)
	z.Add([]byte("a"), 1.5, 0, lim)
	var d, want testDigester
	z.Digest(&d)
	DigestElement(&want, []byte("a"), []byte("1.5"))
	if len(d.parts) != 1 || string(d.parts[0]) != string(want.parts[0]) {
		t.Fatalf("digest parts %q, want %q", d.parts, want.parts)
	}
	if z.MemoryUsage(0) <= 0 || z.Type() != TypeZSet {
		t.Fatal("MemoryUsage/Type")
	}
	z.convertToSkiplist()
	if z.MemoryUsage(5) <= 0 {
		t.Fatal("skiplist MemoryUsage")
	}
}
