package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// chargedTotal walks the keyspace and sums what its entries and expiries
// count for now: what DataBytes must equal at all times.
func chargedTotal(ks *Keyspace) int64 {
	var n int64
	for i := range ks.dbs {
		db := ks.existingDB(i)
		if db == nil {
			continue
		}
		for slot := range db.slots {
			s := &db.slots[slot]
			s.mu.Lock()
			var perSlot int64
			db.ScanSlotLocked(uint16(slot), func(e *Entry) {
				perSlot += e.charge()
				if e.expire != 0 {
					perSlot += VolatileCharge
				}
			})
			if s.dict.count > 0 {
				perSlot += SlotCharge
			}
			if perSlot != s.bytes {
				panic(fmt.Sprintf("slot %d: entries %d, slot total %d", slot, perSlot, s.bytes))
			}
			n += perSlot
			s.mu.Unlock()
		}
	}
	return n
}

func withKey(db *DB, key string, fn func(k []byte)) {
	slot := slots.KeySlot([]byte(key))
	db.Lock(slot)
	defer db.Unlock(slot)
	fn([]byte(key))
}

func TestChargesNeverDrift(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ks := New(2, clk, nil)
	db := ks.DB(0)
	require.Zero(t, ks.DataBytes())

	for i := range 300 {
		k := "key:" + strconv.Itoa(i)
		withKey(db, k, func(k []byte) {
			switch i % 6 {
			case 0: // short string, inline
				db.SetString(k, []byte("v"), false)
			case 1: // long string, separate allocation
				db.SetString(k, make([]byte, 500+i), false)
			case 2: // mutable string grown in place without a remeasure
				e := db.SetString(k, []byte("abc"), false)
				p := e.MutableBytes()
				*p = append(*p, make([]byte, 1000)...)
			case 3: // a list changed in place, then remeasured
				l := NewList(-2)
				e := db.SetValue(k, l)
				for j := range 50 {
					e.List().Push([]byte(strconv.Itoa(j)), false)
				}
				db.Remeasure(k)
			case 4: // expiry
				e := db.SetString(k, []byte("x"), false)
				db.SetExpire(k, e, 2_000_000)
			case 5: // raw string
				db.SetRawString(k, make([]byte, 64), false)
			}
		})
	}
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
	require.Equal(t, ks.DataBytes(), db.Bytes())
	grown := ks.DataBytes()

	// Overwrites of every kind, renames, copies, moves and expiry removal.
	for i := 0; i < 300; i += 7 {
		k := "key:" + strconv.Itoa(i)
		withKey(db, k, func(k []byte) { db.SetString(k, []byte("overwritten-with-a-longer-value"), true) })
	}
	unlock := lockKeys(db, "key:1", "renamed")
	require.True(t, db.Rename([]byte("key:1"), []byte("renamed")))
	unlock()
	unlock = lockKeys(db, "key:3", "copied")
	require.True(t, db.CopyTo(db, []byte("key:3"), []byte("copied"), false))
	unlock()
	withKey(db, "key:4", func(k []byte) { db.SetExpire(k, db.Find(k), 0) })
	other := ks.DB(1)
	slot := slots.KeySlot([]byte("key:9"))
	db.Lock(slot)
	other.Lock(slot)
	require.True(t, db.MoveTo(other, []byte("key:9")))
	other.Unlock(slot)
	db.Unlock(slot)
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
	require.NotZero(t, other.Bytes())

	// Expiry, deletes and flushes give back exactly what was charged.
	clk.Set(time.UnixMilli(3_000_000))
	for ks.ActiveExpireCycle(time.Second) > 0 {
	}
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
	for i := 0; i < 300; i += 2 {
		withKey(db, "key:"+strconv.Itoa(i), func(k []byte) { db.Delete(k) })
	}
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
	require.Less(t, ks.DataBytes(), grown)
	ks.FlushAll()
	require.Zero(t, ks.DataBytes())
	require.Zero(t, db.Bytes())
	require.Zero(t, db.volatileKeys.Load())
}

