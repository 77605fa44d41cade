// Package str holds the string commands (Redis 7.0's "string" group: GET,
// SET and their variants, the counters, APPEND, SETRANGE, GETRANGE, LCS).
package str

import (
	"slices"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Handlers: the string commands (Redis 7.0's "string" group).
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"set":         cmdSet,
		"setnx":       cmdSetNX,
		"setex":       cmdSetEX,
		"psetex":      cmdPSetEX,
		"get":         cmdGet,
		"getex":       cmdGetEX,
		"getdel":      cmdGetDel,
		"getset":      cmdGetSet,
		"mget":        cmdMGet,
		"mset":        cmdMSet,
		"msetnx":      cmdMSetNX,
		"incr":        cmdIncr,
		"decr":        cmdDecr,
		"incrby":      cmdIncrBy,
		"decrby":      cmdDecrBy,
		"incrbyfloat": cmdIncrByFloat,
		"append":      cmdAppend,
		"strlen":      cmdStrlen,
		"setrange":    cmdSetRange,
		"getrange":    cmdGetRange,
		"substr":      cmdGetRange,
		"lcs":         cmdLCS,
	}
}

// Lookups: Redis's lookupKeyRead counts a keyspace hit or miss, its
// lookupKeyWrite does not. Both delete a logically expired key on the way and
// touch the LRU clock, as store.DB.Lookup does.

// LookupString finds key for reading (counting a hit or miss). It returns
// the entry, or nil when the key is missing; wrongType reports a key of
// another type, for which nothing has been replied yet.
func LookupString(db command.DB, key []byte) (e *store.Entry, wrongType bool) {
	e = db.Find(key)
	if e != nil && e.Type() != store.TypeString {
		return nil, true
	}
	return e, false
}

// replyGet is Redis's getGenericCommand: it replies the value of key, null
// if missing, or WRONGTYPE (then it returns false). found reports whether the
// key exists.
func replyGet(c *command.Ctx, db command.DB, key []byte) (found, ok bool) {
	e, wrong := LookupString(db, key)
	if wrong {
		c.ErrWrongType()
		return false, false
	}
	if e == nil {
		c.Null()
		return false, true
	}
	c.Bulk(e.Bytes())
	return true, true
}

func cmdGet(c *command.Ctx, args [][]byte) {
	replyGet(c, c.DB(), args[1])
}

// cmdSet: SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL].
func cmdSet(c *command.Ctx, args [][]byte) {
	db := c.DB()
	key, val := args[1], args[2]
	if len(args) == 3 {
		// The benchmark's hot path: one lookup-or-insert, no option
		// parsing (the key's slot as the dispatcher computed it, command.DB).
		db.SetString(key, val, false)
		c.ChargedExactly()
		c.Notify(config.NotifyString, "set", key)
		c.OK()
		return
	}
	var opt strOpts
	if !opt.parse(args[3:], true) {
		c.ErrSyntax()
		return
	}
	var at int64
	if opt.expire != nil {
		var ok bool
		if at, ok = expireAtOrReply(c, opt, "set"); !ok {
			return
		}
	}
	found := false
	if opt.flags&optGet != 0 {
		var ok bool
		if found, ok = replyGet(c, db, key); !ok {
			return
		}
		// lookupKeyWrite after lookupKeyRead: the same answer, under the
		// same lock and without further stats, so the read's result stands.
	} else if opt.flags&(optNX|optXX) != 0 {
		found = command.LookupWrite(db, key) != nil
	}
	if opt.flags&optNX != 0 && found || opt.flags&optXX != 0 && !found {
		if opt.flags&optGet == 0 {
			c.Null()
		}
		c.NoEffect()
		return
	}
	// With a new expire time the old one is kept until it is overwritten:
	// the same result, without taking the key out of the slot's set of
	// volatile keys only to put it back.
	e := db.SetString(key, val, opt.flags&optKeepTTL != 0 || opt.expire != nil)
	c.Notify(config.NotifyString, "set", key)
	if opt.expire != nil {
		db.SetExpire(key, e, at)
		// Propagated with the absolute time, as Redis 7.0 does.
		c.ReplaceEffect(argSET, key, val, argPXAT, strconv.AppendInt(nil, at, 10))
		c.Notify(config.NotifyGeneric, "expire", key)
	}
	if opt.flags&optGet == 0 {
		c.OK()
	}
}

