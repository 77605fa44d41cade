package node

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// SORT's key procedures and the whole-database lock its BY and GET
// patterns need; the command itself is in commands/sorting.

// sortGetKeys is Redis's sortGetKeys: the sorted key, and the destination
// of the last STORE option. Options are skipped by their argument counts
// (LIMIT 2, GET and BY 1); any other word is taken as an option without
// argument, so "STORE" is recognised wherever it appears.
func sortGetKeys(args [][]byte) ([]int, error) {
	keys := []int{1}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case command.ArgIs(args[i], "limit"):
			i += 2
		case command.ArgIs(args[i], "get"), command.ArgIs(args[i], "by"):
			i++
		case command.ArgIs(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store != 0 {
		keys = append(keys, store)
	}
	return keys, nil
}

// sortKeyFlags: the sorted key is read, the STORE destination overwritten
// (Redis's sortGetKeys: CMD_KEY_RO|CMD_KEY_ACCESS, CMD_KEY_OW|CMD_KEY_UPDATE).
func sortKeyFlags(_ [][]byte, pos int) command.KeySpecFlag {
	if pos == 1 {
		return command.KeyRO | command.KeyAccess
	}
	return command.KeyOW | command.KeyUpdate
}

// sortROGetKeys: SORT_RO has no destination.
func sortROGetKeys(args [][]byte) ([]int, error) { return []int{1}, nil }

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
