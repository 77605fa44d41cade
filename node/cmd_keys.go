package node

import (
	"bytes"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/generic"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// keyHandlers: the generic key commands that stay in node (the rest of
// Redis's "keyspace" group is in commands/generic). MOVE and COPY take a
// second database's slot lock between the dispatcher's own (lockForeignSlot
// needs the dispatcher's locked slot set, which command.Session does not
// offer); FLUSHALL cancels a background save and, with save points
// configured, saves the emptied RDB file (saveAfterFlushAll).
func keyHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"copy":     cmdCopy,
		"move":     cmdMove,
		"flushall": cmdFlushAll,
	}
}

const (
	msgNoSuchKey  = "ERR no such key"
	msgSameObject = "ERR source and destination objects are the same"
	msgDBRange    = "ERR DB index is out of range"
)

// parseDBIndex is command.ParseDBIndex for the handlers in node (MOVE,
// COPY, SELECT).
func parseDBIndex(c *Client, arg []byte, errMsg string) (int, bool) {
	return command.ParseDBIndex(&c.Ctx, arg, errMsg)
}

// lockForeignSlot takes the lock of slot in database other (≠ home) while
// the dispatcher holds home's locks of c.slotBuf, and returns the function
// that releases it; on return from both, exactly the dispatcher's locks are
// held again, as the dispatcher expects.
//
// Lock order: a goroutine holding locks in two databases takes them in
// store.LockOrderLess order of the databases, and within one database in
// ascending slot order. Two clients MOVE-ing keys in opposite directions
// therefore cannot deadlock. When other comes first, the dispatcher's locks
// are released and retaken after other's: between the two, other commands
// may change those keys, so the caller must look its keys up only after
// this returns.
func lockForeignSlot(c *Client, home, other *store.DB, slot uint16) (unlock func()) {
	if store.LockOrderLess(home, other) {
		other.Lock(slot)
	} else {
		home.UnlockSlots(c.slotBuf)
		other.Lock(slot)
		home.LockSlots(c.slotBuf)
	}
	return func() { other.Unlock(slot) }
}

// MOVE key db
func cmdMove(c *Client, args [][]byte) {
	if c.srv.cfg.Bool("cluster-enabled") {
		c.Error("ERR MOVE is not allowed in cluster mode")
		return
	}
	id, ok := parseDBIndex(c, args[2], "")
	if !ok {
		return
	}
	if !c.ValidDB(id) {
		c.Error(msgDBRange)
		return
	}
	src := c.DB()
	dst := c.srv.ks.DB(id)
	// Compare the objects, as Redis does: a SWAPDB may have renumbered them.
	if src == dst {
		c.Error(msgSameObject)
		return
	}
	key := args[1]
	unlock := lockForeignSlot(c, src, dst, slots.KeySlot(key))
	defer unlock()
	if src.Lookup(key, store.LookupNoStats) == nil || dst.Lookup(key, store.LookupNoStats) != nil {
		c.Int(0)
		return
	}
	src.MoveTo(dst, key)
	c.signalKeyReadyIn(dst, key)
	c.Int(1)
}

// COPY source destination [DB destination-db] [REPLACE]
func cmdCopy(c *Client, args [][]byte) {
	srcDB := c.DB()
	dstDB := srcDB
	srcID := int(c.dbIndex.Load())
	dstID := srcID
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case command.ArgIs(args[j], "replace"):
			replace = true
		case command.ArgIs(args[j], "db") && j+1 < len(args):
			id, ok := parseDBIndex(c, args[j+1], "")
			if !ok {
				return
			}
			if !c.ValidDB(id) {
				c.Error(msgDBRange)
				return
			}
			dstID = id
			dstDB = c.srv.ks.DB(id)
			j++
		default:
			c.ErrSyntax()
			return
		}
	}
	if c.srv.cfg.Bool("cluster-enabled") && (srcID != 0 || dstID != 0) {
		c.Error("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	src, dst := args[1], args[2]
	if srcDB == dstDB && bytes.Equal(src, dst) {
		c.Error(msgSameObject)
		return
	}
	if dstDB != srcDB {
		unlock := lockForeignSlot(c, srcDB, dstDB, slots.KeySlot(dst))
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
	c.signalKeyReadyIn(dstDB, dst)
	c.Int(1)
}

// FLUSHALL [ASYNC | SYNC]
func cmdFlushAll(c *Client, args [][]byte) {
	if !generic.FlushArgsOK(&c.Ctx, args) {
		return
	}
	// As FLUSHDB (commands/generic): every slot of every database is
	// locked across the flush and its effect.
	ks := c.srv.ks
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
	c.propagateNow(args)
	unlock()
	c.srv.saveAfterFlushAll() // node/persistence.go
	c.OK()
}
