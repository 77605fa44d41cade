package store

import (
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// lockKeys locks the slots of keys in db (ascending, deduplicated) and
// returns the unlock function.
func lockKeys(db *DB, keys ...string) func() {
	var ss []uint16
	for _, k := range keys {
		s := slots.KeySlot([]byte(k))
		dup := false
		for _, x := range ss {
			dup = dup || x == s
		}
		if !dup {
			ss = append(ss, s)
		}
	}
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j] < ss[j-1]; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
	db.LockSlots(ss)
	return func() { db.UnlockSlots(ss) }
}

// An entry keeps a short key and value inside its own allocation, the value
// found after the key; renaming it gives the key an allocation of its own.
// The value must stay readable and writable in place, and the charges must
// follow the new key's length exactly as a fresh SET would.
func TestRenameInlineEntryKeepsItsValue(t *testing.T) {
	ks := New(1, nil, nil)
	db := ks.DB(0)
	const src, dst = "k", "a-much-longer-destination-key-name"
	unlock := lockKeys(db, src, dst)
	defer unlock()

	e := db.SetString([]byte(src), []byte("hello"), false)
	require.True(t, e.kptr == nil && e.val == nil, "a short key and value start inline")
	require.True(t, db.Rename([]byte(src), []byte(dst)))
	got := db.Find([]byte(dst))
	require.Same(t, e, got, "RENAME moves the entry")
	require.Equal(t, dst, got.Key())
	require.Equal(t, "hello", string(got.Bytes()))
	require.Equal(t, compactStringCharge(len(dst), 5)+SlotCharge, db.Bytes())

	// A same-length overwrite writes in place, where the value still is.
	db.SetString([]byte(dst), []byte("world"), false)
	require.Equal(t, "world", string(db.Find([]byte(dst)).Bytes()))
	require.Equal(t, dst, db.Find([]byte(dst)).Key())
	// And back to a short key: still the same value, same charges as a SET.
	require.True(t, db.Rename([]byte(dst), []byte(src)))
	require.Equal(t, "world", string(db.Find([]byte(src)).Bytes()))
	require.Equal(t, compactStringCharge(len(src), 5)+SlotCharge, db.Bytes())
}

func TestRenameKeepsValueAndTTL(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ks := New(2, clk, nil)
	db := ks.DB(0)
	unlock := lockKeys(db, "src", "dst", "other")
	defer unlock()

	require.False(t, db.Rename([]byte("missing"), []byte("dst")))

	e := db.SetString([]byte("src"), []byte("hello"), false)
	db.SetExpire([]byte("src"), e, 1_005_000)
	d := db.SetString([]byte("dst"), []byte("old"), false)
	db.SetExpire([]byte("dst"), d, 9_999_999)

	require.True(t, db.Rename([]byte("src"), []byte("dst")))
	require.Nil(t, db.Find([]byte("src")))
	got := db.Find([]byte("dst"))
	require.NotNil(t, got)
	require.Equal(t, "hello", string(got.Bytes()))
	require.Equal(t, "dst", got.Key())
	require.EqualValues(t, 1_005_000, got.ExpireAt(), "dst's TTL is replaced by src's")
	require.EqualValues(t, 1, db.Size())

	// The volatile bookkeeping followed the entry to its new slot.
	dbs, _, _ := ks.Stats()
	require.Equal(t, []DBStats{{ID: 0, Keys: 1, Expires: 1}}, dbs)

	// A key without TTL renamed over a volatile key leaves no TTL.
	db.SetString([]byte("other"), []byte("x"), false)
	require.True(t, db.Rename([]byte("other"), []byte("dst")))
	require.EqualValues(t, 0, db.Find([]byte("dst")).ExpireAt())
	dbs, _, _ = ks.Stats()
	require.Equal(t, []DBStats{{ID: 0, Keys: 1, Expires: 0}}, dbs)

	// Same key: reports existence, changes nothing.
	require.True(t, db.Rename([]byte("dst"), []byte("dst")))
	require.Equal(t, "x", string(db.Find([]byte("dst")).Bytes()))

	// An expired source is missing (and deleted on the way).
	e = db.SetString([]byte("src"), []byte("v"), false)
	db.SetExpire([]byte("src"), e, 1_000_001)
	clk.Set(time.UnixMilli(1_000_002))
	require.False(t, db.Rename([]byte("src"), []byte("other")))
	require.EqualValues(t, 1, db.Size())
}

func TestMoveTo(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000))
	ks := New(3, clk, nil)
	a, b := ks.DB(0), ks.DB(1)
	slot := slots.KeySlot([]byte("k"))
	lockPair := func() func() {
		first, second := a, b
		if LockOrderLess(b, a) {
			first, second = b, a
		}
		first.Lock(slot)
		second.Lock(slot)
		return func() { second.Unlock(slot); first.Unlock(slot) }
	}
	unlock := lockPair()
	defer unlock()

	require.False(t, a.MoveTo(b, []byte("k")), "missing key")
	e := a.SetString([]byte("k"), []byte("v1"), false)
	a.SetExpire([]byte("k"), e, 5_000)
	require.False(t, a.MoveTo(a, []byte("k")), "same database")
	b.SetString([]byte("k"), []byte("there"), false)
	require.False(t, a.MoveTo(b, []byte("k")), "present in the target")
	require.True(t, b.Delete([]byte("k")))

	require.True(t, a.MoveTo(b, []byte("k")))
	require.Nil(t, a.Find([]byte("k")))
	got := b.Find([]byte("k"))
	require.NotNil(t, got)
	require.Equal(t, "v1", string(got.Bytes()))
	require.EqualValues(t, 5_000, got.ExpireAt())
	require.EqualValues(t, 0, a.Size())
	require.EqualValues(t, 1, b.Size())
	dbs, _, _ := ks.Stats()
	require.Equal(t, []DBStats{{ID: 1, Keys: 1, Expires: 1}}, dbs)

	// A logically expired key in the target does not block the move.
	a.SetString([]byte("k"), []byte("v2"), false)
	clk.Set(time.UnixMilli(6_000))
	require.True(t, a.MoveTo(b, []byte("k")))
	require.Equal(t, "v2", string(b.Find([]byte("k")).Bytes()))
}

