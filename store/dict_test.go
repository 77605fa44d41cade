package store

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// dictFixture is a dict with the keys "k:<i>" it holds, for the rehash
// tests.
type dictFixture struct {
	seed    maphash.Seed
	d       dict
	entries map[string]*Entry
}

func newDictFixture() *dictFixture {
	return &dictFixture{seed: maphash.MakeSeed(), entries: map[string]*Entry{}}
}

func (f *dictFixture) hash(k string) uint64 { return hashKey(f.seed, []byte(k)) }

func (f *dictFixture) add(i int) {
	k := fmt.Sprintf("k:%d", i)
	e := allocEntry([]byte(k), nil)
	f.d.insert(f.hash(k), e)
	f.entries[k] = e
}

func (f *dictFixture) del(i int) {
	k := fmt.Sprintf("k:%d", i)
	f.d.removeEntry(f.hash(k), f.entries[k])
	delete(f.entries, k)
}

// checkAll requires every held key to be found, and the count to match.
func (f *dictFixture) checkAll(t *testing.T) {
	t.Helper()
	require.Equal(t, len(f.entries), f.d.count)
	for k, e := range f.entries {
		require.Same(t, e, f.d.find(f.hash(k), []byte(k)), "%s not found", k)
	}
}

// movedEntries counts the entries already in the table being moved to.
func (d *dict) movedEntries() int {
	n := 0
	if d.rehash != nil {
		for _, e := range d.rehash.buckets {
			for ; e != nil; e = e.next {
				n++
			}
		}
	}
	return n
}

// A large table grows a few buckets per insert instead of all at once (a
// hash-tagged slot of a million keys stopped the node for 100-500 ms on
// each doubling), and every key stays findable throughout.
func TestDictLargeTableGrowsIncrementally(t *testing.T) {
	f := newDictFixture()
	for i := 0; i < incrementalRehashMin; i++ {
		f.add(i)
	}
	require.Nil(t, f.d.rehash, "a full table of incrementalRehashMin buckets has not grown yet")
	f.add(incrementalRehashMin) // passes load factor 1: the resize starts
	require.NotNil(t, f.d.rehash)
	require.Equal(t, 2*incrementalRehashMin, len(f.d.rehash.buckets))
	// The first step moved a few chains (load ≤ 1: a handful of entries),
	// plus the new entry linked in the new table.
	require.LessOrEqual(t, f.d.movedEntries(), 1+4*rehashStepBuckets)
	inserts := 0
	for f.d.rehash != nil {
		f.add(incrementalRehashMin + 1 + inserts)
		inserts++
		if inserts%512 == 0 {
			f.checkAll(t)
		}
		require.Less(t, inserts, 2*incrementalRehashMin, "the move never ends")
	}
	require.Equal(t, 2*incrementalRehashMin, len(f.d.buckets))
	require.LessOrEqual(t, f.d.count, len(f.d.buckets), "the move ended before the new table passed load 1")
	f.checkAll(t)
}

// Deletes move the table too, and a large table shrinks incrementally.
func TestDictLargeTableShrinksIncrementally(t *testing.T) {
	f := newDictFixture()
	const n = 16 * incrementalRehashMin
	for i := 0; i < n; i++ {
		f.add(i)
	}
	for f.d.rehash != nil { // finish the last growth
		f.del(len(f.entries) - 1)
	}
	size := len(f.d.buckets)
	shrinkStarted := false
	for i := len(f.entries) - 1; i >= 0 && !shrinkStarted; i-- {
		f.del(i)
		shrinkStarted = f.d.rehash != nil && len(f.d.rehash.buckets) < size
	}
	require.True(t, shrinkStarted)
	f.checkAll(t)
	for i := len(f.entries) - 1; f.d.rehash != nil; i-- {
		f.del(i)
	}
	require.Less(t, len(f.d.buckets), size)
	f.checkAll(t)
}

// SCAN's guarantee holds while tables move between calls: every key present
// for the whole scan is returned, whether the table grows or shrinks.
func TestDictScanCoversEveryKeyDuringRehash(t *testing.T) {
	for _, grow := range []bool{true, false} {
		t.Run(fmt.Sprintf("grow=%v", grow), func(t *testing.T) {
			f := newDictFixture()
			const stable = incrementalRehashMin
			churn := 8 * incrementalRehashMin
			if grow {
				churn = 0
			}
			for i := 0; i < stable+churn; i++ {
				f.add(i)
			}
			next := stable + churn // the next key the churn adds (grow) / the last it deletes (shrink)
			seen := map[string]bool{}
			var cursor uint64
			sawRehash := false
			for calls := 0; ; calls++ {
				require.Less(t, calls, 1<<20)
				cursor = f.d.scan(cursor, func(e *Entry) { seen[e.Key()] = true })
				sawRehash = sawRehash || f.d.rehash != nil
				for j := 0; j < 3; j++ { // between calls: inserts or deletes move the table
					if grow {
						f.add(next)
						next++
					} else if next > stable {
						next--
						f.del(next)
					}
				}
				if cursor == 0 {
					break
				}
			}
			require.True(t, sawRehash, "the scan ran while the table moved")
			for i := 0; i < stable; i++ {
				require.True(t, seen[fmt.Sprintf("k:%d", i)], "k:%d missed", i)
			}
		})
	}
}

