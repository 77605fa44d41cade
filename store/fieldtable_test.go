package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randBytes returns a random key of length 0..maxLen, sometimes much longer
// (beyond a chunk) to exercise dedicated chunks.
func randField(r *rand.Rand, space int) []byte {
	k := fmt.Appendf(nil, "f%d", r.IntN(space))
	if r.IntN(50) == 0 {
		k = append(k, strings.Repeat("x", fieldChunkMax+r.IntN(100))...)
	}
	return k
}

func randValue(r *rand.Rand) []byte {
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return bytes.Repeat([]byte{'v'}, fieldChunkMax+r.IntN(1000))
	}
	return bytes.Repeat([]byte{byte('a' + r.IntN(26))}, r.IntN(40))
}

// checkTable verifies the table against the model and its own invariants.
func checkTable(t *testing.T, tb *fieldTable, model map[string]string) {
	t.Helper()
	if tb.len() != len(model) {
		t.Fatalf("len %d, model %d", tb.len(), len(model))
	}
	seen := map[string]bool{}
	live := 0
	for i := range tb.len() {
		k, v := tb.pair(i)
		if seen[string(k)] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[string(k)] = true
		mv, ok := model[string(k)]
		if !ok || mv != string(v) {
			t.Fatalf("entry %d = %q/%q, model has %q (%v)", i, k, v, mv, ok)
		}
		if tb.find(k) != i {
			t.Fatalf("find(%q) = %d, want %d", k, tb.find(k), i)
		}
		live += tb.recordLen(tb.entries[i].off)
	}
	if live != tb.live {
		t.Fatalf("live bytes %d, counted %d", tb.live, live)
	}
	// Every chain holds exactly the entries of its bucket.
	chained := 0
	for b, head := range tb.buckets {
		for e := head; e != 0; e = tb.entries[e-1].next {
			if int(tb.entries[e-1].hash)&(len(tb.buckets)-1) != b {
				t.Fatalf("entry %d in bucket %d", e-1, b)
			}
			chained++
		}
	}
	if chained != tb.len() {
		t.Fatalf("%d entries chained, %d stored", chained, tb.len())
	}
}

func TestFieldTableRandomOps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		tb := newFieldTable(true, r.IntN(3)*100)
		model := map[string]string{}
		space := 10 + r.IntN(3000)
		for op := range 6000 {
			k := randField(r, space)
			switch r.IntN(6) {
			case 0, 1, 2: // set
				v := randValue(r)
				if i := tb.find(k); i >= 0 {
					tb.setValue(i, v)
				} else {
					tb.insert(k, v)
				}
				model[string(k)] = string(v)
			case 3, 4: // delete
				_, inModel := model[string(k)]
				if tb.remove(k) != inModel {
					t.Fatalf("round %d op %d: remove(%q) disagrees with model", round, op, k)
				}
				delete(model, string(k))
			case 5: // delete a random entry
				if tb.len() > 0 {
					i := tb.random()
					k, _ := tb.pair(i)
					delete(model, string(k))
					tb.removeAt(i)
				}
			}
			if op%500 == 0 {
				checkTable(t, tb, model)
			}
		}
		checkTable(t, tb, model)
		c := tb.clone()
		checkTable(t, c, model)
		for k := range model {
			tb.remove([]byte(k))
		}
		checkTable(t, tb, map[string]string{})
		if tb.live != 0 || tb.garbage != 0 || len(tb.chunks) != 0 {
			t.Fatalf("empty table keeps %d live, %d garbage bytes, %d chunks", tb.live, tb.garbage, len(tb.chunks))
		}
		checkTable(t, c, model) // the clone is independent
	}
}

// TestFieldTableGarbageBounded checks that rewriting values does not let
// dead bytes pile up.
func TestFieldTableGarbageBounded(t *testing.T) {
	tb := newFieldTable(true, 0)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		tb.insert(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	for range 200000 {
		i := r.IntN(tb.len())
		tb.setValue(i, bytes.Repeat([]byte{'z'}, 1+r.IntN(60)))
	}
	if tb.garbage > tb.live+fieldCompactFloor {
		t.Fatalf("garbage %d bytes for %d live", tb.garbage, tb.live)
	}
	held := 0
	for _, c := range tb.chunks {
		held += cap(c)
	}
	if held > 4*tb.live+4*fieldCompactFloor {
		t.Fatalf("chunks hold %d bytes for %d live", held, tb.live)
	}
}

// TestFieldTableScanGuarantee checks SCAN's promise across growth and
// shrinking between calls: every key present for the whole iteration is
// returned.
func TestFieldTableScanGuarantee(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 30 {
		tb := newFieldTable(false, 0)
		stable := map[string]bool{}
		nStable := 200 + r.IntN(2000)
		if round%2 == 1 {
			nStable = 50 + r.IntN(200)
		}
		for i := range nStable {
			k := fmt.Sprintf("stable%d", i)
			tb.insert([]byte(k), nil)
			stable[k] = true
		}
		grow := round%2 == 0
		if !grow { // something to delete while scanning
			for i := range 6000 {
				tb.insert(fmt.Appendf(nil, "churn%d", i), nil)
			}
		}
		seen := map[string]bool{}
		cursor := uint64(0)
		calls := 0
		buckets := len(tb.buckets)
		resized := false
		for {
			cursor = tb.scan(cursor, func(i int) { seen[string(tb.key(i))] = true })
			calls++
			// Churn between the first calls: grow hard or shrink hard.
			for range 20 * min(1, max(0, 1000-calls)) {
				k := []byte(fmt.Sprintf("churn%d", r.IntN(100000)))
				if grow {
					if tb.find(k) < 0 {
						tb.insert(k, nil)
					}
				} else {
					for range 2 {
						tb.remove(fmt.Appendf(nil, "churn%d", r.IntN(6000)))
					}
				}
			}
			resized = resized || len(tb.buckets) != buckets
			if cursor == 0 || calls > 1_000_000 {
				break
			}
		}
		if !resized {
			t.Fatalf("round %d: the table never resized during the scan", round)
		}
		for k := range stable {
			if !seen[k] {
				t.Fatalf("round %d: scan missed %q", round, k)
			}
		}
	}
}

func TestFieldTableRandomIsUniform(t *testing.T) {
	tb := newFieldTable(false, 0)
	const n = 10
	for i := range n {
		tb.insert(fmt.Appendf(nil, "m%d", i), nil)
	}
	counts := make([]int, n)
	const draws = 100000
	for range draws {
		counts[tb.random()]++
	}
	for i, c := range counts {
		if c < draws/n*8/10 || c > draws/n*12/10 {
			t.Fatalf("entry %d drawn %d times of %d", i, c, draws)
		}
	}
}
