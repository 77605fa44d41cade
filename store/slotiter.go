package store

// EachInSlot visits every live key of one slot, for a caller that already
// holds the slot's lock (an atomic slot migration images a slot under its
// lock, so that the image and the slot's later writes are cleanly ordered);
// fn returns false to stop. ScanSlot is the variant that takes the lock.
func (db *DB) EachInSlot(slot uint16, fn func(e *Entry) bool) {
	s := &db.slots[slot]
	if s.keys.Load() == 0 {
		return
	}
	now := db.ks.Now()
	var cur uint64
	stop := false
	for !stop {
		cur = s.dict.scan(cur, func(e *Entry) {
			if stop || (e.expire != 0 && now > e.expire) {
				return
			}
			if !fn(e) {
				stop = true
			}
		})
		if cur == 0 {
			break
		}
	}
}
