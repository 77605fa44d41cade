package node

import (
	"github.com/shoal-db/shoal/store"
)

// The whole-database lock SORT's BY and GET patterns need; the command
// itself is in commands/sorting, its key procedures in command/keys.go.

// allSlots lists every slot in ascending order, for lockWholeDB.
var allSlots = func() []uint16 {
	s := make([]uint16, store.NumSlots)
	for i := range s {
		s[i] = uint16(i)
	}
	return s
}()

// lockWholeDB makes the running command hold every slot lock of its
// database (SORT's BY and GET patterns read keys anywhere). It releases the
// slots the dispatcher locked and takes all of them in ascending order, the
// global lock order, so it cannot deadlock; nothing has been read yet when
// it is called. The returned function goes back to holding exactly the
// dispatcher's slots, which the dispatcher then unlocks.
func (c *Client) lockWholeDB() (restore func()) {
	db := c.DB()
	held := c.slotBuf
	db.UnlockSlots(held)
	db.LockSlots(allSlots)
	return func() {
		k := 0
		for s := range allSlots {
			if k < len(held) && int(held[k]) == s {
				k++
				continue
			}
			db.Unlock(uint16(s))
		}
	}
}
