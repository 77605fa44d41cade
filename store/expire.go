package store

import (
	"time"
)

// expireCursor remembers where the last active expiry cycle stopped, so that
// successive cycles cover every slot of every database in turn.
type expireCursor struct {
	db   int
	slot int
}

const (
	expireSamplesPerLoop = 20 // keys sampled per slot per round, as Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP
	// Redis repeats a database while more than 25% of its sample had
	// expired; we apply the same threshold per slot.
	expireRepeatPct = 25
)

// ActiveExpireCycle deletes expired keys by sampling, like Redis's slow
// expire cycle: for each slot that has keys with a TTL, sample up to 20 of
// them, delete the expired ones, and sample the same slot again while more
// than 25% of the sample had expired. It stops after budget and resumes
// where it stopped on the next call. It returns the number of keys deleted.
// Must not be called concurrently with itself.
func (ks *Keyspace) ActiveExpireCycle(budget time.Duration) int {
	if ks.replicaMode.Load() {
		return 0 // a replica's keys expire by its master's DEL
	}
	deadline := time.Now().Add(budget)
	deleted := 0
	sampled, expiredSeen := 0, 0
	cur := &ks.expireCursor
	// Visit at most every slot of every database once per call.
	total := len(ks.dbs) * NumSlots
	for visited := 0; visited < total; visited++ {
		if cur.slot >= NumSlots {
			cur.slot = 0
			cur.db = (cur.db + 1) % len(ks.dbs)
		}
		db := ks.existingDB(cur.db)
		if db == nil || db.volatileKeys.Load() == 0 {
			// Nothing to expire in the rest of this database: skipped
			// in one load, as Redis skips a db whose expires dict is
			// empty. Reading every slot's count instead missed the cache
			// 16384 times a cycle and pushed the keyspace out of it.
			visited += NumSlots - cur.slot - 1
			cur.slot = NumSlots
			continue
		}
		s := &db.slots[cur.slot]
		cur.slot++
		if s.volatileCount.Load() == 0 {
			continue
		}
		for {
			n, exp := db.expireSample(s)
			deleted += exp
			sampled += n
			expiredSeen += exp
			if n == 0 || exp*100 <= n*expireRepeatPct {
				break
			}
			if time.Now().After(deadline) {
				break
			}
		}
		if visited%16 == 0 && time.Now().After(deadline) {
			break
		}
	}
	if sampled > 0 {
		// Running estimate of the stale share, as Redis's stat_expired_stale_perc.
		pct := int64(expiredSeen * 100 / sampled)
		ks.expiredStalePct.Store((ks.expiredStalePct.Load()*95 + pct*5) / 100)
	}
	return deleted
}

// expireSample samples up to expireSamplesPerLoop volatile keys of one slot
// under its lock and deletes the expired ones. Go's map iteration starts at
// a random position, which makes the first entries a random sample.
func (db *DB) expireSample(s *Slot) (sampled, expired int) {
	db.lockSlot(s)
	defer s.mu.Unlock()
	now := db.ks.Now()
	var victims [expireSamplesPerLoop]*Entry
	nv := 0
	for e := range s.volatile {
		sampled++
		if now > e.expire {
			victims[nv] = e
			nv++
		}
		if sampled == expireSamplesPerLoop {
			break
		}
	}
	for _, e := range victims[:nv] {
		db.expireEntry(s, hashKey(db.ks.seed, e.keyBytes()), e)
	}
	return sampled, nv
}

// ExpiredStalePercent returns the estimated percentage of logically expired
// keys among keys with a TTL (INFO expired_stale_perc).
func (ks *Keyspace) ExpiredStalePercent() int64 { return ks.expiredStalePct.Load() }
