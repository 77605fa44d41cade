// Package hash holds the hash commands (Redis 7.0's "hash" group).
package hash

import (
	"bytes"
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// Handlers returns the hash commands' handlers by command name.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"hset":         cmdHSet,
		"hmset":        cmdHSet,
		"hsetnx":       cmdHSetNX,
		"hget":         cmdHGet,
		"hmget":        cmdHMGet,
		"hdel":         cmdHDel,
		"hlen":         cmdHLen,
		"hstrlen":      cmdHStrlen,
		"hexists":      cmdHExists,
		"hkeys":        cmdHKeys,
		"hvals":        cmdHVals,
		"hgetall":      cmdHGetAll,
		"hincrby":      cmdHIncrBy,
		"hincrbyfloat": cmdHIncrByFloat,
		"hrandfield":   cmdHRandField,
		"hscan":        cmdHScan,
	}
}

// hashLimits returns hash-max-listpack-entries and hash-max-listpack-value,
// read at every write as Redis reads them.
func hashLimits(c *command.Ctx) (maxEntries, maxValue int64) {
	cfg := c.Config()
	return cfg.Int("hash-max-listpack-entries"), cfg.Int("hash-max-listpack-value")
}

// readHash is Redis's lookupKeyRead + checkType for hashes: it returns the
// hash at key (nil when missing, counting a keyspace miss), or replies
// WRONGTYPE and returns ok == false.
func readHash(c *command.Ctx, key []byte) (*store.Hash, bool) {
	return command.LookupTyped(c, c.DB(), key, false, store.TypeHash, (*store.Entry).Hash)
}

// writeHash is lookupKeyWrite + checkType: no keyspace hit/miss counted.
func writeHash(c *command.Ctx, key []byte) (*store.Hash, bool) {
	return command.LookupTyped(c, c.DB(), key, true, store.TypeHash, (*store.Entry).Hash)
}

// writeHashOrCreate is Redis's hashTypeLookupWriteOrCreate: the hash at key,
// a new empty one stored under key when missing, or nil after replying
// WRONGTYPE. Callers create only when they are sure to add a field, so an
// empty hash never stays in the keyspace.
func writeHashOrCreate(c *command.Ctx, key []byte) *store.Hash {
	h, ok := writeHash(c, key)
	if !ok {
		return nil
	}
	if h == nil {
		h = createHash(c, key)
	}
	return h
}

// createHash stores a new empty hash under key (which is missing).
func createHash(c *command.Ctx, key []byte) *store.Hash {
	h := store.NewHash()
	c.DB().SetValue(key, h)
	return h
}

// HSET key field value [field value ...] / HMSET (same, replies OK).
func cmdHSet(c *command.Ctx, args [][]byte) {
	isHSet := len(args[0]) > 1 && (args[0][1] == 's' || args[0][1] == 'S')
	if len(args)%2 == 1 {
		if isHSet {
			c.ErrArity("hset")
		} else {
			c.ErrArity("hmset")
		}
		return
	}
	h := writeHashOrCreate(c, args[1])
	if h == nil {
		return
	}
	maxEntries, maxValue := hashLimits(c)
	h.TryConvert(maxValue, args[2:])
	if len(args) > 4 {
		h.Reserve(args[2:])
	}
	created := 0
	for i := 2; i < len(args); i += 2 {
		if h.Set(args[i], args[i+1], maxEntries, maxValue) {
			created++
		}
	}
	c.Dirty(int64(len(args)-2) / 2) // every field set counts, new or not, as Redis
	if isHSet {
		c.Int(int64(created))
	} else {
		c.OK()
	}
	c.Notify(config.NotifyHash, "hset", args[1]) // after the reply, as Redis
}

// HSETNX key field value
func cmdHSetNX(c *command.Ctx, args [][]byte) {
	h, ok := writeHash(c, args[1])
	if !ok {
		return
	}
	if h != nil && h.Exists(args[2]) {
		c.Int(0)
		c.NoEffect()
		return
	}
	if h == nil {
		h = createHash(c, args[1])
	}
	maxEntries, maxValue := hashLimits(c)
	h.TryConvert(maxValue, args[2:4])
	h.Set(args[2], args[3], maxEntries, maxValue)
	c.Int(1)
	c.Notify(config.NotifyHash, "hset", args[1])
}

