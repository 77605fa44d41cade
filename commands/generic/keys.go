// Package generic holds Redis's generic key commands (the "keyspace" group
// of Redis 7.0, plus DBSIZE, FLUSHDB and SWAPDB): DEL, EXISTS, TYPE, TOUCH,
// RENAME, the expiry commands (expire.go), OBJECT (object.go), KEYS and SCAN
// (scan.go), MOVE, COPY and FLUSHALL (move.go), DUMP and RESTORE (dump.go).
//
// Lookups follow Redis: a read lookup (lookupKeyRead) counts a keyspace hit
// or miss, a write lookup (lookupKeyWrite) does not; both delete a logically
// expired key on the way. The dispatcher holds the slot locks of every
// declared key in c.DB().
package generic

import (
	"bytes"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Handlers maps the commands' full names to their handlers.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"del":      cmdDel,
		"unlink":   cmdDel, // values are freed by the garbage collector: both are O(1) per key
		"exists":   cmdExists,
		"type":     cmdType,
		"touch":    cmdTouch,
		"rename":   cmdRename,
		"renamenx": cmdRenameNX,

		"keys":      cmdKeys,
		"scan":      cmdScan,
		"randomkey": cmdRandomKey,
		"dbsize":    cmdDBSize,
		"flushdb":   cmdFlushDB,
		"swapdb":    cmdSwapDB,
		"flushall":  cmdFlushAll,
		"move":      cmdMove,
		"copy":      cmdCopy,

		"dump":           cmdDump,
		"restore":        cmdRestore,
		"restore-asking": cmdRestore,

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
	msgNoSuchKey = "ERR no such key"
	msgDBRange   = "ERR DB index is out of range"
)

// DEL / UNLINK key [key ...]
func cmdDel(c *command.Ctx, args [][]byte) {
	db := c.DB()
	var n int64
	for _, k := range args[1:] {
		if db.Delete(k) {
			c.Notify(config.NotifyGeneric, "del", k)
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
func cmdExists(c *command.Ctx, args [][]byte) {
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
func cmdTouch(c *command.Ctx, args [][]byte) {
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
func cmdType(c *command.Ctx, args [][]byte) {
	e := c.DB().Lookup(args[1], store.LookupNoTouch)
	if e == nil {
		c.Status("none")
		return
	}
	c.Status(e.Type().String())
}

// RENAME key newkey
func cmdRename(c *command.Ctx, args [][]byte) { renameGeneric(c, args, false) }

// RENAMENX key newkey
func cmdRenameNX(c *command.Ctx, args [][]byte) { renameGeneric(c, args, true) }

func renameGeneric(c *command.Ctx, args [][]byte, nx bool) {
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
	c.SignalKeyReady(dst) // clients blocked on dst may now be served
	c.Notify(config.NotifyGeneric, "rename_from", src)
	c.Notify(config.NotifyGeneric, "rename_to", dst)
	if nx {
		c.Int(1)
	} else {
		c.OK()
	}
}

// RANDOMKEY
func cmdRandomKey(c *command.Ctx, args [][]byte) {
	k, ok := c.DB().RandomKey()
	if !ok {
		c.Null()
		return
	}
	c.BulkString(k)
}

// DBSIZE: like Redis, logically expired keys not yet deleted count.
func cmdDBSize(c *command.Ctx, args [][]byte) { c.Int(c.DB().Size()) }

// flushArgsOK checks FLUSHDB / FLUSHALL's optional ASYNC | SYNC and replies
// the syntax error itself. Both modes do the same here: the slot tables are
// dropped and the garbage collector frees the values in the background.
func flushArgsOK(c *command.Ctx, args [][]byte) bool {
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
func cmdFlushDB(c *command.Ctx, args [][]byte) {
	if !flushArgsOK(c, args) {
		return
	}
	// The flush and its effect happen under every slot lock of the
	// database, so no write to it lands between them in the stream.
	db := c.DB()
	unlock := command.LockWholeDBs(db.DB)
	c.Dirty(db.FlushLocked()) // one change per key removed, as Redis
	c.Session().PropagateNow(args)
	unlock()
	c.OK()
}

// SWAPDB index1 index2
func cmdSwapDB(c *command.Ctx, args [][]byte) {
	if c.Config().Bool("cluster-enabled") {
		c.Error("ERR SWAPDB is not allowed in cluster mode")
		return
	}
	a, ok := command.ParseDBIndex(c, args[1], "ERR invalid first DB index")
	if !ok {
		return
	}
	b, ok := command.ParseDBIndex(c, args[2], "ERR invalid second DB index")
	if !ok {
		return
	}
	if !c.ValidDB(a) || !c.ValidDB(b) {
		c.Error(msgDBRange)
		return
	}
	if a != b {
		// Both databases stay locked until the swap is in the stream.
		unlock := command.LockWholeDBs(c.Keyspace().DB(a), c.Keyspace().DB(b))
		c.Keyspace().SwapDB(a, b)
		c.Session().PropagateNow(args)
		c.Dirty(1)
		unlock()
		c.Session().SignalDBsSwapped(a, b)
	}
	c.OK()
}
