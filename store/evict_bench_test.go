package store

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
)

// BenchmarkSetEvicting is scripts/bench-evict.sh's keyspace work: a
// keyspace held at about 90k keys (16-byte keys, 100-byte values) where
// every SET of a new key first evicts one under allkeys-lru with 5
// samples. An op is one eviction and one SET; its cost is the sampling's
// cache misses, the pool, the eviction's unlink and the new entry's
// allocations (and their garbage). cpu-ns/op is the process's CPU time per
// op (the collector's included), which a loaded host disturbs less than
// ns/op.
func BenchmarkSetEvicting(b *testing.B) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	ks := New(1, clk, nil)
	db := ks.DB(0)
	const live = 90_000
	val := make([]byte, 100)
	key := make([]byte, 0, 16)
	set := func(i int) {
		key = fmt.Appendf(key[:0], "key:%012d", i)
		sl := slots.KeySlot(key)
		db.Lock(sl)
		db.SetString(key, val, false)
		db.Unlock(sl)
	}
	// The LRU clock moves a second every 20k writes (about what a second
	// of the benchmark writes), so that idle times differ as in the server.
	tick := func(i int) {
		if i%20_000 == 0 {
			clk.Advance(time.Second)
			ks.Tick()
		}
	}
	for i := range live {
		tick(i)
		set(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if _, ok := ks.EvictOne(EvictAllKeysLRU, 5, nil); !ok {
			b.Fatal("nothing to evict")
		}
		tick(live + i)
		set(live + i)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user + system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEvictionSample is one pool fill's sampling alone (5 keys of a
// random slot, their scores) over 500k keys, more than a last-level cache
// holds: what it costs is the sampled entries' cache misses.
func BenchmarkEvictionSample(b *testing.B) {
	ks := New(1, clock.NewFake(time.Unix(1_000_000, 0)), nil)
	db := ks.DB(0)
	val := make([]byte, 100)
	key := make([]byte, 0, 16)
	for i := range 500_000 {
		key = fmt.Appendf(key[:0], "key:%012d", i)
		sl := slots.KeySlot(key)
		db.Lock(sl)
		db.SetString(key, val, false)
		db.Unlock(sl)
	}
	var sum uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db.samplePool(EvictAllKeysLRU, 5, &ks.evict.samples, -1, 0, func(_ *Slot, _ int, batch []dictSample) {
			for _, c := range batch {
				sum += ks.score(EvictAllKeysLRU, c.e)
			}
		})
	}
	if sum == 1 {
		b.Log(sum)
	}
}
