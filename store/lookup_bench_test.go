package store

import (
	"strconv"
	"testing"

	"github.com/shoal-db/shoal/slots"
)

// BenchmarkLookupRandom measures a GET's keyspace work on a keyspace far
// bigger than the CPU caches (1M keys of 32-byte values, looked up in a
// random order): the cache misses of the slot table, the bucket, the entry,
// its key and its value dominate, as in redis-benchmark -r.
func BenchmarkLookupRandom(b *testing.B) {
	ks := New(1, nil, nil)
	db := ks.DB(0)
	const n = 1 << 20
	keys := make([][]byte, n)
	val := make([]byte, 32)
	for i := range keys {
		keys[i] = []byte("key:" + strconv.Itoa(i))
		sl := slots.KeySlot(keys[i])
		db.Lock(sl)
		db.SetString(keys[i], val, false)
		db.Unlock(sl)
	}
	// A fixed pseudo-random order (an LCG over the power-of-two count).
	order := make([]int, n)
	x := 1
	for i := range order {
		x = (x*1103515245 + 12345) & (n - 1)
		order[i] = x
	}
	b.ResetTimer()
	var sum int
	for i := 0; i < b.N; i++ {
		k := keys[order[i&(n-1)]]
		sl := slots.KeySlot(k)
		db.Lock(sl)
		if e := db.Find(k); e != nil {
			sum += len(e.Bytes()) + int(e.Bytes()[0])
		}
		db.Unlock(sl)
	}
	if sum == 0 {
		b.Fatal("nothing found")
	}
}

// TestAllocEntrySizes checks that a key (and short value) stored with its
// entry never takes more bytes than separate allocations would, and that
// the size-class table matches the allocator for the sizes it covers.
func TestAllocEntrySizes(t *testing.T) {
	classes := []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128} // runtime/sizeclasses.go
	for n := 1; n <= 128; n++ {
		want := 0
		for _, c := range classes {
			if c >= n {
				want = c
				break
			}
		}
		if got := smallSizeClass(n); got != want {
			t.Fatalf("smallSizeClass(%d) = %d, want %d", n, got, want)
		}
	}
	for kl := 0; kl <= 90; kl++ {
		for _, vl := range []int{-1, 0, 5, 32, 60, 100, 150, 200, 250} {
			key := make([]byte, kl)
			var val []byte
			if vl >= 0 {
				val = make([]byte, vl)
			}
			e := allocEntry(key, val)
			if e.key != string(key) || (vl >= 0 && len(e.Bytes()) != vl) {
				t.Fatalf("key %d val %d: entry holds key %d bytes, value %d", kl, vl, len(e.key), len(e.Bytes()))
			}
		}
	}
	// A 16-byte key with a 100-byte value (redis-benchmark's SET) is one
	// allocation of the 176-byte class, what the three separate ones took.
	key, val := make([]byte, 16), make([]byte, 100)
	if n := testing.AllocsPerRun(100, func() { allocEntry(key, val) }); n != 1 {
		t.Fatalf("allocEntry(16-byte key, 100-byte value): %v allocations, want 1", n)
	}
	if c := compactStringCharge(16, 100); c != 176+DictSlotCharge {
		t.Fatalf("charge of a 16-byte key with a 100-byte value: %d, want %d", c, 176+DictSlotCharge)
	}
}