func TestCopyTo(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000))
	ks := New(2, clk, nil)
	db := ks.DB(0)
	unlock := lockKeys(db, "a", "b", "c")
	defer unlock()

	ok := db.CopyTo(db, []byte("a"), []byte("b"), false)
	require.False(t, ok, "missing source")

	e := db.SetString([]byte("a"), []byte("hello"), false)
	db.SetExpire([]byte("a"), e, 50_000)
	ok = db.CopyTo(db, []byte("a"), []byte("b"), false)
	require.True(t, ok)
	b := db.Find([]byte("b"))
	require.Equal(t, "hello", string(b.Bytes()))
	require.EqualValues(t, 50_000, b.ExpireAt())

	// Deep copy: growing the source in place leaves the copy alone.
	p := db.Find([]byte("a")).MutableBytes()
	*p = append(*p, " world"...)
	require.Equal(t, "hello", string(db.Find([]byte("b")).Bytes()))

	// Existing destination: only with replace; the raw encoding is kept.
	ok = db.CopyTo(db, []byte("a"), []byte("b"), false)
	require.False(t, ok)
	ok = db.CopyTo(db, []byte("a"), []byte("b"), true)
	require.True(t, ok)
	require.Equal(t, "hello world", string(db.Find([]byte("b")).Bytes()))
	require.Equal(t, "raw", db.Find([]byte("b")).Encoding())

	// Across databases.
	other := ks.DB(1)
	// (single goroutine: the lock order between the databases does not
	// matter here.)
	s := slots.KeySlot([]byte("b"))
	other.Lock(s)
	defer other.Unlock(s)
	ok = db.CopyTo(other, []byte("a"), []byte("b"), false)
	require.True(t, ok)
	require.Equal(t, "hello world", string(other.Find([]byte("b")).Bytes()))
	require.EqualValues(t, 50_000, other.Find([]byte("b")).ExpireAt())
}

func TestIdleMillis(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(100_000 * 1000))
	ks := New(1, clk, nil)
	db := ks.DB(0)
	unlock := lockKeys(db, "k")
	defer unlock()
	e := db.SetString([]byte("k"), []byte("v"), false)
	require.EqualValues(t, 0, ks.IdleMillis(e))
	clk.Advance(7_500 * time.Millisecond)
	ks.Tick()
	require.EqualValues(t, 7_000, ks.IdleMillis(e))

	ks.SetIdleMillis(e, 1000*1000)
	require.EqualValues(t, 1000*1000, ks.IdleMillis(e))

	// Wrap-around of the 24-bit clock: stamped just before the wrap, read
	// just after it.
	clk.Set(time.UnixMilli((lruMax - 10) * 1000))
	ks.Tick()
	e.setLRU(ks.lruClock.Load())
	clk.Set(time.UnixMilli((lruMax + 1 + 5) * 1000))
	ks.Tick()
	require.EqualValues(t, 15_000, ks.IdleMillis(e))

	// Back-dating across the wrap is undone by the estimate.
	ks.SetIdleMillis(e, 20_000)
	require.EqualValues(t, 20_000, ks.IdleMillis(e))
}

// TestMoveBothDirectionsNoDeadlock moves keys between two databases in both
// directions at once, each goroutine locking in LockOrderLess order, while
// another goroutine swaps the databases' numbers.
func TestMoveBothDirectionsNoDeadlock(t *testing.T) {
	ks := New(2, nil, nil)
	keys := []string{"a", "b", "c", "d"}
	for i, k := range keys {
		db := ks.DB(i % 2)
		s := slots.KeySlot([]byte(k))
		db.Lock(s)
		db.SetString([]byte(k), []byte(k), false)
		db.Unlock(s)
	}
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				src, dst := ks.DB((g+i)%2), ks.DB((g+i+1)%2)
				if src == dst {
					continue // a SWAPDB came between the two look-ups
				}
				key := []byte(keys[(g*7+i)%len(keys)])
				s := slots.KeySlot(key)
				first, second := src, dst
				if LockOrderLess(dst, src) {
					first, second = dst, src
				}
				first.Lock(s)
				second.Lock(s)
				src.MoveTo(dst, key)
				second.Unlock(s)
				first.Unlock(s)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 500 && time.Now().Before(deadline); i++ {
			ks.SwapDB(0, 1)
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock: concurrent MOVEs did not finish")
	}
	require.EqualValues(t, len(keys), ks.DB(0).Size()+ks.DB(1).Size(), "no key lost or duplicated")
	for _, k := range keys {
		n := 0
		for i := 0; i < 2; i++ {
			db := ks.DB(i)
			s := slots.KeySlot([]byte(k))
			db.Lock(s)
			if db.Exists([]byte(k)) {
				n++
			}
			db.Unlock(s)
		}
		require.Equal(t, 1, n, "key %s", k)
	}
}
