package generic

import (
	"bytes"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// MOVE, COPY and FLUSHALL: the commands that reach a database other than the
// running command's. MOVE and COPY ... DB take the destination slot's lock
// between the dispatcher's own (Session.LockForeignSlot); FLUSHALL locks
// every database and then has the server save the emptied RDB file
// (Session.SaveAfterFlushAll).

const msgSameObject = "ERR source and destination objects are the same"

// MOVE key db
func cmdMove(c *command.Ctx, args [][]byte) {
	if c.Config().Bool("cluster-enabled") {
		c.Error("ERR MOVE is not allowed in cluster mode")
		return
	}
	id, ok := command.ParseDBIndex(c, args[2], "")
	if !ok {
		return
	}
	if !c.ValidDB(id) {
		c.Error(msgDBRange)
		return
	}
	src := c.DB().DB // cold: the store hashes the key itself
	dst := c.Keyspace().DB(id)
	// Compare the objects, as Redis does: a SWAPDB may have renumbered them.
	if src == dst {
		c.Error(msgSameObject)
		return
	}
	key := args[1]
	// The keys are looked up only now: taking the lock may have released
	// and retaken the dispatcher's.
	unlock := c.Session().LockForeignSlot(src, dst, slots.KeySlot(key))
	defer unlock()
	if src.Lookup(key, store.LookupNoStats) == nil || dst.Lookup(key, store.LookupNoStats) != nil {
		c.Int(0)
		return
	}
	src.MoveTo(dst, key)
	c.SignalKeyReadyIn(dst, key)
	c.NotifyIn(src, config.NotifyGeneric, "move_from", key)
	c.NotifyIn(dst, config.NotifyGeneric, "move_to", key)
	c.Int(1)
}

// COPY source destination [DB destination-db] [REPLACE]
func cmdCopy(c *command.Ctx, args [][]byte) {
	srcDB := c.DB().DB // cold: the store hashes the keys itself
	dstDB := srcDB
	srcID := c.Session().SelectedDBIndex()
	dstID := srcID
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case command.ArgIs(args[j], "replace"):
			replace = true
		case command.ArgIs(args[j], "db") && j+1 < len(args):
			id, ok := command.ParseDBIndex(c, args[j+1], "")
			if !ok {
				return
			}
			if !c.ValidDB(id) {
				c.Error(msgDBRange)
				return
			}
			dstID = id
			dstDB = c.Keyspace().DB(id)
			j++
		default:
			c.ErrSyntax()
			return
		}
	}
	if c.Config().Bool("cluster-enabled") && (srcID != 0 || dstID != 0) {
		c.Error("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	src, dst := args[1], args[2]
	if srcDB == dstDB && bytes.Equal(src, dst) {
		c.Error(msgSameObject)
		return
	}
	if dstDB != srcDB {
		unlock := c.Session().LockForeignSlot(srcDB, dstDB, slots.KeySlot(dst))
		defer unlock()
	}
	if srcDB.Find(src) == nil {
		c.Int(0)
		return
	}
	if !replace && dstDB.Lookup(dst, store.LookupNoStats) != nil {
		c.Int(0)
		return
	}
	srcDB.CopyTo(dstDB, src, dst, replace)
	c.SignalKeyReadyIn(dstDB, dst)
	c.NotifyIn(dstDB, config.NotifyGeneric, "copy_to", dst)
	c.Int(1)
}

// FLUSHALL [ASYNC | SYNC]
func cmdFlushAll(c *command.Ctx, args [][]byte) {
	if !flushArgsOK(c, args) {
		return
	}
	// As FLUSHDB: every slot of every database is locked across the flush
	// and its effect.
	ks := c.Keyspace()
	var dbs []*store.DB
	for i := 0; i < ks.NumDBs(); i++ {
		if db := ks.ExistingDB(i); db != nil {
			dbs = append(dbs, db)
		}
	}
	unlock := command.LockWholeDBs(dbs...)
	var removed int64
	for _, db := range dbs {
		removed += db.FlushLocked()
	}
	c.Dirty(removed) // one change per key removed, as Redis
	c.Session().PropagateNow(args)
	unlock()
	c.Session().SaveAfterFlushAll()
	c.OK()
}
