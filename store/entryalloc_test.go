package store

import (
	"bytes"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// cacheValue is a 100-byte value: with a 16-byte key, one 176-byte entry.
var cacheValue = bytes.Repeat([]byte("v"), 100)

func fillCache(db *DB, prefix string, n int) {
	for i := range n {
		withKey(db, prefix+strconv.Itoa(100_000+i), func(k []byte) { db.SetString(k, cacheValue, false) })
	}
}

// Under evicting writes an evicted entry becomes the next new key's entry:
// evicting and writing a key of the same size class allocates nothing.
func TestEvictedEntryIsReusedByTheNextNewKey(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
	db := ks.DB(0)
	// One slot (a hash tag): its table neither grows nor shrinks as one
	// key replaces another, so the only allocation could be the entry's.
	fillCache(db, "{t}cached:", 2000)
	keys := make([][]byte, 201) // AllocsPerRun's warm-up run, then 200
	for i := range keys {
		keys[i] = []byte("{t}newer::" + strconv.Itoa(100_000+i))
	}
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		if _, ok := ks.EvictOne(EvictAllKeysLRU, 5, nil); !ok {
			t.Fatal("nothing to evict")
		}
		slot := slots.KeySlot(keys[i])
		db.Lock(slot)
		db.SetString(keys[i], cacheValue, false)
		db.Unlock(slot)
		i++
	})
	require.Zero(t, allocs, "the new key's entry was allocated, not reused")
	require.Equal(t, int64(2000), db.Size())
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
}

// An entry the eviction pool still holds a candidate for (sampled twice) is
// not reused: the stale candidate, found by identity, would match the new
// key written into it and evict it on the old key's score.
func TestEvictionDoesNotReuseAnEntryThePoolHolds(t *testing.T) {
	ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
	db := ks.DB(0)
	fillCache(db, "key:cached:", 10)
	key := []byte("key:cached:100003")
	var e *Entry
	withKey(db, string(key), func(k []byte) { e = db.Find(k) })
	require.NotZero(t, e.inlineArray(), "an inline entry")

	st := &ks.evict
	st.mu.Lock()
	*st.at(0) = poolEntry{score: 1, db: db, e: e, used: true}
	_, ok := ks.evictKey(db, key, false, nil)
	st.mu.Unlock()
	require.True(t, ok)
	if got := ks.recycler.alloc([]byte("key:cached:200000"), cacheValue); got == e {
		t.Fatal("the entry a pool candidate holds was reused")
	}

	// The control: without the candidate the entry is reused.
	if raceEnabled {
		return
	}
	key = []byte("key:cached:100004")
	withKey(db, string(key), func(k []byte) { e = db.Find(k) })
	st.mu.Lock()
	*st.at(0) = poolEntry{}
	_, ok = ks.evictKey(db, key, false, nil)
	st.mu.Unlock()
	require.True(t, ok)
	require.Same(t, e, ks.recycler.alloc([]byte("key:cached:200001"), cacheValue))
}

// Only an entry whose key and value still lie in its own array is reused:
// not one renamed (its key is a separate string), nor one whose value was
// replaced by one of another length, nor a raw string or another type.
func TestOnlyInlineEntriesAreRecycled(t *testing.T) {
	key, val := []byte("key:000000000001"), cacheValue
	require.Equal(t, 128, allocEntry(key, val).inlineArray())
	renamed := allocEntry(key, val)
	renamed.setKey([]byte("key:000000000009")) // RENAME's destination: the key apart, the value left in the array
	require.Zero(t, renamed.inlineArray())
	replaced := allocEntry(key, val)
	replaced.setString([]byte("short"))
	require.Zero(t, replaced.inlineArray())
	raw := allocEntry(key, val)
	raw.MutableBytes()
	require.Zero(t, raw.inlineArray())
	require.Zero(t, allocEntry(key, nil).inlineArray())
	require.Zero(t, allocEntry(key, make([]byte, 300)).inlineArray(), "an entry allocated alone, its value apart")

	// A recycled entry is cleared: of the old key only bytes past the new
	// key and value survive in its array.
	var r entryRecycler
	old := allocEntry(key, val)
	old.expire = 42
	old.setLRU(7)
	old.hash = 0xdeadbeef
	r.recycle(old)
	if raceEnabled {
		return
	}
	shorter := bytes.Repeat([]byte("w"), 99) // the same array size
	e := r.alloc([]byte("key:000000000002"), shorter)
	require.Same(t, old, e)
	require.Equal(t, "key:000000000002", e.Key())
	require.Equal(t, shorter, e.Bytes())
	require.Zero(t, e.expire)
	require.Zero(t, e.lru())
	require.Nil(t, e.next)
	require.Zero(t, e.hash)
	require.Zero(t, e.meta)
	require.True(t, e.kptr == nil && e.val == nil, "key and value read at the inline offset")
	require.Equal(t, unsafe.Add(unsafe.Pointer(e), entrySize), unsafe.Pointer(unsafe.StringData(e.Key())))
	require.Equal(t, 128, e.inlineArray(), "recyclable again")
}