// A small string key costs about what Redis's dictEntry + robj + sds cost.
func TestStringChargeIsAllocatorSized(t *testing.T) {
	ks := New(1, clock.NewFake(time.UnixMilli(1)), nil)
	db := ks.DB(0)
	withKey(db, "key:000001", func(k []byte) { db.SetString(k, []byte("0123456789"), false) })
	// 48-byte entry + 20 bytes inline = 68 → the 80-byte class, + its
	// bucket; and the slot it is the first key of.
	require.EqualValues(t, 88+SlotCharge, ks.DataBytes())
	withKey(db, "key:000001", func(k []byte) { db.SetString(k, make([]byte, 100), false) })
	// Inline, as a fresh write of these lengths is laid out: 48 + 10 + 100
	// = 158 → the 160-byte class (separate would be 48 + 16 + 112), + 8.
	require.EqualValues(t, 168+SlotCharge, ks.DataBytes())
	// Too long to be inline: 48 + 16 (key) + 256 (value) + 8.
	withKey(db, "key:000001", func(k []byte) { db.SetString(k, make([]byte, 250), false) })
	require.EqualValues(t, 328+SlotCharge, ks.DataBytes())
	require.EqualValues(t, 144, AllocSize(129))
	require.EqualValues(t, 32768, AllocSize(32768))
	require.EqualValues(t, 40960, AllocSize(32769+8191))
}

func TestLFUCounter(t *testing.T) {
	clk := clock.NewFake(time.Unix(600_000, 0))
	ks := New(1, clk, nil)
	ks.SetAccessPolicy(true, 10, 1)
	db := ks.DB(0)
	withKey(db, "k", func(k []byte) { db.SetString(k, []byte("v"), false) })
	var e *Entry
	withKey(db, "k", func(k []byte) { e = db.Lookup(k, LookupNoTouch) })
	require.EqualValues(t, LFUInitVal, ks.LFUCounter(e), "a new key starts at LFU_INIT_VAL")
	for range 2000 {
		withKey(db, "k", func(k []byte) { db.Find(k) })
	}
	hot := ks.LFUCounter(e)
	require.Greater(t, hot, uint8(LFUInitVal+3), "2000 accesses with log factor 10")
	require.Less(t, hot, uint8(40))
	// One decrement per lfu-decay-time minutes.
	clk.Set(time.Unix(600_000+3*60, 0))
	ks.Tick()
	require.Equal(t, hot-3, ks.LFUCounter(e))
	ks.SetAccessPolicy(true, 10, 0)
	require.Equal(t, hot, ks.LFUCounter(e), "lfu-decay-time 0 never decays")
}

func fillForEviction(t *testing.T, ks *Keyspace, n int, expire func(i int) int64) {
	db := ks.DB(0)
	for i := range n {
		withKey(db, "k"+strconv.Itoa(i), func(k []byte) {
			e := db.SetString(k, []byte("v"), false)
			if at := expire(i); at != 0 {
				db.SetExpire(k, e, at)
			}
		})
	}
}

