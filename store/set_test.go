package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/shoal-db/shoal/strconvx"
)

func checkSet(t *testing.T, s *Set, model map[string]bool) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("len %d, model %d (%s)", s.Len(), len(model), s.Encoding())
	}
	n := 0
	var prev int64
	for m := range s.All() {
		if !model[string(m)] {
			t.Fatalf("member %q not in the model", m)
		}
		if s.IsIntset() {
			v, _ := strconv.ParseInt(string(m), 10, 64)
			if n > 0 && v <= prev {
				t.Fatalf("intset out of order: %d after %d", v, prev)
			}
			prev = v
		}
		n++
	}
	if n != len(model) {
		t.Fatalf("iterated %d members, model %d", n, len(model))
	}
	for m := range model {
		if !s.Contains([]byte(m)) {
			t.Fatalf("Contains(%q) false", m)
		}
	}
}

func randMember(r *rand.Rand) []byte {
	switch r.IntN(8) {
	case 0:
		return fmt.Appendf(nil, "m%d", r.IntN(500))
	case 1:
		return fmt.Appendf(nil, "%d", r.Int64()) // 64-bit
	case 2:
		return fmt.Appendf(nil, "%d", int64(int32(r.Uint32()))) // 32-bit
	case 3: // not canonical: stays a string
		return []byte([]string{"+1", "01", "-0", " 1", "1 ", "", "99999999999999999999", "-9223372036854775809"}[r.IntN(8)])
	case 4:
		return []byte([]string{"9223372036854775807", "-9223372036854775808", "0", "-1"}[r.IntN(4)])
	}
	return fmt.Appendf(nil, "%d", r.IntN(1000)-500) // 16-bit
}

func TestSetRandomOpsAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for round := range 60 {
		maxIntset := int64(r.IntN(600))
		intsOnly := round%2 == 0
		model := map[string]bool{}
		var s *Set
		for op := range 2500 {
			m := randMember(r)
			if intsOnly && r.IntN(200) != 0 {
				m = fmt.Appendf(nil, "%d", r.IntN(3000)-1500)
			}
			switch r.IntN(6) {
			case 0, 1, 2:
				if s == nil {
					s = NewSetFor(m)
					_, isInt := strconvx.ParseInt(m)
					if s.IsIntset() != isInt {
						t.Fatalf("NewSetFor(%q) is %s", m, s.Encoding())
					}
				}
				wasIntset := s.IsIntset()
				if s.Add(m, maxIntset) == model[string(m)] {
					t.Fatalf("round %d op %d: Add(%q) disagrees with model", round, op, m)
				}
				model[string(m)] = true
				_, isInt := strconvx.ParseInt(m)
				want := wasIntset && isInt && int64(len(model)) <= maxIntset
				if s.IsIntset() != want {
					t.Fatalf("round %d op %d: after Add(%q) encoding %s (limit %d, len %d)", round, op, m, s.Encoding(), maxIntset, len(model))
				}
			case 3:
				if s != nil {
					if s.Remove(m) != model[string(m)] {
						t.Fatalf("round %d op %d: Remove(%q) disagrees", round, op, m)
					}
					delete(model, string(m))
				}
			case 4:
				if s != nil && s.Len() > 0 {
					var buf [24]byte
					p := string(s.PopRandom(buf[:0]))
					if !model[p] {
						t.Fatalf("PopRandom gave %q", p)
					}
					delete(model, p)
				}
			case 5:
				if s != nil && s.Len() > 1 {
					count := 1 + r.IntN(s.Len()-1)
					popped := map[string]bool{}
					s.PopMany(count, maxIntset, func(m []byte) {
						if !model[string(m)] || popped[string(m)] {
							t.Fatalf("PopMany gave %q", m)
						}
						popped[string(m)] = true
					})
					if len(popped) != count {
						t.Fatalf("PopMany(%d) popped %d", count, len(popped))
					}
					for p := range popped {
						delete(model, p)
					}
				}
			}
			if s != nil && op%250 == 0 {
				checkSet(t, s, model)
			}
		}
		if s != nil {
			checkSet(t, s, model)
			c := s.Clone().(*Set)
			checkSet(t, c, model)
		}
	}
}

func TestIntsetWidths(t *testing.T) {
	var s intset
	vals := []int64{5, -3, math.MaxInt16, math.MinInt16}
	for _, v := range vals {
		s.add(v)
	}
	if s.width != 2 {
		t.Fatalf("width %d for 16-bit values", s.width)
	}
	s.add(math.MaxInt16 + 1)
	if s.width != 4 {
		t.Fatalf("width %d after a 32-bit value", s.width)
	}
	s.add(math.MinInt64)
	s.add(math.MaxInt64)
	if s.width != 8 {
		t.Fatalf("width %d after a 64-bit value", s.width)
	}
	want := []int64{math.MinInt64, math.MinInt16, -3, 5, math.MaxInt16, math.MaxInt16 + 1, math.MaxInt64}
	var got []int64
	for i := range s.len() {
		got = append(got, s.get(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if !s.contains(math.MinInt64) || s.contains(4) {
		t.Fatal("contains")
	}
	for _, v := range want {
		if !s.remove(v) {
			t.Fatalf("remove(%d)", v)
		}
	}
	if s.len() != 0 || s.width != 8 {
		t.Fatalf("after removing all: len %d width %d", s.len(), s.width)
	}
}

func TestSetRandomDistinctMembers(t *testing.T) {
	for _, n := range []int{10, 600} {
		s := NewIntSet()
		for i := range n {
			s.Add([]byte(strconv.Itoa(i)), 512)
		}
		for _, count := range []int{1, 3, n / 3, n/3 + 1, n - 1} {
			seen := map[string]bool{}
			s.RandomDistinctMembers(count, func(m []byte) {
				if seen[string(m)] || !s.Contains(m) {
					t.Fatalf("%s count %d: bad member %q", s.Encoding(), count, m)
				}
				seen[string(m)] = true
			})
			if len(seen) != count {
				t.Fatalf("%s count %d: got %d", s.Encoding(), count, len(seen))
			}
		}
	}
}