// HGET key field
func cmdHGet(c *command.Ctx, args [][]byte) {
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	if h == nil {
		c.Null()
		return
	}
	replyHashField(c, h, args[2])
}

func replyHashField(c *command.Ctx, h *store.Hash, field []byte) {
	if h != nil {
		if v, found := h.Get(field); found {
			c.Bulk(v)
			return
		}
	}
	c.Null()
}

// HMGET key field [field ...]: a missing key is an empty hash.
func cmdHMGet(c *command.Ctx, args [][]byte) {
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	c.Array(len(args) - 2)
	for _, f := range args[2:] {
		replyHashField(c, h, f)
	}
}

// HDEL key field [field ...]
func cmdHDel(c *command.Ctx, args [][]byte) {
	h, ok := writeHash(c, args[1])
	if !ok {
		return
	}
	deleted, keyRemoved := 0, false
	if h != nil {
		for _, f := range args[2:] {
			if h.Delete(f) {
				deleted++
				if h.Len() == 0 {
					c.DB().Delete(args[1])
					keyRemoved = true
					break
				}
			}
		}
	}
	if deleted > 0 {
		c.Notify(config.NotifyHash, "hdel", args[1])
		if keyRemoved {
			c.Notify(config.NotifyGeneric, "del", args[1])
		}
	}
	c.Int(int64(deleted))
	c.Changed(int64(deleted)) // nothing changed: not propagated, as Redis
}

// HLEN key
func cmdHLen(c *command.Ctx, args [][]byte) {
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	if h == nil {
		c.Int(0)
		return
	}
	c.Int(int64(h.Len()))
}

// HSTRLEN key field
func cmdHStrlen(c *command.Ctx, args [][]byte) {
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	n := 0
	if h != nil {
		v, _ := h.Get(args[2])
		n = len(v)
	}
	c.Int(int64(n))
}

// HEXISTS key field
func cmdHExists(c *command.Ctx, args [][]byte) {
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	if h != nil && h.Exists(args[2]) {
		c.Int(1)
	} else {
		c.Int(0)
	}
}

func cmdHKeys(c *command.Ctx, args [][]byte)   { hashGetAll(c, args[1], true, false) }
func cmdHVals(c *command.Ctx, args [][]byte)   { hashGetAll(c, args[1], false, true) }
func cmdHGetAll(c *command.Ctx, args [][]byte) { hashGetAll(c, args[1], true, true) }

// hashGetAll is Redis's genericHgetallCommand: HGETALL replies a map,
// HKEYS and HVALS flat arrays; a missing key is an empty map or array.
func hashGetAll(c *command.Ctx, key []byte, fields, values bool) {
	h, ok := readHash(c, key)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if fields && values {
		c.Map(n)
	} else {
		c.Array(n)
	}
	if h == nil {
		return
	}
	for f, v := range h.All() {
		if fields {
			c.Bulk(f)
		}
		if values {
			c.Bulk(v)
		}
	}
}

// HINCRBY key field increment
func cmdHIncrBy(c *command.Ctx, args [][]byte) {
	incr, ok := command.ParseInt64(args[3])
	if !ok {
		c.ErrNotInteger()
		return
	}
	h, ok := writeHash(c, args[1])
	if !ok {
		return
	}
	var cur int64
	if h != nil {
		if v, found := h.Get(args[2]); found {
			if cur, ok = command.ParseInt64(v); !ok {
				c.Error("ERR hash value is not an integer")
				return
			}
		}
	}
	if incr < 0 && cur < 0 && incr < math.MinInt64-cur || incr > 0 && cur > 0 && incr > math.MaxInt64-cur {
		c.ErrOverflow()
		return
	}
	cur += incr
	if h == nil {
		h = createHash(c, args[1])
	}
	var buf [24]byte
	maxEntries, maxValue := hashLimits(c)
	h.Set(args[2], strconv.AppendInt(buf[:0], cur, 10), maxEntries, maxValue)
	c.Int(cur)
	c.Notify(config.NotifyHash, "hincrby", args[1])
}

