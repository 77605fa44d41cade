package node

import (
	"bytes"
	"math"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// keyHandlers: the generic key commands (Redis 7.0's "keyspace" group, plus
// DBSIZE, FLUSHDB, FLUSHALL and SWAPDB). The expiry commands are in
// keys_expire.go, OBJECT in keys_object.go, KEYS and SCAN in keys_scan.go.
//
// Lookups follow Redis: a read lookup (lookupKeyRead) counts a keyspace hit
// or miss, a write lookup (lookupKeyWrite) does not; both delete a logically
// expired key on the way. The dispatcher holds the slot locks of every
// declared key in c.DB(); MOVE and COPY ... DB take the target database's
// lock themselves (see lockForeignSlot).
func keyHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"del":      cmdDel,
		"unlink":   cmdDel, // values are freed by the garbage collector: both are O(1) per key
		"exists":   cmdExists,
		"type":     cmdType,
		"touch":    cmdTouch,
		"rename":   cmdRename,
		"renamenx": cmdRenameNX,
		"copy":     cmdCopy,
		"move":     cmdMove,

		"keys":      cmdKeys,
		"scan":      cmdScan,
		"randomkey": cmdRandomKey,
		"dbsize":    cmdDBSize,
		"flushdb":   cmdFlushDB,
		"flushall":  cmdFlushAll,
		"swapdb":    cmdSwapDB,

		"expire":      cmdExpire,
		"pexpire":     cmdPExpire,
		"expireat":    cmdExpireAt,
		"pexpireat":   cmdPExpireAt,
		"ttl":         cmdTTL,
		"pttl":        cmdPTTL,
		"expiretime":  cmdExpireTime,
		"pexpiretime": cmdPExpireTime,
		"persist":     cmdPersist,

		"object|encoding": cmdObjectEncoding,
		"object|freq":     cmdObjectFreq,
		"object|idletime": cmdObjectIdleTime,
		"object|refcount": cmdObjectRefCount,
		"object|help":     cmdObjectHelp,
	}
}

const (
	msgNoSuchKey  = "ERR no such key"
	msgSameObject = "ERR source and destination objects are the same"
	msgDBRange    = "ERR DB index is out of range"
)

// DEL / UNLINK key [key ...]
func cmdDel(c *Client, args [][]byte) {
	db := c.DB()
	var n int64
	for _, k := range args[1:] {
		if db.Delete(k) {
			n++
		}
	}
	c.Int(n)
	c.Dirty(n)
	if n == 0 {
		c.NoEffect() // nothing changed: not propagated, as Redis
	}
}

// EXISTS key [key ...]: a key named twice counts twice.
func cmdExists(c *Client, args [][]byte) {
	db := c.DB()
	var n int64
	for _, k := range args[1:] {
		if db.Lookup(k, store.LookupNoTouch) != nil {
			n++
		}
	}
	c.Int(n)
}

// TOUCH key [key ...]
func cmdTouch(c *Client, args [][]byte) {
	db := c.DB()
	var n int64
	for _, k := range args[1:] {
		if db.Find(k) != nil {
			n++
		}
	}
	c.Int(n)
}

// TYPE key
func cmdType(c *Client, args [][]byte) {
	e := c.DB().Lookup(args[1], store.LookupNoTouch)
	if e == nil {
		c.Status("none")
		return
	}
	c.Status(e.Type().String())
}

// RENAME key newkey
func cmdRename(c *Client, args [][]byte) { renameGeneric(c, args, false) }

// RENAMENX key newkey
func cmdRenameNX(c *Client, args [][]byte) { renameGeneric(c, args, true) }

