package store

import (
	"math/rand/v2"
	"sync/atomic"
)

// Access tracking: every entry's 24-bit clock field holds, as Redis's robj
// lru field does, either
//   - under an LRU (or non-LFU) policy: the LRU clock, seconds, 24 bits; or
//   - under an LFU policy: the last decrement time in minutes (16 bits) and
//     a logarithmic access counter (8 bits).
//
// Switching policy at run time reinterprets the field, as in Redis: the data
// adjusts as keys are accessed again.

// LFUInitVal is the access counter of a new key (Redis's LFU_INIT_VAL).
const LFUInitVal = 5

// accessPolicy is what the keyspace's access tracking follows; the server
// sets it from its configuration (SetAccessPolicy).
type accessPolicy struct {
	lfu        atomic.Bool
	logFactor  atomic.Int64 // lfu-log-factor
	decayTime  atomic.Int64 // lfu-decay-time, minutes per counter decrement
	lfuMinutes atomic.Uint32
}

// SetAccessPolicy selects LFU counters (lfu) or LRU clocks for access
// tracking, with Redis's lfu-log-factor and lfu-decay-time.
func (ks *Keyspace) SetAccessPolicy(lfu bool, logFactor, decayTime int64) {
	ks.access.logFactor.Store(logFactor)
	ks.access.decayTime.Store(decayTime)
	ks.access.lfu.Store(lfu)
}

// LFU reports whether access tracking keeps LFU counters.
func (ks *Keyspace) LFU() bool { return ks.access.lfu.Load() }

// lfuMinutesNow is the 16-bit minutes clock (Redis's LFUGetTimeInMinutes),
// advanced by Tick.
func (ks *Keyspace) lfuMinutesNow() uint32 { return ks.access.lfuMinutes.Load() }

// initAccess gives a new (or newly replaced, under LRU) value its first
// access mark.
func (ks *Keyspace) initAccess(e *Entry) {
	if ks.access.lfu.Load() {
		e.setLRU(ks.lfuMinutesNow()<<8 | LFUInitVal)
		return
	}
	e.setLRU(ks.lruClock.Load())
}

// touch records an access to e (Redis's lookupKey: updateLFU or the LRU
// clock).
func (ks *Keyspace) touch(e *Entry) {
	if !ks.access.lfu.Load() {
		e.setLRU(ks.lruClock.Load())
		return
	}
	counter := ks.lfuLogIncr(ks.LFUCounter(e))
	e.setLRU(ks.lfuMinutesNow()<<8 | uint32(counter))
}

// LFUCounter returns e's access counter decayed by the minutes elapsed since
// its last decrement (Redis's LFUDecrAndReturn): OBJECT FREQ's answer. It
// does not change e.
func (ks *Keyspace) LFUCounter(e *Entry) uint8 {
	ldt := e.lru() >> 8
	counter := e.lru() & 255
	decay := ks.access.decayTime.Load()
	if decay <= 0 {
		return uint8(counter)
	}
	now := ks.lfuMinutesNow()
	var elapsed uint32
	if now >= ldt {
		elapsed = now - ldt
	} else {
		elapsed = 65535 - ldt + now
	}
	periods := int64(elapsed) / decay
	if periods >= int64(counter) {
		return 0
	}
	return uint8(int64(counter) - periods)
}

// lfuLogIncr increments an access counter with probability
// 1/((counter-LFUInitVal)*lfu-log-factor+1), saturating at 255 (Redis's
// LFULogIncr).
func (ks *Keyspace) lfuLogIncr(counter uint8) uint8 {
	if counter == 255 {
		return 255
	}
	base := float64(counter) - LFUInitVal
	if base < 0 {
		base = 0
	}
	if rand.Float64() < 1/(base*float64(ks.access.logFactor.Load())+1) {
		counter++
	}
	return counter
}

// SetLFU sets e's access counter to freq with the current decrement time
// (RESTORE ... FREQ, DEBUG helpers). Caller holds e's slot lock.
func (ks *Keyspace) SetLFU(e *Entry, freq uint8) {
	e.setLRU(ks.lfuMinutesNow()<<8 | uint32(freq))
}

// RestoreAccess sets a loaded or restored key's access mark from what its
// payload carried (Redis's objectSetLRUOrLFU): the counter freq under an
// LFU policy, else the idle time; a negative value means absent.
func (ks *Keyspace) RestoreAccess(e *Entry, idleSecs, freq int64) {
	if ks.LFU() {
		if freq >= 0 {
			ks.SetLFU(e, uint8(min(freq, 255)))
		}
		return
	}
	if idleSecs >= 0 {
		ks.SetIdleMillis(e, idleSecs*1000)
	}
}
