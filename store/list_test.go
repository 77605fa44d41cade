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

// checkList verifies the list against a model and its structural invariants.
func checkList(t *testing.T, l *List, model [][]byte, step string) {
	t.Helper()
	if l.Len() != len(model) {
		t.Fatalf("%s: len %d, model %d", step, l.Len(), len(model))
	}
	i := 0
	for v := range l.All() {
		if !bytes.Equal(v, model[i]) {
			t.Fatalf("%s: element %d = %q, model %q", step, i, v, model[i])
		}
		i++
	}
	total := 0
	for k, n := range l.live() {
		if n.count <= 0 {
			t.Fatalf("%s: node %d empty", step, k)
		}
		c := 0
		for pos := n.lo; pos < n.hi; {
			_, pos = listEntryAt(n.buf, pos)
			c++
		}
		if c != n.count {
			t.Fatalf("%s: node %d count %d, holds %d", step, k, n.count, c)
		}
		// walking backwards finds the same entries
		c = 0
		for pos := n.hi; pos > n.lo; {
			_, pos = listEntryBefore(n.buf, pos)
			c++
		}
		if c != n.count {
			t.Fatalf("%s: node %d backward count %d, holds %d", step, k, c, n.count)
		}
		if !n.withinLimits(l.fill) {
			t.Fatalf("%s: node %d (count %d, %d bytes) exceeds fill %d", step, k, n.count, n.bytes(), l.fill)
		}
		total += n.count
	}
	if total != l.count {
		t.Fatalf("%s: nodes hold %d, count %d", step, total, l.count)
	}
}

func TestEntryEncodingRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 1 << 21, 3_000_000} {
		v := bytes.Repeat([]byte{'x'}, n)
		buf := make([]byte, listEntrySize(n)+3)
		putListEntry(buf[1:], v)
		got, next := listEntryAt(buf, 1)
		if len(got) != n || next != 1+listEntrySize(n) {
			t.Fatalf("n=%d: forward len %d next %d", n, len(got), next)
		}
		got, start := listEntryBefore(buf, next)
		if len(got) != n || start != 1 {
			t.Fatalf("n=%d: backward len %d start %d", n, len(got), start)
		}
	}
}

func TestListRandomAgainstModel(t *testing.T) {
	defer SetListPackedThreshold(0)
	for _, fill := range []int64{-2, -1, -5, 1, 2, 5, 128, 0, -100, 100000} {
		for _, thr := range []uint64{0, 10, 1} {
			SetListPackedThreshold(thr)
			rng := rand.New(rand.NewPCG(uint64(fill+1000), thr))
			l := NewList(fill)
			var model [][]byte
			elem := func() []byte {
				switch rng.IntN(6) {
				case 0:
					return []byte(strconv.Itoa(rng.IntN(20)))
				case 1:
					return bytes.Repeat([]byte{'a' + byte(rng.IntN(3))}, rng.IntN(300))
				case 2:
					return []byte{}
				default:
					return []byte(fmt.Sprintf("e%d", rng.IntN(40)))
				}
			}
			maxLen := 0
			for step := 0; step < 4000; step++ {
				maxLen = max(maxLen, len(model))
				name := fmt.Sprintf("fill %d thr %d step %d", fill, thr, step)
				switch op := rng.IntN(15); op {
				case 0, 1, 11, 12:
					v := elem()
					l.Push(v, true)
					model = slices.Insert(model, 0, v)
				case 2, 3, 13, 14:
					v := elem()
					l.Push(v, false)
					model = append(model, v)
				case 4:
					got := l.Pop(op%2 == 0)
					if len(model) == 0 {
						if got != nil {
							t.Fatalf("%s: pop from empty", name)
						}
						continue
					}
					if !bytes.Equal(got, model[0]) {
						t.Fatalf("%s: lpop %q, model %q", name, got, model[0])
					}
					model = model[1:]
				case 5:
					got := l.Pop(false)
					if len(model) == 0 {
						continue
					}
					if !bytes.Equal(got, model[len(model)-1]) {
						t.Fatalf("%s: rpop %q", name, got)
					}
					model = model[:len(model)-1]
				case 6:
					if len(model) == 0 {
						continue
					}
					i := rng.IntN(len(model))
					v := elem()
					idx := int64(i)
					if rng.IntN(2) == 0 {
						idx = int64(i - len(model))
					}
					if !l.Set(idx, v) {
						t.Fatalf("%s: set %d failed", name, idx)
					}
					model[i] = v
				case 7:
					pivot := elem()
					v := elem()
					after := rng.IntN(2) == 0
					at := slices.IndexFunc(model, func(e []byte) bool { return bytes.Equal(e, pivot) })
					if l.Insert(pivot, v, after) != (at >= 0) {
						t.Fatalf("%s: insert result", name)
					}
					if at >= 0 {
						if after {
							at++
						}
						model = slices.Insert(model, at, v)
					}
				case 8:
					if len(model) == 0 {
						continue
					}
					start := rng.IntN(len(model))
					n := rng.IntN(3) + 1
					if rng.IntN(20) == 0 {
						n = rng.IntN(len(model)-start) + 1
					}
					l.DelRange(start, n)
					model = slices.Delete(model, start, min(len(model), start+n))
				case 9:
					v := elem()
					count := int64(rng.IntN(5) - 2)
					want := int64(0)
					if count >= 0 {
						for i := 0; i < len(model); i++ {
							if bytes.Equal(model[i], v) && (count == 0 || want < count) {
								model = slices.Delete(model, i, i+1)
								i--
								want++
							}
						}
					} else {
						for i := len(model) - 1; i >= 0; i-- {
							if bytes.Equal(model[i], v) && want < -count {
								model = slices.Delete(model, i, i+1)
								want++
							}
						}
					}
					if got := l.Remove(v, count); got != want {
						t.Fatalf("%s: remove %q %d = %d, want %d", name, v, count, got, want)
					}
				case 10:
					if len(model) == 0 {
						continue
					}
					a, b := rng.IntN(len(model)), rng.IntN(len(model))
					a, b = min(a, b), max(a, b)
					rev := rng.IntN(2) == 0
					var got [][]byte
					l.Range(a, b, rev, func(v []byte) bool { got = append(got, v); return true })
					want := slices.Clone(model[a : b+1])
					if rev {
						slices.Reverse(want)
					}
					if len(got) != len(want) {
						t.Fatalf("%s: range len %d want %d", name, len(got), len(want))
					}
					for i := range got {
						if !bytes.Equal(got[i], want[i]) {
							t.Fatalf("%s: range[%d]", name, i)
						}
					}
					i := rng.IntN(len(model))
					if v, ok := l.Index(int64(i)); !ok || !bytes.Equal(v, model[i]) {
						t.Fatalf("%s: index %d", name, i)
					}
					if v, ok := l.Index(int64(i - len(model))); !ok || !bytes.Equal(v, model[i]) {
						t.Fatalf("%s: negative index %d", name, i)
					}
				}
				checkList(t, l, model, name)
			}
			if maxLen < 100 {
				t.Fatalf("fill %d thr %d: the list never grew past %d elements", fill, thr, maxLen)
			}
			c := l.Clone().(*List)
			checkList(t, c, model, "clone")
		}
	}
}

