package store

import (
	"errors"
	"unsafe"
)

// A Snapshot is the dataset as it was at one instant S, read without
// stopping the server and without copying it up front (DESIGN §5, the
// fork-less snapshot). Between BeginSnapshot and End, the first time
// anything locks a slot of one of the databases that existed at S — a
// command, expiry, eviction, or the snapshot's own walk — the sink
// captures that slot's entries before the lock holder can change them.
// A slot's content when first locked after S is its content at S, because
// every change takes the slot's lock; so the captures together are the
// dataset at S, even though they are taken one slot at a time and in any
// order. Writers pay only for the slots they touch first, and only while a
// snapshot runs (one atomic load per lock otherwise).
//
// Concurrency contract: BeginSnapshot must be called while nothing changes
// the dataset (the server closes its execution gate around it), or S is
// not one instant. Sink.CaptureSlot runs on whichever goroutine locked the
// slot, with that slot (and maybe others) locked: it must not lock slots,
// block, or call back into the keyspace beyond reading the slot's entries.
// Walk and End are called by the snapshot's owner, without slot locks.
type Snapshot struct {
	ks   *Keyspace
	gen  uint32
	sink SnapshotSink
	// dbs are the databases at S, by their number at S (nil: never used,
	// so empty at S). A database swapped in later keeps its number at S:
	// SWAPDB locks every slot of both databases, which captures them first.
	dbs []*DB
}

// SnapshotSink receives the slots of a snapshot.
type SnapshotSink interface {
	// CaptureSlot is called exactly once for every non-empty slot of the
	// snapshot's databases, with the slot locked; dbID is the database's
	// number at S. Read its entries with DB.ScanSlotLocked. byWalk says
	// the snapshot's own Walk locked the slot; otherwise a command,
	// expiry or eviction did, and waits for the capture to change it.
	CaptureSlot(dbID int, db *DB, slot uint16, byWalk bool)
}

// ErrSnapshotRunning is BeginSnapshot while another snapshot is running.
var ErrSnapshotRunning = errors.New("store: a snapshot is already running")

// BeginSnapshot starts a snapshot of the dataset as it is now. Only one
// snapshot runs at a time.
func (ks *Keyspace) BeginSnapshot(sink SnapshotSink) (*Snapshot, error) {
	ks.snapMu.Lock()
	defer ks.snapMu.Unlock()
	if ks.snap.Load() != nil {
		return nil, ErrSnapshotRunning
	}
	ks.snapGen++
	if ks.snapGen == 0 { // slots start at generation 0: never "captured"
		ks.snapGen = 1
	}
	sn := &Snapshot{ks: ks, gen: ks.snapGen, sink: sink, dbs: make([]*DB, len(ks.dbs))}
	for i := range ks.dbs {
		sn.dbs[i] = ks.existingDB(i)
	}
	ks.snap.Store(sn)
	return sn, nil
}

// Walk captures every slot no one has locked since S, one at a time, in
// database and slot order. between (nil: nothing) runs after each slot
// that held keys, without any lock held, with how many keys it held when
// locked; it returns false to stop the walk early (the snapshot is then
// incomplete: End it and discard what the sink received).
func (sn *Snapshot) Walk(between func(keys int64) bool) bool {
	for _, db := range sn.dbs {
		if db == nil {
			continue
		}
		for i := range db.slots {
			s := &db.slots[i]
			// An empty slot needs no lock: if it held keys at S, whatever
			// emptied it locked it, and so captured it.
			n := s.keys.Load()
			if n == 0 {
				continue
			}
			s.mu.Lock()
			if sn := db.ks.snap.Load(); sn != nil && s.snapGen != sn.gen {
				sn.capture(db, s, true)
			}
			s.mu.Unlock()
			if between != nil && !between(n) {
				return false
			}
		}
	}
	return true
}

// End stops the snapshot: slots locked from now on are not captured.
func (sn *Snapshot) End() {
	sn.ks.snap.CompareAndSwap(sn, nil)
}

// lockSlot locks s and, while a snapshot runs and s was not captured yet,
// captures it before returning: every slot lock in the keyspace goes
// through here.
func (db *DB) lockSlot(s *Slot) {
	s.mu.Lock()
	if sn := db.ks.snap.Load(); sn != nil && s.snapGen != sn.gen {
		sn.capture(db, s, false)
	}
}

// tryLockSlot is lockSlot without waiting: false when another holds s.
func (db *DB) tryLockSlot(s *Slot) bool {
	if !s.mu.TryLock() {
		return false
	}
	if sn := db.ks.snap.Load(); sn != nil && s.snapGen != sn.gen {
		sn.capture(db, s, false)
	}
	return true
}

// capture hands s to the sink if its database existed at S; the caller
// holds s's lock. byWalk: the caller is Walk.
func (sn *Snapshot) capture(db *DB, s *Slot, byWalk bool) {
	s.snapGen = sn.gen
	if s.dict.count == 0 {
		return
	}
	for id, d := range sn.dbs {
		if d == db {
			slot := uint16((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&db.slots[0]))) / unsafe.Sizeof(Slot{}))
			sn.sink.CaptureSlot(id, db, slot, byWalk)
			return
		}
	}
}