// RANDOMKEY's answer is read after the slot is unlocked: it must be a copy,
// as the entry's memory becomes another key's once it is evicted.
func TestRandomKeyOutlivesItsEntry(t *testing.T) {
	ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
	db := ks.DB(0)
	fillCache(db, "key:cached:", 1)
	key, ok := db.RandomKey()
	require.True(t, ok)
	require.Equal(t, "key:cached:100000", key)
	_, ok = ks.EvictOne(EvictAllKeysLRU, 5, nil)
	require.True(t, ok)
	fillCache(db, "key:others:", 1) // the same size class: takes the evicted entry
	require.Equal(t, "key:cached:100000", key)
}

// Evicting writes into one hash-tagged slot while its table grows
// incrementally: sampling walks both tables, evicted entries are recycled
// into new keys (which the table links into the new table), and every key
// stays findable with its charges exact.
func TestEvictingWritesDuringIncrementalRehash(t *testing.T) {
	ks := New(1, clock.NewFake(time.Unix(1_000, 0)), nil)
	db := ks.DB(0)
	fillCache(db, "{t}cached:", incrementalRehashMin+1) // the last insert starts the growth
	s := &db.slots[slots.KeySlot([]byte("{t}"))]
	require.NotNil(t, s.dict.rehash)
	written := make([]string, 0, 4*incrementalRehashMin)
	for i := range incrementalRehashMin + 1 {
		written = append(written, "{t}cached:"+strconv.Itoa(100_000+i))
	}
	newKeys := make([][]byte, 3*incrementalRehashMin) // made here: AllocsPerRun counts none of them
	for i := range newKeys {
		newKeys[i] = []byte("{t}newer::" + strconv.Itoa(100_000+i))
	}
	slot := slots.KeySlot(newKeys[0])
	duringRehash, i := 0, 0
	step := func() {
		if s.dict.rehash != nil {
			duringRehash++
		}
		if _, ok := ks.EvictOne(EvictAllKeysLRU, 5, nil); !ok {
			t.Fatal("nothing to evict")
		}
		db.Lock(slot)
		db.SetString(newKeys[i], cacheValue, false)
		db.Unlock(slot)
		i++
	}
	if !raceEnabled { // the race detector makes sync.Pool drop entries at random
		allocs := testing.AllocsPerRun(100, step)
		require.NotNil(t, s.dict.rehash, "the growth ended during the measured writes")
		require.Zero(t, allocs, "a new key's entry was allocated, not reused, during the growth")
	}
	for s.dict.rehash != nil || i < 300 {
		require.Less(t, i, len(newKeys), "the growth never ends")
		step()
	}
	require.Greater(t, duringRehash, 100)
	for _, k := range newKeys[:i] {
		written = append(written, string(k))
	}
	found := 0
	for _, k := range written {
		withKey(db, k, func(kb []byte) {
			if e := db.Find(kb); e != nil {
				require.Equal(t, k, e.Key())
				require.Equal(t, cacheValue, e.Bytes())
				found++
			}
		})
	}
	require.Equal(t, int64(incrementalRehashMin+1), db.Size(), "one key evicted per key written")
	require.Equal(t, int64(found), db.Size(), "a linked entry no lookup finds")
	require.Equal(t, chargedTotal(ks), ks.DataBytes())
}
