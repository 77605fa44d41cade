package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

func checkHash(t *testing.T, h *Hash, model map[string]string) {
	t.Helper()
	if h.Len() != len(model) {
		t.Fatalf("len %d, model %d (%s)", h.Len(), len(model), h.Encoding())
	}
	n := 0
	for f, v := range h.All() {
		n++
		if mv, ok := model[string(f)]; !ok || mv != string(v) {
			t.Fatalf("pair %q=%q, model %q (%v)", f, v, mv, ok)
		}
	}
	if n != len(model) {
		t.Fatalf("iterated %d pairs, model %d", n, len(model))
	}
	for f, v := range model {
		got, ok := h.Get([]byte(f))
		if !ok || string(got) != v {
			t.Fatalf("Get(%q) = %q %v, want %q", f, got, ok, v)
		}
	}
}

func TestHashRandomOpsAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 40 {
		maxEntries := int64(r.IntN(200))
		maxValue := int64(r.IntN(80))
		h := NewHash()
		model := map[string]string{}
		space := 5 + r.IntN(300)
		converted := false
		for op := range 3000 {
			f := fmt.Appendf(nil, "field:%d", r.IntN(space))
			switch r.IntN(5) {
			case 0, 1, 2:
				v := bytes.Repeat([]byte{byte('a' + r.IntN(26))}, r.IntN(int(maxValue)+10))
				wasListpack := h.IsListpack()
				if r.IntN(2) == 0 {
					h.TryConvert(maxValue, [][]byte{f, v})
				}
				_, existed := model[string(f)]
				if created := h.Set(f, v, maxEntries, maxValue); created == existed {
					t.Fatalf("round %d op %d: Set(%q) created=%v, existed=%v", round, op, f, created, existed)
				}
				model[string(f)] = string(v)
				// A listpack converts exactly when a limit is passed.
				tooBig := int64(len(f)) > maxValue || int64(len(v)) > maxValue || int64(len(model)) > maxEntries
				if wasListpack && tooBig && h.IsListpack() {
					t.Fatalf("round %d op %d: still a listpack past the limits", round, op)
				}
				if wasListpack && !tooBig && !h.IsListpack() {
					t.Fatalf("round %d op %d: converted within the limits", round, op)
				}
			case 3:
				_, existed := model[string(f)]
				if h.Delete(f) != existed {
					t.Fatalf("round %d op %d: Delete(%q) disagrees", round, op, f)
				}
				delete(model, string(f))
			case 4:
				if h.Len() > 0 {
					rf, rv := h.RandomPair()
					if model[string(rf)] != string(rv) {
						t.Fatalf("RandomPair gave %q=%q", rf, rv)
					}
				}
			}
			if !h.IsListpack() {
				converted = true
			} else if converted {
				t.Fatal("a hashtable went back to a listpack")
			}
			if op%300 == 0 {
				checkHash(t, h, model)
			}
		}
		checkHash(t, h, model)
		c := h.Clone().(*Hash)
		checkHash(t, c, model)
		if c.Encoding() != h.Encoding() {
			t.Fatalf("clone encoding %s, original %s", c.Encoding(), h.Encoding())
		}
	}
}

func TestHashRandomDistinctPairs(t *testing.T) {
	for _, big := range []bool{false, true} {
		h := NewHash()
		const n = 40
		for i := range n {
			h.Set(fmt.Appendf(nil, "f%d", i), fmt.Appendf(nil, "v%d", i), 1000, 1000)
		}
		if big {
			h.ConvertToTable()
		}
		hits := map[string]int{}
		for _, count := range []int{1, 5, 13, 14, 30, 39} {
			for range 200 {
				seen := map[string]bool{}
				h.RandomDistinctPairs(count, func(f, v []byte) {
					if seen[string(f)] {
						t.Fatalf("%s count %d: %q twice", h.Encoding(), count, f)
					}
					if string(v) != "v"+string(f[1:]) {
						t.Fatalf("pair %q=%q", f, v)
					}
					seen[string(f)] = true
					hits[string(f)]++
				})
				if len(seen) != count {
					t.Fatalf("%s count %d: got %d pairs", h.Encoding(), count, len(seen))
				}
			}
		}
		if len(hits) != n {
			t.Fatalf("%s: only %d of %d fields ever chosen", h.Encoding(), len(hits), n)
		}
	}
}

func TestHashListpackSpliceKeepsNeighbours(t *testing.T) {
	h := NewHash()
	h.Set([]byte("a"), []byte("1"), 100, 100)
	h.Set([]byte("b"), []byte("22"), 100, 100)
	h.Set([]byte("c"), []byte("333"), 100, 100)
	h.Set([]byte("b"), bytes.Repeat([]byte("x"), 90), 100, 100) // grow in the middle
	h.Set([]byte("a"), nil, 100, 100)                           // shrink at the start
	h.Delete([]byte("c"))
	checkHash(t, h, map[string]string{"a": "", "b": string(bytes.Repeat([]byte("x"), 90))})
	var order []string
	for f := range h.All() {
		order = append(order, string(f))
	}
	if fmt.Sprint(order) != "[a b]" {
		t.Fatalf("listpack order %v", order)
	}
}