func TestEvictionPolicies(t *testing.T) {
	noExpire := func(int) int64 { return 0 }
	oddExpire := func(i int) int64 {
		if i%2 == 1 {
			return int64(10_000_000 + i)
		}
		return 0
	}
	t.Run("allkeys-lru evicts the idle keys first", func(t *testing.T) {
		clk := clock.NewFake(time.Unix(1_000, 0))
		ks := New(1, clk, nil)
		fillForEviction(t, ks, 200, noExpire)
		// Keys 0..99 are touched an hour later; 100..199 stay idle.
		clk.Set(time.Unix(1_000+3600, 0))
		ks.Tick()
		db := ks.DB(0)
		for i := range 100 {
			withKey(db, "k"+strconv.Itoa(i), func(k []byte) { db.Find(k) })
		}
		var evicted []string
		for range 50 {
			_, ok := ks.EvictOne(EvictAllKeysLRU, 5, func(_ *DB, key []byte) { evicted = append(evicted, string(key)) })
			require.True(t, ok)
		}
		idle := 0
		for _, k := range evicted {
			if n, _ := strconv.Atoi(k[1:]); n >= 100 {
				idle++
			}
		}
		require.GreaterOrEqual(t, idle, 45, "approximated LRU picks mostly idle keys")
		require.EqualValues(t, 50, ks.EvictedKeys())
		require.Equal(t, chargedTotal(ks), ks.DataBytes())
	})
	t.Run("volatile policies evict only keys with an expiry", func(t *testing.T) {
		for _, p := range []EvictionPolicy{EvictVolatileLRU, EvictVolatileLFU, EvictVolatileRandom, EvictVolatileTTL} {
			ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
			fillForEviction(t, ks, 100, oddExpire)
			n := 0
			for {
				_, ok := ks.EvictOne(p, 5, func(_ *DB, key []byte) {
					i, _ := strconv.Atoi(string(key[1:]))
					require.Equal(t, 1, i%2, "policy %d evicted a key without expiry", p)
				})
				if !ok {
					break
				}
				n++
				require.Less(t, n, 200)
			}
			require.Equal(t, 50, n, "policy %d", p)
			require.EqualValues(t, 50, ks.DB(0).Size())
		}
	})
	t.Run("volatile-ttl evicts the nearest expiry first", func(t *testing.T) {
		ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
		fillForEviction(t, ks, 400, func(i int) int64 { return int64(10_000_000 + i) })
		var evicted []int
		for range 20 {
			ks.EvictOne(EvictVolatileTTL, 10, func(_ *DB, key []byte) {
				i, _ := strconv.Atoi(string(key[1:]))
				evicted = append(evicted, i)
			})
		}
		early := 0
		for _, i := range evicted {
			if i < 200 {
				early++
			}
		}
		require.GreaterOrEqual(t, early, 17)
	})
	t.Run("allkeys-lfu keeps the frequently read keys", func(t *testing.T) {
		ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
		ks.SetAccessPolicy(true, 10, 1)
		fillForEviction(t, ks, 200, noExpire)
		db := ks.DB(0)
		for range 30 {
			for i := range 20 {
				withKey(db, "k"+strconv.Itoa(i), func(k []byte) { db.Find(k) })
			}
		}
		for range 150 {
			_, ok := ks.EvictOne(EvictAllKeysLFU, 5, nil)
			require.True(t, ok)
		}
		hot := 0
		for i := range 20 {
			withKey(db, "k"+strconv.Itoa(i), func(k []byte) {
				if db.Lookup(k, LookupNoTouch) != nil {
					hot++
				}
			})
		}
		require.GreaterOrEqual(t, hot, 18, "hot keys survive LFU eviction")
	})
	t.Run("nothing to evict", func(t *testing.T) {
		ks := New(2, clock.NewFake(time.Unix(1_000, 0)), nil)
		for _, p := range []EvictionPolicy{EvictAllKeysLRU, EvictAllKeysRandom, EvictVolatileTTL} {
			_, ok := ks.EvictOne(p, 5, nil)
			require.False(t, ok)
		}
		fillForEviction(t, ks, 10, noExpire)
		_, ok := ks.EvictOne(EvictVolatileLRU, 5, nil)
		require.False(t, ok, "no key has an expiry")
		for range 10 {
			_, ok := ks.EvictOne(EvictAllKeysRandom, 5, nil)
			require.True(t, ok)
		}
		require.Zero(t, ks.DataBytes())
	})
}

// BenchmarkSetWhileEvicting is a write that evicts one key per write, as
// under maxmemory with allkeys-lru: the eviction's share of a SET.
func BenchmarkSetWhileEvicting(b *testing.B) {
	for _, policy := range []EvictionPolicy{EvictAllKeysLRU, EvictAllKeysLFU, EvictAllKeysRandom} {
		b.Run(strconv.Itoa(int(policy)), func(b *testing.B) {
			ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
			db := ks.DB(0)
			for i := range 100_000 {
				withKey(db, "k"+strconv.Itoa(i), func(k []byte) { db.SetString(k, []byte("value"), false) })
			}
			b.ResetTimer()
			for i := range b.N {
				withKey(db, "n"+strconv.Itoa(i), func(k []byte) { db.SetString(k, []byte("value"), false) })
				if _, ok := ks.EvictOne(policy, 5, nil); !ok {
					b.Fatal("nothing evicted")
				}
			}
		})
	}
}