func TestListIndexBounds(t *testing.T) {
	l := NewList(-2)
	for i := range 10 {
		l.Push([]byte(strconv.Itoa(i)), false)
	}
	for _, i := range []int64{10, -11, math.MaxInt64, math.MinInt64} {
		if _, ok := l.Index(i); ok {
			t.Fatalf("index %d in range", i)
		}
		if l.Set(i, []byte("x")) {
			t.Fatalf("set %d in range", i)
		}
	}
	if got := l.Remove([]byte("3"), math.MinInt64); got != 1 {
		t.Fatalf("remove MinInt64 = %d", got)
	}
}

func TestListLargeIsCompact(t *testing.T) {
	l := NewList(-2)
	for i := range 1_000_000 {
		l.Push([]byte(strconv.Itoa(i)), i%2 == 0)
	}
	if n := l.nodeCount(); n > 2000 {
		t.Fatalf("%d nodes for a million small elements", n)
	}
	for i := range 1_000_000 {
		if l.Pop(i%3 == 0) == nil {
			t.Fatalf("pop %d", i)
		}
	}
	if l.Len() != 0 || l.nodeCount() != 0 {
		t.Fatalf("not empty: %d %d", l.Len(), l.nodeCount())
	}
}

func TestListNodeLimits(t *testing.T) {
	// fill 5: at most 5 entries per node.
	l := NewList(5)
	for i := range 23 {
		l.Push([]byte("v"), i%2 == 0)
	}
	if n := l.nodeCount(); n < 5 {
		t.Fatalf("fill 5, 23 elements: %d nodes", n)
	}
	// the packed threshold gives large elements their own node
	defer SetListPackedThreshold(0)
	if !SetListPackedThreshold(10) || SetListPackedThreshold(1<<32) {
		t.Fatal("threshold bounds")
	}
	l = NewList(-2)
	l.Push([]byte("a"), false)
	l.Push(bytes.Repeat([]byte("b"), 10), false)
	l.Push([]byte("c"), false)
	if n := l.nodeCount(); n != 3 {
		t.Fatalf("plain node: %d nodes", n)
	}
	if !l.live()[1].plain {
		t.Fatal("large element's node not plain")
	}
}

type mixRecorder struct{ parts [][]byte }

func (m *mixRecorder) Mix(b []byte) { m.parts = append(m.parts, bytes.Clone(b)) }
func (m *mixRecorder) Xor(b []byte) {}

func TestListValue(t *testing.T) {
	l := NewList(-2)
	l.Push([]byte("b"), false)
	l.Push([]byte("a"), true)
	var d mixRecorder
	l.Digest(&d)
	if len(d.parts) != 2 || string(d.parts[0]) != "a" || string(d.parts[1]) != "b" {
		t.Fatalf("digest order %q", d.parts)
	}
	if l.Encoding() != "quicklist" || l.Type() != TypeList {
		t.Fatal("encoding/type")
	}
	if l.MemoryUsage(0) <= 56 || l.MemoryUsage(1) <= 56 {
		t.Fatal("memory usage")
	}
	ks := New(1, nil, nil)
	db := ks.DB(0)
	withLock(db, "k", func() {
		db.SetValue([]byte("k"), l)
		e := db.Find([]byte("k"))
		if e.Type() != TypeList || e.List() != l || e.Value().Len() != 2 || EncodingOf(e) != "quicklist" {
			t.Fatal("entry round trip")
		}
	})
}
