package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

func withLock(db *DB, key string, fn func()) {
	s := slots.KeySlot([]byte(key))
	db.Lock(s)
	defer db.Unlock(s)
	fn()
}

func TestSetFindDelete(t *testing.T) {
	ks := New(16, nil, nil)
	db := ks.DB(0)
	for i := 0; i < 10000; i++ {
		k := fmt.Sprintf("key:%d", i)
		withLock(db, k, func() { db.SetString([]byte(k), []byte(k+"-v"), false) })
	}
	require.EqualValues(t, 10000, db.Size())
	for i := 0; i < 10000; i++ {
		k := fmt.Sprintf("key:%d", i)
		withLock(db, k, func() {
			e := db.Find([]byte(k))
			require.NotNil(t, e)
			require.Equal(t, k+"-v", string(e.Bytes()))
			require.Equal(t, TypeString, e.Type())
		})
	}
	for i := 0; i < 10000; i += 2 {
		k := fmt.Sprintf("key:%d", i)
		withLock(db, k, func() { require.True(t, db.Delete([]byte(k))) })
	}
	require.EqualValues(t, 5000, db.Size())
	withLock(db, "key:0", func() { require.Nil(t, db.Find([]byte("key:0"))) })
	require.EqualValues(t, 5000, db.Flush())
	require.EqualValues(t, 0, db.Size())
}

func TestEncodings(t *testing.T) {
	ks := New(1, nil, nil)
	db := ks.DB(0)
	cases := map[string]string{"123": "int", "-5": "int", "0123": "embstr", "abc": "embstr",
		string(make([]byte, 45)): "raw", "9223372036854775808": "embstr"}
	for v, enc := range cases {
		withLock(db, "k", func() {
			e := db.SetString([]byte("k"), []byte(v), false)
			require.Equal(t, enc, e.Encoding(), "value %q", v)
		})
	}
	withLock(db, "k", func() {
		e := db.SetString([]byte("k"), []byte("12"), false)
		p := e.MutableBytes()
		*p = append(*p, '3')
		require.Equal(t, "raw", e.Encoding())
		require.Equal(t, "123", string(db.Find([]byte("k")).Bytes()))
	})
}

func TestPassiveAndActiveExpiry(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ks := New(1, clk, nil)
	db := ks.DB(0)
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("k%d", i)
		withLock(db, k, func() {
			e := db.SetString([]byte(k), []byte("v"), false)
			if i%2 == 0 {
				db.SetExpire([]byte(k), e, 1_000_100)
			}
		})
	}
	dbs, _, _ := ks.Stats()
	require.Equal(t, []DBStats{{ID: 0, Keys: 1000, Expires: 500}}, dbs)
	clk.Set(time.UnixMilli(1_000_100))
	withLock(db, "k0", func() { require.NotNil(t, db.Find([]byte("k0"))) }) // now == at: still alive
	clk.Set(time.UnixMilli(1_000_101))
	withLock(db, "k0", func() { require.Nil(t, db.Find([]byte("k0"))) })
	require.EqualValues(t, 999, db.Size())
	for i := 0; i < 100 && db.Size() > 500; i++ {
		ks.ActiveExpireCycle(50 * time.Millisecond)
	}
	require.EqualValues(t, 500, db.Size())
	require.EqualValues(t, 500, ks.ExpiredKeys())
}

func TestScanCoversEveryKeyAcrossResizes(t *testing.T) {
	ks := New(1, nil, nil)
	db := ks.DB(0)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			k := fmt.Sprintf("key:%d", i)
			withLock(db, k, func() { db.SetString([]byte(k), nil, false) })
		}
	}
	add(0, 2000)
	seen := map[string]bool{}
	var cursor uint64
	calls := 0
	for {
		cursor = db.Scan(cursor, 10, nil, func(e *Entry) { seen[e.Key()] = true })
		calls++
		if calls == 50 {
			add(2000, 20000) // grow every table mid-scan
		}
		if cursor == 0 || calls > 100000 {
			break
		}
	}
	for i := 0; i < 2000; i++ {
		require.True(t, seen[fmt.Sprintf("key:%d", i)], "key:%d missed", i)
	}
}

// SCAN deletes the logically expired keys it meets that its pattern
// accepts, as Redis's SCAN does (unit/expire "SCAN: Lazy-expire ..."), and
// leaves the others to the next lookup or the active cycle.
func TestScanExpiresTheKeysItMeets(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ks := New(1, clk, nil)
	db := ks.DB(0)
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%d", i)
		withLock(db, k, func() {
			e := db.SetString([]byte(k), []byte("v"), false)
			db.SetExpire([]byte(k), e, 1_000_100)
		})
	}
	clk.Set(time.UnixMilli(1_000_101))
	onlyK1 := func(key string) bool { return strings.HasPrefix(key, "k1") } // k1, k10..k19, k100..k199
	var cursor uint64
	seen := 0
	for calls := 0; calls < 100000; calls++ {
		cursor = db.Scan(cursor, 10, onlyK1, func(e *Entry) { seen++ })
		if cursor == 0 {
			break
		}
	}
	require.Zero(t, seen, "an expired key was returned")
	require.EqualValues(t, 200-111, db.Size(), "the 111 expired keys the pattern accepts are deleted")
	require.EqualValues(t, 111, ks.ExpiredKeys())
}

func TestRandomKeyAndSwap(t *testing.T) {
	ks := New(2, nil, nil)
	db := ks.DB(0)
	_, ok := db.RandomKey()
	require.False(t, ok)
	withLock(db, "a", func() { db.SetString([]byte("a"), []byte("1"), false) })
	k, ok := db.RandomKey()
	require.True(t, ok)
	require.Equal(t, "a", k)
	ks.SwapDB(0, 1)
	require.EqualValues(t, 0, ks.DB(0).Size())
	require.EqualValues(t, 1, ks.DB(1).Size())
	require.Equal(t, 1, ks.DB(1).ID())
}

// The active expiry cycle skips a database with no keys with a TTL in one
// step and still reaches the expired keys of the databases after it, even
// a cycle out of time at once (it checks the clock in the slots it
// samples).
func TestActiveExpireSkipsDatabasesWithoutTTLs(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ks := New(3, clk, nil)
	persistent, volatile := ks.DB(0), ks.DB(2) // DB 1 is never used
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%d", i)
		withLock(persistent, k, func() { persistent.SetString([]byte(k), []byte("v"), false) })
		withLock(volatile, k, func() {
			e := volatile.SetString([]byte(k), []byte("v"), false)
			volatile.SetExpire([]byte(k), e, 1_000_100)
		})
	}
	clk.Set(time.UnixMilli(1_000_200))
	ks.ActiveExpireCycle(0) // stops early, somewhere in DB 2
	require.Less(t, volatile.Size(), int64(300), "DB 0 and DB 1 are passed")
	for i := 0; i < 10 && volatile.Size() > 0; i++ {
		ks.ActiveExpireCycle(time.Second)
	}
	require.Zero(t, volatile.Size())
	require.EqualValues(t, 300, persistent.Size())
	require.EqualValues(t, 300, ks.ExpiredKeys())
}