func cmdSetNX(c *command.Ctx, args [][]byte) {
	db := c.DB()
	if command.LookupWrite(db, args[1]) != nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	db.SetString(args[1], args[2], false)
	c.Notify(config.NotifyString, "set", args[1])
	c.Int(1)
}

func cmdSetEX(c *command.Ctx, args [][]byte)  { setWithTTL(c, args, optEX, "setex") }
func cmdPSetEX(c *command.Ctx, args [][]byte) { setWithTTL(c, args, optPX, "psetex") }

// setWithTTL is SETEX / PSETEX key ttl value.
func setWithTTL(c *command.Ctx, args [][]byte, unit strOptFlags, name string) {
	at, ok := expireAtOrReply(c, strOpts{flags: unit, expire: args[2]}, name)
	if !ok {
		return
	}
	db := c.DB()
	e := db.SetString(args[1], args[3], true) // the TTL is replaced just below
	c.Notify(config.NotifyString, "set", args[1])
	db.SetExpire(args[1], e, at)
	c.ReplaceEffect(argSET, args[1], args[3], argPXAT, strconv.AppendInt(nil, at, 10))
	c.Notify(config.NotifyGeneric, "expire", args[1])
	c.OK()
}

// cmdGetEX: GETEX key [EX s|PX ms|EXAT ts|PXAT ms-ts|PERSIST].
func cmdGetEX(c *command.Ctx, args [][]byte) {
	var opt strOpts
	if !opt.parse(args[2:], false) {
		c.ErrSyntax()
		return
	}
	db := c.DB()
	key := args[1]
	e, wrong := LookupString(db, key)
	if wrong {
		c.ErrWrongType()
		return
	}
	if e == nil {
		c.Null()
		return
	}
	// Redis validates the expire time only once the key is known to exist.
	var at int64
	if opt.expire != nil {
		var ok bool
		if at, ok = expireAtOrReply(c, opt, "getex"); !ok {
			return
		}
	}
	c.Bulk(e.Bytes())
	// GETEX is never propagated as is: DEL, PEXPIREAT, PERSIST or nothing.
	switch {
	case opt.flags&(optEXAT|optPXAT) != 0 && at <= c.NowMs():
		// An absolute time already past deletes the key (checkAlreadyExpired).
		db.Delete(key)
		c.ReplaceEffect(argDEL, key)
		c.Notify(config.NotifyGeneric, "del", key)
	case opt.expire != nil:
		db.SetExpire(key, e, at)
		c.ReplaceEffect(argPEXPIREAT, key, strconv.AppendInt(nil, at, 10))
		c.Notify(config.NotifyGeneric, "expire", key)
	case opt.flags&optPersist != 0 && e.ExpireAt() != 0:
		db.SetExpire(key, e, 0)
		c.ReplaceEffect(argPERSIST, key)
		c.Notify(config.NotifyGeneric, "persist", key)
	default:
		c.NoEffect()
	}
}

func cmdGetDel(c *command.Ctx, args [][]byte) {
	db := c.DB()
	found, ok := replyGet(c, db, args[1])
	if ok && found {
		db.Delete(args[1])
		c.ReplaceEffect(argDEL, args[1])
		c.Notify(config.NotifyGeneric, "del", args[1])
		return
	}
	c.NoEffect()
}

func cmdGetSet(c *command.Ctx, args [][]byte) {
	db := c.DB()
	if _, ok := replyGet(c, db, args[1]); !ok {
		return
	}
	db.SetString(args[1], args[2], false)
	c.Notify(config.NotifyString, "set", args[1])
	c.ReplaceEffect(argSET, args[1], args[2])
}

func cmdMGet(c *command.Ctx, args [][]byte) {
	db := c.DB()
	c.Array(len(args) - 1)
	for _, key := range args[1:] {
		e := db.Find(key)
		if e == nil || e.Type() != store.TypeString {
			c.Null()
			continue
		}
		c.Bulk(e.Bytes())
	}
}

func cmdMSet(c *command.Ctx, args [][]byte) {
	if len(args)%2 == 0 {
		c.ErrArity("mset")
		return
	}
	db := c.DB()
	for i := 1; i < len(args); i += 2 {
		db.SetString(args[i], args[i+1], false)
		c.Notify(config.NotifyString, "set", args[i])
	}
	c.Dirty(int64(len(args)-1) / 2)
	c.OK()
}

