package store

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordingSink copies every captured entry, as an RDB sink would encode it.
type recordingSink struct {
	mu       sync.Mutex
	got      map[string]string // "db/key" -> value
	captures map[[2]int]int    // (db, slot) -> times captured
}

func (r *recordingSink) CaptureSlot(dbID int, db *DB, slot uint16, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.captures[[2]int{dbID, int(slot)}]++
	db.ScanSlotLocked(slot, func(e *Entry) {
		r.got[fmt.Sprintf("%d/%s", dbID, e.Key())] = string(e.Bytes())
	})
}

func contents(ks *Keyspace) map[string]string {
	m := map[string]string{}
	for i := 0; i < ks.NumDBs(); i++ {
		db := ks.existingDB(i)
		if db == nil {
			continue
		}
		for s := 0; s < NumSlots; s++ {
			db.ScanSlot(uint16(s), func(e *Entry) bool {
				m[fmt.Sprintf("%d/%s", i, e.Key())] = string(e.Bytes())
				return true
			})
		}
	}
	return m
}

// incr adds one to key's integer value under its slot lock, as INCR does:
// a write whose replay is not idempotent, so a snapshot that caught some
// of them would be off by their count.
func incr(db *DB, key string) {
	withLock(db, key, func() {
		n := int64(0)
		if e := db.Find([]byte(key)); e != nil {
			n, _ = strconv.ParseInt(string(e.Bytes()), 10, 64)
		}
		db.SetString([]byte(key), []byte(strconv.FormatInt(n+1, 10)), true)
	})
}

// TestSnapshotIsOneInstant: writers keep incrementing, deleting and
// flushing while the snapshot walks; what the sink received is exactly the
// dataset at BeginSnapshot, and each non-empty slot was captured once.
func TestSnapshotIsOneInstant(t *testing.T) {
	ks := New(4, nil, nil)
	for d := 0; d < 3; d++ {
		db := ks.DB(d)
		for i := 0; i < 3000; i++ {
			k := fmt.Sprintf("k%d", i)
			withLock(db, k, func() { db.SetString([]byte(k), []byte(strconv.Itoa(i)), false) })
		}
	}
	atS := contents(ks)
	sink := &recordingSink{got: map[string]string{}, captures: map[[2]int]int{}}
	sn, err := ks.BeginSnapshot(sink)
	require.NoError(t, err)
	_, err = ks.BeginSnapshot(sink)
	require.ErrorIs(t, err, ErrSnapshotRunning)

	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := ks.DB(w % 3)
			for i := 0; i < 3000; i++ {
				k := fmt.Sprintf("k%d", (i*7+w)%3000)
				incr(db, k)
				if i%500 == 0 {
					withLock(db, k, func() { db.Delete([]byte(k)) })
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ks.DB(2).Flush()          // every slot of db 2, captured first
		ks.SwapDB(0, 3)           // db 3 did not exist at S
		ks.DB(1).Lock(0)          // a lock that changes nothing
		ks.DB(1).Unlock(0)        //
		incr(ks.DB(3), "new-key") // lands in the old db 0, now numbered 3
	}()
	walked := 0
	require.True(t, sn.Walk(func(int64) bool { walked++; return true }))
	wg.Wait()
	sn.End()

	require.Equal(t, atS, sink.got)
	for k, n := range sink.captures {
		require.Equal(t, 1, n, "slot %v captured %d times", k, n)
	}
	require.LessOrEqual(t, walked, len(sink.captures))

	// After End nothing is captured, and a new snapshot starts afresh.
	before := len(sink.captures)
	incr(ks.DB(1), "k1")
	require.Len(t, sink.captures, before)
	again := &recordingSink{got: map[string]string{}, captures: map[[2]int]int{}}
	sn2, err := ks.BeginSnapshot(again)
	require.NoError(t, err)
	require.True(t, sn2.Walk(nil))
	sn2.End()
	require.Equal(t, contents(ks), again.got)
}

// TestSnapshotWalkStops: between returning false ends the walk.
func TestSnapshotWalkStops(t *testing.T) {
	ks := New(1, nil, nil)
	db := ks.DB(0)
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("k%d", i)
		withLock(db, k, func() { db.SetString([]byte(k), []byte("v"), false) })
	}
	sink := &recordingSink{got: map[string]string{}, captures: map[[2]int]int{}}
	sn, err := ks.BeginSnapshot(sink)
	require.NoError(t, err)
	calls := 0
	require.False(t, sn.Walk(func(int64) bool { calls++; return calls < 3 }))
	sn.End()
	require.Equal(t, 3, calls)
	require.Len(t, sink.captures, 3)
}