// HINCRBYFLOAT key field increment: long double arithmetic and formatting,
// as INCRBYFLOAT (see longDouble).
func cmdHIncrByFloat(c *command.Ctx, args [][]byte) {
	incr, ok := strconvx.ParseLongDouble(args[3])
	if !ok {
		c.ErrNotFloat()
		return
	}
	if incr.IsInf() {
		c.Error("ERR value is NaN or Infinity")
		return
	}
	h, ok := writeHash(c, args[1])
	if !ok {
		return
	}
	var cur strconvx.LongDouble // +0
	if h != nil {
		if v, found := h.Get(args[2]); found {
			if cur, ok = strconvx.ParseLongDouble(v); !ok {
				c.Error("ERR hash value is not a float")
				return
			}
		}
	}
	sum, finite := cur.Add(incr)
	if !finite {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	var buf [64]byte
	out := sum.AppendHuman(buf[:0])
	if h == nil {
		h = createHash(c, args[1])
	}
	maxEntries, maxValue := hashLimits(c)
	h.Set(args[2], out, maxEntries, maxValue)
	c.Bulk(out)
	c.Notify(config.NotifyHash, "hincrbyfloat", args[1])
	// The final value, not the increment: float formatting may differ.
	c.ReplaceEffect(argHSET, args[1], args[2], bytes.Clone(out))
}

// hrandfieldMaxWithValues bounds |count| with WITHVALUES (Redis's
// LONG_MAX/2, so that the reply length cannot overflow).
const hrandfieldMaxWithValues = math.MaxInt64 / 2

// HRANDFIELD key [count [WITHVALUES]]
func cmdHRandField(c *command.Ctx, args [][]byte) {
	if len(args) >= 3 {
		l, ok := command.ParseInt64(args[2])
		if !ok {
			c.ErrNotInteger()
			return
		}
		if l < -math.MaxInt64 {
			c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		withValues := false
		if len(args) > 4 || len(args) == 4 && !command.ArgIs(args[3], "withvalues") {
			c.ErrSyntax()
			return
		} else if len(args) == 4 {
			withValues = true
			if l < -hrandfieldMaxWithValues || l > hrandfieldMaxWithValues {
				c.Error("ERR value is out of range")
				return
			}
		}
		hashRandFieldCount(c, args[1], l, withValues)
		return
	}
	h, ok := readHash(c, args[1])
	if !ok {
		return
	}
	if h == nil {
		c.Null()
		return
	}
	f, _ := h.RandomPair()
	c.Bulk(f)
}

// hashRandFieldCount is Redis's hrandfieldWithCountCommand: a negative
// count samples with repetition, a positive one returns distinct fields
// (everything when count >= HLEN).
func hashRandFieldCount(c *command.Ctx, key []byte, l int64, withValues bool) {
	h, ok := readHash(c, key)
	if !ok {
		return
	}
	if h == nil || l == 0 {
		c.Array(0)
		return
	}
	size := h.Len()
	uniq := l > 0
	count := l
	if !uniq {
		count = -l
	}
	replyLen := func(n int) {
		if withValues && c.Proto == 2 {
			c.Array(2 * n)
		} else {
			c.Array(n)
		}
	}
	pair := func(f, v []byte) {
		if withValues && c.Proto > 2 {
			c.Array(2)
		}
		c.Bulk(f)
		if withValues {
			c.Bulk(v)
		}
	}
	if !uniq || count == 1 {
		if !command.RandomReplyFits(c, count, h.DataBytes()/size, withValues) {
			return
		}
		replyLen(int(count))
		h.RandomPairs(int(count), func(f, v []byte) bool {
			pair(f, v)
			return !c.ReplyOverLimit()
		})
		return
	}
	if count >= int64(size) {
		replyLen(size)
		for f, v := range h.All() {
			pair(f, v)
		}
		return
	}
	replyLen(int(count))
	h.RandomDistinctPairs(int(count), pair)
}

// argHSET is the command word of HINCRBYFLOAT's effect (Redis's
// shared.hset). Read-only.
var argHSET = []byte("HSET")