func cmdMSetNX(c *command.Ctx, args [][]byte) {
	if len(args)%2 == 0 {
		c.ErrArity("msetnx")
		return
	}
	db := c.DB()
	for i := 1; i < len(args); i += 2 {
		if command.LookupWrite(db, args[i]) != nil {
			c.NoEffect()
			c.Int(0)
			return
		}
	}
	for i := 1; i < len(args); i += 2 {
		db.SetString(args[i], args[i+1], false)
		c.Notify(config.NotifyString, "set", args[i])
	}
	c.Dirty(int64(len(args)-1) / 2)
	c.Int(1)
}

func cmdStrlen(c *command.Ctx, args [][]byte) {
	e, wrong := LookupString(c.DB(), args[1])
	switch {
	case wrong:
		c.ErrWrongType()
	case e == nil:
		c.Int(0)
	default:
		c.Int(int64(len(e.Bytes())))
	}
}

// checkStringLength is Redis's checkStringLength: a string may not grow past
// proto-max-bulk-len. It is checked before anything is allocated.
func checkStringLength(c *command.Ctx, size, add int64) bool {
	total := uint64(size) + uint64(add)
	if total > uint64(c.Session().ProtoMaxBulkLen()) || total < uint64(size) || total < uint64(add) {
		c.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return false
	}
	return true
}

func cmdAppend(c *command.Ctx, args [][]byte) {
	db := c.DB()
	key, val := args[1], args[2]
	e := command.LookupWrite(db, key)
	if e == nil {
		// A new key gets the argument's own encoding (int/embstr/raw), as
		// Redis's tryObjectEncoding gives it.
		db.SetString(key, val, false)
		c.Notify(config.NotifyString, "append", key)
		c.Int(int64(len(val)))
		return
	}
	if e.Type() != store.TypeString {
		c.ErrWrongType()
		return
	}
	if !checkStringLength(c, int64(len(e.Bytes())), int64(len(val))) {
		return
	}
	p := e.MutableBytes()
	*p = append(*p, val...)
	c.Notify(config.NotifyString, "append", key)
	c.Int(int64(len(*p)))
}

func cmdSetRange(c *command.Ctx, args [][]byte) {
	offset, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if offset < 0 {
		c.Error("ERR offset is out of range")
		return
	}
	db := c.DB()
	key, val := args[1], args[3]
	e := command.LookupWrite(db, key)
	if e == nil {
		if len(val) == 0 {
			c.Int(0) // setting nothing on a missing key creates nothing
			return
		}
		if !checkStringLength(c, offset, int64(len(val))) {
			return
		}
		e = db.SetString(key, nil, false)
	} else {
		if e.Type() != store.TypeString {
			c.ErrWrongType()
			return
		}
		if len(val) == 0 {
			c.Int(int64(len(e.Bytes())))
			return
		}
		if !checkStringLength(c, offset, int64(len(val))) {
			return
		}
	}
	p := e.MutableBytes()
	end := int(offset) + len(val)
	if end > len(*p) {
		old := len(*p)
		*p = slices.Grow(*p, end-old)[:end]
		if int(offset) > old {
			clear((*p)[old:offset]) // the gap reads as zero bytes
		}
	}
	copy((*p)[offset:], val)
	c.Notify(config.NotifyString, "setrange", key)
	c.Int(int64(len(*p)))
}

// cmdGetRange: GETRANGE / SUBSTR key start end, with Redis's clamping of
// negative and out-of-range indexes.
func cmdGetRange(c *command.Ctx, args [][]byte) {
	start, ok1 := command.ParseInt64(args[2])
	if !ok1 {
		c.ErrNotInteger()
		return
	}
	end, ok2 := command.ParseInt64(args[3])
	if !ok2 {
		c.ErrNotInteger()
		return
	}
	e, wrong := LookupString(c.DB(), args[1])
	if wrong {
		c.ErrWrongType()
		return
	}
	if e == nil {
		c.Bulk(nil)
		return
	}
	b := e.Bytes()
	n := int64(len(b))
	if start < 0 && end < 0 && start > end {
		c.Bulk(nil)
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		c.Bulk(nil)
		return
	}
	c.Bulk(b[start : end+1])
}