// A key deleted and written again while the eviction pool holds it (on
// the idle time of the deleted key) is a new key: the pool must not evict
// it on that stale score. The pool holds entries, not key names.
// 100 a keys among 400 b keys and samples of 16: a sample holds no b key
// about once in 10^11, so a fresh a key is only evicted on a stale score.
func TestEvictionPoolSkipsRewrittenKeys(t *testing.T) {
	const samples = 16
	clk := clock.NewFake(time.Unix(1_000, 0))
	ks := New(1, clk, nil)
	ks.Tick()
	db := ks.DB(0)
	set := func(prefix string, i int) {
		withKey(db, prefix+strconv.Itoa(i), func(k []byte) { db.SetString(k, []byte("v"), false) })
	}
	for i := range 100 {
		set("a", i)
	}
	clk.Set(time.Unix(1_000+3600, 0))
	ks.Tick()
	for i := range 400 {
		set("b", i)
	}
	// The a keys are an hour idle: the pool fills with them. A sample
	// holds none of them about one time in 35; evict until one goes.
	var evicted []string
	hook := func(_ *DB, key []byte) { evicted = append(evicted, string(key)) }
	staleInPool := 0
	for range 10 {
		_, ok := ks.EvictOne(EvictAllKeysLRU, samples, hook)
		require.True(t, ok)
		staleInPool = 0
		for k := range evictionPoolSize {
			if p := ks.evict.at(k); p.used && p.e.Key()[0] == 'a' {
				staleInPool++
			}
		}
		if staleInPool > 0 {
			break
		}
	}
	require.NotZero(t, staleInPool, "no a key, an hour idle, left in the pool: the test shows nothing")
	// Two hours on, every a key is deleted and written again: now the b
	// keys are the idle ones.
	clk.Set(time.Unix(1_000+7200, 0))
	ks.Tick()
	for i := range 100 {
		withKey(db, "a"+strconv.Itoa(i), func(k []byte) { db.Delete(k) })
		set("a", i)
	}
	evicted = evicted[:0]
	for range 20 {
		_, ok := ks.EvictOne(EvictAllKeysLRU, samples, hook)
		require.True(t, ok)
	}
	for _, k := range evicted {
		require.Equal(t, byte('b'), k[0], "evicted %s, written a moment ago, on the score of the key it replaced", k)
	}
}

// The pool keeps the best evictionPoolSize scores seen, in ascending order
// by rank, whatever order they come in (insert moves ranks, not entries).
func TestEvictionPoolKeepsBestScoresSorted(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		var st evictionState
		st.initOrder()
		rnd := rand.New(rand.NewPCG(seed, seed))
		var seen []uint64
		for i := 0; i < 200; i++ {
			score := rnd.Uint64N(1000)
			seen = append(seen, score)
			if c := st.insert(score); c != nil {
				*c = poolEntry{score: score, used: true}
			}
			var got []uint64
			for k := 0; k < evictionPoolSize; k++ {
				if c := st.at(k); c.used {
					got = append(got, c.score)
				}
			}
			want := slices.Clone(seen)
			slices.Sort(want)
			want = want[max(0, len(want)-evictionPoolSize):]
			require.Equal(t, want, got, "after %d inserts", i+1)
		}
		requireRanksArePositions(t, &st)
	}
}

// With candidates taken from the best down between inserts, as EvictOne
// takes them, and many equal scores (the LRU clock counts seconds), the
// pool holds what a sorted list of the best candidates would, its used
// ranks first.
func TestEvictionPoolWithTakesAndTies(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		var st evictionState
		st.initOrder()
		rnd := rand.New(rand.NewPCG(seed, seed))
		var want []uint64 // ascending, at most evictionPoolSize
		for i := 0; i < 2000; i++ {
			if rnd.IntN(3) == 0 {
				for k := evictionPoolSize - 1; k >= 0; k-- {
					if st.at(k).used {
						*st.at(k) = poolEntry{}
						break
					}
				}
				if len(want) > 0 {
					want = want[:len(want)-1]
				}
			} else {
				score := rnd.Uint64N(4)
				if c := st.insert(score); c != nil {
					*c = poolEntry{score: score, used: true}
				}
				if len(want) < evictionPoolSize || score > want[0] {
					if len(want) == evictionPoolSize {
						want = want[1:]
					}
					want = append(want, score)
					slices.Sort(want)
				}
			}
			var got []uint64
			for k := 0; k < evictionPoolSize; k++ {
				c := st.at(k)
				if !c.used {
					for ; k < evictionPoolSize; k++ {
						require.False(t, st.at(k).used, "step %d: a used rank after a free one", i)
					}
					break
				}
				got = append(got, c.score)
			}
			require.True(t, slices.Equal(want, got), "step %d: pool %v, want %v", i, got, want)
		}
		requireRanksArePositions(t, &st)
	}
}

