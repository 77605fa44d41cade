package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// checkSkiplist verifies the structure: order, backward links, spans on
// every level against ranks, the tail, the length and the member index.
func checkSkiplist(t *testing.T, sl *skiplist) {
	t.Helper()
	rank := map[*zslNode]int{sl.header: 0}
	var prev *zslNode
	i := 0
	for x := sl.first(); x != nil; x = x.level0.forward {
		i++
		rank[x] = i
		if x.backward != prev {
			t.Fatalf("node %q: backward link broken", x.member)
		}
		if prev != nil && !zslBefore(prev, x.score, x.member) {
			t.Fatalf("order broken at %q(%v) after %q(%v)", x.member, x.score, prev.member, prev.score)
		}
		prev = x
	}
	if i != sl.length {
		t.Fatalf("length %d, counted %d", sl.length, i)
	}
	if sl.tail != prev {
		t.Fatalf("tail is not the last node")
	}
	for lv := 0; lv < zslMaxLevel; lv++ {
		x := sl.header
		for x != nil {
			if lv >= x.levels() {
				t.Fatalf("level %d reached a node with %d levels", lv, x.levels())
			}
			l := x.lvl(lv)
			if l.forward == nil {
				if lv < sl.level && l.span != sl.length-rank[x] && x != sl.header {
					t.Fatalf("level %d: trailing span of %q is %d, want %d", lv, x.member, l.span, sl.length-rank[x])
				}
				break
			}
			if lv >= sl.level {
				t.Fatalf("level %d above list level %d has a link", lv, sl.level)
			}
			if got, want := l.span, rank[l.forward]-rank[x]; got != want {
				t.Fatalf("level %d: span %d from rank %d, want %d", lv, got, rank[x], want)
			}
			x = l.forward
		}
	}
	indexed := 0
	for _, b := range sl.buckets {
		for n := b; n != nil; n = n.hnext {
			indexed++
			if _, ok := rank[n]; !ok {
				t.Fatalf("index holds unlinked node %q", n.member)
			}
			if sl.find(n.member) != n {
				t.Fatalf("find(%q) misses its node", n.member)
			}
		}
	}
	if indexed != sl.length {
		t.Fatalf("index holds %d nodes, list %d", indexed, sl.length)
	}
}

// model is a sorted-slice reference for a sorted set.
type model struct{ elems []ZMember }

func (m *model) sort() {
	slices.SortFunc(m.elems, func(a, b ZMember) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return strings.Compare(a.Member, b.Member)
	})
}

func (m *model) find(member string) int {
	for i, e := range m.elems {
		if e.Member == member {
			return i
		}
	}
	return -1
}

func (m *model) set(member string, score float64) {
	if i := m.find(member); i >= 0 {
		m.elems[i].Score = score
	} else {
		m.elems = append(m.elems, ZMember{member, score})
	}
	m.sort()
}

func (m *model) remove(member string) bool {
	if i := m.find(member); i >= 0 {
		m.elems = slices.Delete(m.elems, i, i+1)
		return true
	}
	return false
}

func TestSkiplistAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		sl := newSkiplist()
		var m model
		for op := 0; op < 600; op++ {
			member := fmt.Sprintf("m%03d", rng.IntN(150))
			score := float64(rng.IntN(40)) / 4
			switch rng.IntN(5) {
			case 0, 1:
				if n := sl.find(member); n != nil {
					sl.updateScore(n, score)
				} else {
					sl.insert(score, member)
				}
				m.set(member, score)
			case 2:
				got := false
				if n := sl.find(member); n != nil {
					got = sl.remove(n.score, n.member)
				}
				if want := m.remove(member); got != want {
					t.Fatalf("remove(%q) = %v, want %v", member, got, want)
				}
			case 3:
				if len(m.elems) == 0 {
					continue
				}
				a, b := rng.IntN(len(m.elems)), rng.IntN(len(m.elems))
				a, b = min(a, b), max(a, b)
				if got := sl.removeRangeByRank(a+1, b+1); got != b-a+1 {
					t.Fatalf("removeRangeByRank(%d,%d) = %d", a+1, b+1, got)
				}
				m.elems = slices.Delete(m.elems, a, b+1)
			case 4:
				r := ScoreRange{Min: float64(rng.IntN(40)) / 4, Max: float64(rng.IntN(40)) / 4, MinEx: rng.IntN(2) == 0, MaxEx: rng.IntN(2) == 0}
				got := sl.removeRangeByScore(&r)
				want := 0
				m.elems = slices.DeleteFunc(m.elems, func(e ZMember) bool {
					in := r.gteMin(e.Score) && r.lteMax(e.Score)
					if in {
						want++
					}
					return in
				})
				if got != want {
					t.Fatalf("removeRangeByScore(%+v) = %d, want %d", r, got, want)
				}
			}
			if op%50 == 0 {
				checkSkiplist(t, sl)
			}
			// ranks both ways
			if len(m.elems) > 0 {
				i := rng.IntN(len(m.elems))
				e := m.elems[i]
				if r := sl.rank(e.Score, e.Member); r != i+1 {
					t.Fatalf("rank(%v) = %d, want %d", e, r, i+1)
				}
				if n := sl.byRank(i + 1); n == nil || n.member != e.Member {
					t.Fatalf("byRank(%d) wrong", i+1)
				}
			}
		}
		checkSkiplist(t, sl)
		c := sl.clone()
		checkSkiplist(t, c)
		if c.length != sl.length {
			t.Fatalf("clone length %d, want %d", c.length, sl.length)
		}
	}
}

func TestSkiplistScanCoversAll(t *testing.T) {
	sl := newSkiplist()
	for i := 0; i < 1000; i++ {
		sl.insert(float64(i), fmt.Sprint("k", i))
	}
	seen := map[string]bool{}
	cursor := uint64(0)
	for steps := 0; steps < 100000; steps++ {
		cursor = sl.scan(cursor, func(n *zslNode) { seen[n.member] = true })
		// Resize under the scan: elements present throughout must still be seen.
		if steps == 10 {
			for i := 1000; i < 3000; i++ {
				sl.insert(float64(i), fmt.Sprint("k", i))
			}
		}
		if steps == 200 {
			for i := 1000; i < 3000; i++ {
				sl.remove(float64(i), fmt.Sprint("k", i))
			}
		}
		if cursor == 0 {
			break
		}
	}
	for i := 0; i < 1000; i++ {
		if !seen[fmt.Sprint("k", i)] {
			t.Fatalf("k%d never returned by scan", i)
		}
	}
	checkSkiplist(t, sl)
}
