package store

// What replication and saving need from the keyspace: visiting a slot
// whose lock the caller already holds, flushing under held locks, the
// databases that exist, and the replica mode in which keys expire only by
// the master's DEL.

// ScanSlotLocked visits every entry of one slot, expired ones included;
// the caller holds the slot's lock.
func (db *DB) ScanSlotLocked(slot uint16, fn func(e *Entry)) {
	s := &db.slots[slot]
	if s.dict.count == 0 {
		return
	}
	var cur uint64
	for {
		cur = s.dict.scan(cur, fn)
		if cur == 0 {
			return
		}
	}
}

// FlushSlotLocked deletes every key of one slot whose lock the caller holds.
func (db *DB) FlushSlotLocked(slot uint16) int64 {
	s := &db.slots[slot]
	if s.dict.count == 0 {
		return 0
	}
	return db.clearSlot(s)
}

// LockAll locks every slot of the database, in ascending order.
func (db *DB) LockAll() {
	for i := range db.slots {
		db.lockSlot(&db.slots[i])
	}
}

// UnlockAll unlocks what LockAll locked.
func (db *DB) UnlockAll() {
	for i := len(db.slots) - 1; i >= 0; i-- {
		db.slots[i].mu.Unlock()
	}
}

// FlushLocked empties the database; the caller holds every slot lock
// (LockAll).
func (db *DB) FlushLocked() int64 {
	var n int64
	for i := range db.slots {
		n += db.FlushSlotLocked(uint16(i))
	}
	return n
}

// ExistingDB returns database i, or nil if nothing ever used it.
func (ks *Keyspace) ExistingDB(i int) *DB { return ks.existingDB(i) }

// SetReplicaMode switches the keyspace to a replica's expiry rules (on) or
// back to a master's: on a replica, lookups report logically expired keys
// missing but never delete them and active expiry does nothing; the
// master's DEL removes them. The replication link's own commands see such
// keys as live (SeeExpired), as Redis's master client does. A change of
// rules forgets the keys a writable replica expires itself
// (TrackReplicaExpiry).
func (ks *Keyspace) SetReplicaMode(on bool) {
	if ks.replicaMode.Swap(on) != on {
		ks.forgetReplicaExpiry()
	}
}

// ReplicaMode reports the replica expiry rules are in force.
func (ks *Keyspace) ReplicaMode() bool { return ks.replicaMode.Load() }

// SeeExpired makes lookups in the given slots (whose locks the caller
// holds) treat logically expired keys as live until it is called again with
// false: the master link's commands on a replica must act on the keys the
// master still has.
func (db *DB) SeeExpired(slots []uint16, on bool) {
	for _, x := range slots {
		db.slots[x].seeExpired = on
	}
}

// expiredFor reports whether an entry whose deadline has passed counts as
// expired in slot s (not when the master link is looking on a replica).
func (db *DB) keepExpired(s *Slot) bool {
	return s.seeExpired && db.ks.replicaMode.Load()
}