// Eviction samples a bucket index and comes back for the entry later: it is
// found by identity, and unlinked, while the table moves in between (and
// its old buckets were half moved when sampled).
func TestDictSampledEntryFoundDuringRehash(t *testing.T) {
	f := newDictFixture()
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i <= incrementalRehashMin+200; i++ {
		f.add(i)
	}
	require.NotNil(t, f.d.rehash)
	require.Greater(t, f.d.rehash.done, 0)
	var got []dictSample
	var buf [16]dictSample
	for len(got) < 200 {
		got = append(got, buf[:f.d.sample(rnd.Uint64, buf[:])]...)
	}
	// A random entry is one the table holds.
	for range 100 {
		e := f.d.randomEntry(rnd.Uint64)
		require.Same(t, f.entries[e.Key()], e)
	}
	for i := 0; i < 200; i++ { // moves more of the table
		f.add(incrementalRehashMin + 201 + i)
	}
	// Still moving: the table's size is what it was at sampling (once it
	// changes, the sampler drops its candidates: evictCandidate).
	require.NotNil(t, f.d.rehash)
	removed := 0
	for _, s := range got {
		if f.entries[s.e.Key()] == nil {
			continue // sampled twice, removed already
		}
		require.True(t, f.d.holds(s.bucket, s.e), "%s not held at bucket %d", s.e.Key(), s.bucket)
		f.d.removeEntry(s.bucket, s.e)
		delete(f.entries, s.e.Key())
		require.False(t, f.d.holds(s.bucket, s.e))
		removed++
	}
	require.Greater(t, removed, 100)
	f.checkAll(t)
}

// checkInline requires a table of up to dictInlineBuckets buckets to be the
// dict's inline array and any other to leave no pointer inline (a stale one
// would keep a deleted entry alive).
func (d *dict) checkInline(t *testing.T) {
	t.Helper()
	inline := len(d.buckets) > 0 && &d.buckets[0] == &d.inline[0]
	require.Equal(t, len(d.buckets) > 0 && len(d.buckets) <= dictInlineBuckets, inline, "table of %d buckets", len(d.buckets))
	if !inline {
		require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline, "a stale pointer inline")
	}
	if d.rehash != nil {
		require.False(t, inline, "an inline table resized incrementally")
		require.Greater(t, len(d.rehash.buckets), dictInlineBuckets)
	}
}

// A slot table of up to dictInlineBuckets buckets lives in the dict; it
// moves out as it grows and back as it shrinks, keeping every entry, and
// leaves no stale pointer inline (it would keep a deleted entry alive).
func TestDictInlineTableMovesOutAndBack(t *testing.T) {
	seed := New(1, nil, nil).seed
	var d dict
	var entries []*Entry
	check := func() {
		t.Helper()
		d.checkInline(t)
		for _, e := range entries {
			k := []byte(e.Key())
			require.Same(t, e, d.find(hashKey(seed, k), k))
		}
	}
	for i := range 40 {
		e := allocEntry([]byte("key:"+strconv.Itoa(i)), cacheValue)
		k := []byte(e.Key())
		d.insert(hashKey(seed, k), e)
		entries = append(entries, e)
		check()
	}
	for len(entries) > 0 {
		e := entries[len(entries)-1]
		entries = entries[:len(entries)-1]
		k := []byte(e.Key())
		d.removeEntry(hashKey(seed, k), e)
		check()
	}
	require.Nil(t, d.buckets)
	require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline)
	for i := range 5 {
		k := []byte("key:" + strconv.Itoa(i))
		d.insert(hashKey(seed, k), allocEntry(k, cacheValue))
	}
	d.clear()
	require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline, "clear leaves entries reachable")
}

// A table grows from inline through heap tables resized at once to ones
// resized incrementally, then shrinks back to inline: every key stays
// findable, only heap tables are ever resized incrementally, and nothing
// stale stays inline.
func TestDictInlineAndIncrementalResizesTogether(t *testing.T) {
	f := newDictFixture()
	const n = 3 * incrementalRehashMin
	sawRehash := false
	for i := range n {
		f.add(i)
		sawRehash = sawRehash || f.d.rehash != nil
		f.d.checkInline(t)
		if i < 64 || i%997 == 0 {
			f.checkAll(t)
		}
	}
	require.True(t, sawRehash, "the table grew incrementally")
	f.checkAll(t)
	sawInline := false
	for i := n - 1; i >= 0; i-- {
		f.del(i)
		f.d.checkInline(t)
		sawInline = sawInline || (len(f.d.buckets) > 0 && &f.d.buckets[0] == &f.d.inline[0])
		if i < 64 || i%997 == 0 {
			f.checkAll(t)
		}
	}
	require.True(t, sawInline, "the table shrank back inline")
	require.Nil(t, f.d.buckets)
	require.Nil(t, f.d.rehash)
	require.Equal(t, [dictInlineBuckets]*Entry{}, f.d.inline)
}

// While a table is resized incrementally, sampling reaches the entries
// already moved to the new table as well as those still in the old one.
func TestDictSampleCoversBothTablesDuringRehash(t *testing.T) {
	f := newDictFixture()
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := 0; i <= incrementalRehashMin+200; i++ { // about a fifth of the old buckets moved
		f.add(i)
	}
	require.NotNil(t, f.d.rehash)
	inNew := map[*Entry]bool{}
	for _, e := range f.d.rehash.buckets {
		for ; e != nil; e = e.next {
			inNew[e] = true
		}
	}
	require.NotEmpty(t, inNew)
	require.Less(t, len(inNew), f.d.count)
	fromNew, fromOld := 0, 0
	var buf [16]dictSample
	for range 500 {
		k := f.d.sample(rnd.Uint64, buf[:])
		require.Equal(t, len(buf), k)
		for _, s := range buf[:k] {
			require.Same(t, f.entries[s.e.Key()], s.e)
			require.True(t, f.d.holds(s.bucket, s.e))
			if inNew[s.e] {
				fromNew++
			} else {
				fromOld++
			}
		}
	}
	require.Positive(t, fromNew, "no sample from the new table")
	require.Positive(t, fromOld, "no sample from the old table")
}
