package hll

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// emptySparse is the value PFADD creates: sparse, one XZERO of 16384
// registers, the cached cardinality marked invalid (node's TestHLLReplies
// checks it against Redis).
const emptySparse = "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"

func TestNewSparse(t *testing.T) {
	b := NewSparse()
	if !Valid(b) || IsDense(b) {
		t.Fatalf("NewSparse() = %q", b)
	}
	InvalidateCache(b)
	if string(b) != emptySparse {
		t.Fatalf("NewSparse() with a stale cache = %q, want %q", b, emptySparse)
	}
}

// TestSparseDenseAgree adds the same elements to a sparse and a dense HLL:
// registers, counts and merged registers must agree, and the sparse one
// turns dense past maxBytes.
func TestSparseDenseAgree(t *testing.T) {
	var zero Registers
	sparse, dense := NewSparse(), NewDense(&zero)
	for i := range 1000 {
		ele := []byte("el:" + strconv.Itoa(i))
		if a, b := Add(&sparse, ele, 3000), Add(&dense, ele, 3000); a != b || a < 0 {
			t.Fatalf("Add(%q): sparse %d, dense %d", ele, a, b)
		}
	}
	if IsDense(sparse) {
		t.Fatal("1000 elements turned a 3000-byte sparse HLL dense")
	}
	sc, sInvalid := Count(sparse)
	dc, dInvalid := Count(dense)
	if sInvalid || dInvalid || sc != dc {
		t.Fatalf("Count: sparse %d (%v), dense %d (%v)", sc, sInvalid, dc, dInvalid)
	}
	var merged Registers
	if !merged.Merge(sparse) || merged.Count() != dc {
		t.Fatalf("merged count %d, want %d", merged.Count(), dc)
	}
	conv := bytes.Clone(sparse)
	if !ToDense(&conv) || !IsDense(conv) {
		t.Fatal("ToDense failed")
	}
	for i := range NumRegisters {
		if Register(conv, i) != Register(dense, i) {
			t.Fatalf("register %d: converted %d, dense %d", i, Register(conv, i), Register(dense, i))
		}
	}
	if Set(&sparse, 7, sparseValMax+1, 3000) != 1 || !IsDense(sparse) || Register(sparse, 7) != sparseValMax+1 {
		t.Fatal("a register value beyond the VAL opcode's left the HLL sparse")
	}
}

func TestSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("ten million additions")
	}
	if msg := SelfTest(3000); msg != "" {
		t.Fatal(msg)
	}
}

// decodeAll runs every reader of a HyperLogLog over b, which must not
// panic whatever b holds; it reports false (reading nothing) if Valid
// rejects b.
func decodeAll(b []byte) bool {
	if !Valid(b) {
		return false
	}
	Count(b)
	var max Registers
	max.Merge(b)
	if !IsDense(b) {
		sparseToDense(b)
		DecodeSparse(b)
	}
	return true
}

// FuzzDecode feeds arbitrary strings to every HLL decoder and updater:
// none may panic, and a value Valid rejects is never decoded.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(emptySparse))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x80\xbf\xff\x00"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x00\x7f\xfe"))
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	f.Add(dense)
	f.Fuzz(func(t *testing.T, b []byte) {
		if !decodeAll(b) {
			return
		}
		for _, ele := range []string{"a", "b", "c", "", "x:17"} {
			c := bytes.Clone(b)
			res := Add(&c, []byte(ele), 3000)
			if res < -1 || res > 1 || len(c) < HdrSize || string(c[:4]) != "HYLL" {
				t.Fatalf("Add(%q) = %d, value %q", ele, res, c)
			}
			for _, idx := range []int{0, 1, 63, 64, 65, 8000, NumRegisters - 1} {
				c := bytes.Clone(b)
				if c[encOffset] == encSparse {
					sparseSet(&c, idx, 33, 3000)
					c = bytes.Clone(b)
					sparseSet(&c, idx, 1, 20)
				}
			}
		}
	})
}

// TestCorruptedNeverPanics runs the decoders over many random
// corruptions of real HLLs (the fuzz test's job, bounded, on every run).
func TestCorruptedNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
		b := NewSparse()
		for j := r.IntN(400); j > 0; j-- {
			Add(&b, []byte(strconv.Itoa(r.IntN(1e6))), 3000)
		}
		for j := 1 + r.IntN(5); j > 0; j-- {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		if r.IntN(3) == 0 {
			b = append(b, byte(r.IntN(256)))
		}
		if r.IntN(3) == 0 && len(b) > HdrSize+1 {
			b = b[:HdrSize+r.IntN(len(b)-HdrSize)]
		}
		if !decodeAll(b) {
			continue
		}
		c := bytes.Clone(b)
		for j := 0; j < 50; j++ {
			if Add(&c, []byte(strconv.Itoa(j)), 3000) < 0 {
				break
			}
		}
	}
}

// TestPatLenExtremes checks the register index and run length bounds
// (the values themselves are pinned by node's TestHLLReplies and
// TestHLLMatchesRedis, which are checked against Redis).
func TestPatLenExtremes(t *testing.T) {
	for _, ele := range []string{"", "a", "abcdefgh", "abcdefghi", strings.Repeat("z", 100)} {
		idx, count := patLen([]byte(ele))
		if idx < 0 || idx >= NumRegisters || count < 1 || count > qBits+1 {
			t.Fatalf("patLen(%q) = %d, %d", ele, idx, count)
		}
	}
}