// requireRanksArePositions checks that every position of the pool is
// reachable from exactly one rank.
func requireRanksArePositions(t *testing.T, st *evictionState) {
	t.Helper()
	var positions []int
	for _, p := range st.order {
		positions = append(positions, int(p))
	}
	slices.Sort(positions)
	for i, p := range positions {
		require.Equal(t, i, p)
	}
}

// AllocSize's tables give what searching the size classes gives, for every
// size up to past the largest class.
func TestAllocSizeTablesMatchSearch(t *testing.T) {
	for n := int64(1); n <= 32768; n++ {
		if got, want := AllocSize(n), searchAllocSize(n); got != want {
			t.Fatalf("AllocSize(%d) = %d, the size classes say %d", n, got, want)
		}
	}
	for _, n := range []int64{-1, 0, 32769, 40000} {
		if got, want := AllocSize(n), max(0, (n+8191)&^8191); got != want {
			t.Fatalf("AllocSize(%d) = %d, want %d", n, got, want)
		}
	}
}

// compactStringCharge is inlineFits's choice of layout, charged: one
// allocation when the key and value are inline, three otherwise.
func TestCompactStringChargeFollowsLayout(t *testing.T) {
	for kl := 0; kl <= 300; kl += 3 {
		for vl := 0; vl <= 300; vl += 7 {
			want := int64(entrySize + DictSlotCharge)
			switch {
			case kl+vl == 0:
			case inlineFits(kl, vl):
				want = AllocSize(entrySize+int64(kl+vl)) + DictSlotCharge
			default:
				want = entrySize + AllocSize(int64(kl)) + AllocSize(int64(vl)) + DictSlotCharge
			}
			if got := compactStringCharge(kl, vl); got != want {
				t.Fatalf("compactStringCharge(%d, %d) = %d, want %d", kl, vl, got, want)
			}
		}
	}
}

// Eviction reaches the keys of the highest database used, also after
// SWAPDB moved them to a database never used before.
func TestEvictionReachesHighDatabases(t *testing.T) {
	ks := New(16, clock.NewFake(time.Unix(1_000, 0)), nil)
	ks.DB(3) // used, empty
	db := ks.DB(12)
	for i := range 10 {
		withKey(db, "k"+strconv.Itoa(i), func(k []byte) { db.SetString(k, []byte("v"), false) })
	}
	for i, policy := range []EvictionPolicy{EvictAllKeysLRU, EvictAllKeysRandom} {
		_, ok := ks.EvictOne(policy, 5, nil)
		require.True(t, ok, "policy %d", policy)
		require.EqualValues(t, 9-i, db.Size(), "policy %d", policy)
	}
	ks.SwapDB(12, 15)
	_, ok := ks.EvictOne(EvictAllKeysLRU, 5, nil)
	require.True(t, ok)
	require.EqualValues(t, 7, ks.DB(15).Size())
	require.Zero(t, ks.DB(12).Size())
}

// With each pool fill's slot chosen one or two evictions ahead (sampleAhead),
// evictions still come from all over the keyspace, and a slot whose keys
// were deleted after it was chosen is passed over.
func TestEvictionSampledAheadSpreadsOverSlots(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000, 0))
	ks := New(1, clk, nil)
	db := ks.DB(0)
	for i := range 20_000 {
		withKey(db, "k"+strconv.Itoa(i), func(k []byte) { db.SetString(k, []byte("v"), false) })
	}
	bySlot := map[uint16]int{}
	hook := func(_ *DB, key []byte) { bySlot[slots.KeySlot(key)]++ }
	deleted := 0
	for range 2000 {
		_, ok := ks.EvictOne(EvictAllKeysLRU, 5, hook)
		require.True(t, ok)
		// Empty the slot prepared for the next fill: it must be passed over.
		if a := ks.evict.ahead[0]; a.hasNext && rand.IntN(4) == 0 {
			s := &db.slots[a.next]
			for {
				db.lockSlot(s)
				e := s.dict.randomEntry(randUint64)
				var key []byte
				if e != nil {
					key = []byte(e.Key())
				}
				s.mu.Unlock()
				if key == nil {
					break
				}
				withKey(db, string(key), func(k []byte) { db.Delete(k) })
				deleted++
			}
		}
	}
	require.Greater(t, len(bySlot), 1000, "2000 evictions from %d slots", len(bySlot))
	require.Positive(t, deleted)
	require.EqualValues(t, 20_000-2000-deleted, db.Size())
}