func renameGeneric(c *Client, args [][]byte, nx bool) {
	db := c.DB()
	src, dst := args[1], args[2]
	if db.Lookup(src, store.LookupNoStats) == nil {
		c.Error(msgNoSuchKey)
		return
	}
	if bytes.Equal(src, dst) {
		// Nothing to do, but the key had to exist.
		if nx {
			c.Int(0)
		} else {
			c.OK()
		}
		return
	}
	if nx && db.Lookup(dst, store.LookupNoStats) != nil {
		c.Int(0)
		return
	}
	db.Rename(src, dst)
	c.signalKeyReady(dst) // clients blocked on dst may now be served
	if nx {
		c.Int(1)
	} else {
		c.OK()
	}
}

// parseDBIndex parses a database number as Redis's getIntFromObjectOrReply
// does (an int32), and replies the error itself when it fails: errMsg if
// not empty, else Redis's generic texts.
func parseDBIndex(c *Client, arg []byte, errMsg string) (int, bool) {
	n, ok := command.ParseInt64(arg)
	if !ok {
		if errMsg != "" {
			c.Error(errMsg)
		} else {
			c.ErrNotInteger()
		}
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		if errMsg != "" {
			c.Error(errMsg)
		} else {
			c.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		}
		return 0, false
	}
	return int(n), true
}

// validDB reports whether n names a database.
func (c *Client) validDB(n int) bool { return n >= 0 && n < c.srv.ks.NumDBs() }

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
	if !c.validDB(id) {
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
			if !c.validDB(id) {
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

// RANDOMKEY
func cmdRandomKey(c *Client, args [][]byte) {
	k, ok := c.DB().RandomKey()
	if !ok {
		c.Null()
		return
	}
	c.BulkString(k)
}

// DBSIZE: like Redis, logically expired keys not yet deleted count.
func cmdDBSize(c *Client, args [][]byte) { c.Int(c.DB().Size()) }

// flushArgsOK checks FLUSHDB / FLUSHALL's optional ASYNC | SYNC and replies
// the syntax error itself. Both modes do the same here: the slot tables are
// dropped and the garbage collector frees the values in the background.
func flushArgsOK(c *Client, args [][]byte) bool {
	if len(args) == 1 {
		return true
	}
	if len(args) == 2 && (command.ArgIs(args[1], "sync") || command.ArgIs(args[1], "async")) {
		return true
	}
	c.ErrSyntax()
	return false
}

// FLUSHDB [ASYNC | SYNC]
func cmdFlushDB(c *Client, args [][]byte) {
	if !flushArgsOK(c, args) {
		return
	}
	// The flush and its effect happen under every slot lock of the
	// database, so no write to it lands between them in the stream.
	db := c.DB()
	unlock := command.LockWholeDBs(db)
	c.Dirty(db.FlushLocked()) // one change per key removed, as Redis
	c.propagateNow(args)
	unlock()
	c.OK()
}

// FLUSHALL [ASYNC | SYNC]
func cmdFlushAll(c *Client, args [][]byte) {
	if !flushArgsOK(c, args) {
		return
	}
	// As FLUSHDB: every slot of every database is locked across the flush
	// and its effect.
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

// SWAPDB index1 index2
func cmdSwapDB(c *Client, args [][]byte) {
	if c.srv.cfg.Bool("cluster-enabled") {
		c.Error("ERR SWAPDB is not allowed in cluster mode")
		return
	}
	a, ok := parseDBIndex(c, args[1], "ERR invalid first DB index")
	if !ok {
		return
	}
	b, ok := parseDBIndex(c, args[2], "ERR invalid second DB index")
	if !ok {
		return
	}
	if !c.validDB(a) || !c.validDB(b) {
		c.Error(msgDBRange)
		return
	}
	if a != b {
		// Both databases stay locked until the swap is in the stream.
		unlock := command.LockWholeDBs(c.srv.ks.DB(a), c.srv.ks.DB(b))
		c.srv.ks.SwapDB(a, b)
		c.propagateNow(args)
		c.Dirty(1)
		unlock()
		c.signalDBsSwapped(a, b)
	}
	c.OK()
}
