package store

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

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
	// The layout the size classes and eviction's one-miss-per-entry
	// sampling rely on: 48 bytes, next, meta and hash in the first 16.
	if sz := unsafe.Sizeof(Entry{}); sz != 48 {
		t.Fatalf("Entry is %d bytes, want 48", sz)
	}
	var e Entry
	if unsafe.Offsetof(e.next) >= 16 || unsafe.Offsetof(e.meta) >= 16 || unsafe.Offsetof(e.hash) >= 16 {
		t.Fatalf("next, meta and hash at %d, %d, %d: not all in the first 16 bytes",
			unsafe.Offsetof(e.next), unsafe.Offsetof(e.meta), unsafe.Offsetof(e.hash))
	}
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
			key := bytes.Repeat([]byte{'k'}, kl)
			var val []byte
			if vl >= 0 {
				val = bytes.Repeat([]byte{'v'}, vl)
			}
			e := allocEntry(key, val)
			if e.Key() != string(key) || (vl >= 0 && string(e.Bytes()) != string(val)) {
				t.Fatalf("key %d val %d: entry holds key %d bytes, value %d", kl, vl, len(e.Key()), len(e.Bytes()))
			}
			// An inline key and value are reached by offset: the entry
			// holds no pointer for the collector to follow.
			if inlineFits(kl, max(vl, 0)) && (e.kptr != nil || e.val != nil) {
				t.Fatalf("key %d val %d: inline entry holds pointers kptr=%p val=%p", kl, vl, e.kptr, e.val)
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

// BenchmarkSetNewKeys measures inserting new keys as redis-benchmark -t set
// -r 1000000 -d 100 does: 16-byte keys, 100-byte values, into a keyspace
// that grows from empty to 1M keys (run with -benchtime=1000000x). The
// table growth, the allocation and the collector's marking of a growing
// heap are most of a new key's cost; gc/op shows the collections per key.
func BenchmarkSetNewKeys(b *testing.B) {
	val := bytes.Repeat([]byte{'x'}, 100)
	const keyspace = 1 << 20
	k := []byte("key:000000000000")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	b.ReportAllocs()
	b.ResetTimer()
	var db *DB
	for i := 0; i < b.N; i++ {
		n := i % keyspace
		if n == 0 {
			db = New(1, nil, nil).DB(0)
		}
		for d := len(k) - 1; d >= 4; d-- { // the keys are made here, so the heap holds only the keyspace
			k[d] = byte('0' + n%10)
			n /= 10
		}
		sl := slots.KeySlot(k)
		db.Lock(sl)
		db.SetString(k, val, false)
		db.Unlock(sl)
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-gc0)/float64(b.N), "gc/op")
}
