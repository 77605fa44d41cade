package store

import (
	"sync"
	"time"
)

// Keys a writable replica's own clients give a TTL (Redis's
// slaveKeysWithExpire). On a replica, logically expired keys are kept
// until the master's DEL; but the master never had these keys, so the
// replica expires them itself: each cron tick samples the remembered keys
// and deletes the expired ones (counted in expired_keys, announced as any
// expiry through Events). Switching between master and replica rules
// forgets them all: a master expires every key itself.

type replicaKey struct {
	db  int
	key string
}

type replicaExpiring struct {
	mu   sync.Mutex
	keys map[replicaKey]struct{}
}

// replicaExpireMaxPerTick bounds one tick's work, as Redis stops after 64
// keys when a millisecond has passed.
const replicaExpireMaxPerTick = 64

// TrackReplicaExpiry remembers key of db if it has a TTL; the caller holds
// its slot lock and has just written it on a writable replica for a client
// other than the master.
func (db *DB) TrackReplicaExpiry(key []byte) {
	if !db.ks.replicaMode.Load() {
		return
	}
	s, h := db.slotOf(key)
	e := s.dict.find(h, key)
	if e == nil || e.expire == 0 {
		return
	}
	r := &db.ks.replicaExpiring
	r.mu.Lock()
	if r.keys == nil {
		r.keys = make(map[replicaKey]struct{})
	}
	r.keys[replicaKey{db: db.ID(), key: string(key)}] = struct{}{}
	r.mu.Unlock()
}

// ReplicaKeysWithExpire is how many keys TrackReplicaExpiry remembers.
func (ks *Keyspace) ReplicaKeysWithExpire() int {
	ks.replicaExpiring.mu.Lock()
	defer ks.replicaExpiring.mu.Unlock()
	return len(ks.replicaExpiring.keys)
}

// ExpireReplicaKeys is a replica's expiry cycle (Redis's expireSlaveKeys):
// it visits up to a tick's worth of remembered keys, in random order,
// deletes those whose TTL has passed and forgets those that are gone or
// lost their TTL. It returns the number deleted.
func (ks *Keyspace) ExpireReplicaKeys(budget time.Duration) int {
	if !ks.replicaMode.Load() {
		return 0
	}
	r := &ks.replicaExpiring
	r.mu.Lock()
	batch := make([]replicaKey, 0, replicaExpireMaxPerTick)
	for k := range r.keys { // Go's map order is random: Redis's dictGetRandomKey
		batch = append(batch, k)
		if len(batch) == replicaExpireMaxPerTick {
			break
		}
	}
	r.mu.Unlock()
	deadline := time.Now().Add(budget)
	deleted := 0
	for i, k := range batch {
		if i > 0 && i%16 == 0 && time.Now().After(deadline) {
			break
		}
		db := ks.existingDB(k.db)
		keep, expired := false, false
		if db != nil {
			keep, expired = db.expireTracked([]byte(k.key))
		}
		if expired {
			deleted++
		}
		if !keep {
			r.mu.Lock()
			delete(r.keys, k)
			r.mu.Unlock()
		}
	}
	return deleted
}

// expireTracked deletes key if its TTL has passed; keep reports it still
// exists with a TTL yet to pass.
func (db *DB) expireTracked(key []byte) (keep, expired bool) {
	s, h := db.slotOf(key)
	db.lockSlot(s)
	defer s.mu.Unlock()
	e := s.dict.find(h, key)
	if e == nil || e.expire == 0 {
		return false, false
	}
	if db.ks.Now() > e.expire {
		db.expireEntry(s, h, e)
		return false, true
	}
	return true, false
}

// forgetReplicaExpiry drops every remembered key.
func (ks *Keyspace) forgetReplicaExpiry() {
	ks.replicaExpiring.mu.Lock()
	ks.replicaExpiring.keys = nil
	ks.replicaExpiring.mu.Unlock()
}
