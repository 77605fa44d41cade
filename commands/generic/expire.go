package generic

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// The expiry commands (Redis 7.0's expire.c).

// The words of the rewritten effects (Redis's shared objects, as in
// node/replication_effects.go). Read-only.
var (
	argDEL       = []byte("DEL")
	argPEXPIREAT = []byte("PEXPIREAT")
)

// expireCond is EXPIRE's NX / XX / GT / LT.
type expireCond uint8

const (
	expireNX expireCond = 1 << iota
	expireXX
	expireGT
	expireLT
)

// parseExpireConds parses the options after the time and replies the error
// itself when they are invalid or incompatible.
func parseExpireConds(c *command.Ctx, opts [][]byte) (expireCond, bool) {
	var f expireCond
	for _, o := range opts {
		switch {
		case command.ArgIs(o, "nx"):
			f |= expireNX
		case command.ArgIs(o, "xx"):
			f |= expireXX
		case command.ArgIs(o, "gt"):
			f |= expireGT
		case command.ArgIs(o, "lt"):
			f |= expireLT
		default:
			c.Error("ERR Unsupported option " + command.CString(o))
			return 0, false
		}
	}
	if f&expireNX != 0 && f&(expireXX|expireGT|expireLT) != 0 {
		c.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return 0, false
	}
	if f&expireGT != 0 && f&expireLT != 0 {
		c.Error("ERR GT and LT options at the same time are not compatible")
		return 0, false
	}
	return f, true
}

// EXPIRE key seconds [NX | XX | GT | LT]
func cmdExpire(c *command.Ctx, args [][]byte) { expireGeneric(c, args, "expire", true, true) }

// PEXPIRE key milliseconds [NX | XX | GT | LT]
func cmdPExpire(c *command.Ctx, args [][]byte) { expireGeneric(c, args, "pexpire", true, false) }

// EXPIREAT key unix-time-seconds [NX | XX | GT | LT]
func cmdExpireAt(c *command.Ctx, args [][]byte) { expireGeneric(c, args, "expireat", false, true) }

// PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]
func cmdPExpireAt(c *command.Ctx, args [][]byte) { expireGeneric(c, args, "pexpireat", false, false) }

// expireGeneric sets key's expiry from args[2]: relative to now or absolute,
// in seconds or milliseconds. A deadline that has already passed deletes the
// key (and still answers 1), as Redis does on a master.
func expireGeneric(c *command.Ctx, args [][]byte, name string, relative, seconds bool) {
	conds, ok := parseExpireConds(c, args[3:])
	if !ok {
		return
	}
	when, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	db := c.DB()
	ks := db.Keyspace()
	// Negative times are allowed; only the conversions may overflow.
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		when *= 1000
	}
	if relative {
		base := ks.Now()
		if when > math.MaxInt64-base {
			c.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		when += base
	}
	key := args[1]
	e := db.Lookup(key, store.LookupNoStats)
	if e == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	if conds != 0 {
		cur := e.ExpireAt() // 0: no expiry, which GT and LT treat as infinite
		switch {
		case conds&expireNX != 0 && cur != 0,
			conds&expireXX != 0 && cur == 0,
			conds&expireGT != 0 && (cur == 0 || when <= cur),
			conds&expireLT != 0 && cur != 0 && when >= cur:
			c.Int(0)
			c.NoEffect()
			return
		}
	}
	// A time already past deletes the key, propagated as DEL; a replica
	// keeps it until its master's DEL (checkAlreadyExpired).
	if when <= ks.Now() && !ks.ReplicaMode() {
		db.Delete(key)
		c.ReplaceEffect(argDEL, key)
		c.Notify(config.NotifyGeneric, "del", key)
		c.Int(1)
		return
	}
	db.SetExpire(key, e, when)
	// Propagated as PEXPIREAT with the absolute time, the options kept.
	fx := make([][]byte, 0, len(args))
	fx = append(fx, argPEXPIREAT, key, strconv.AppendInt(nil, when, 10))
	c.ReplaceEffect(append(fx, args[3:]...)...)
	c.Int(1)
	c.Notify(config.NotifyGeneric, "expire", key) // after the reply, as Redis
}

// TTL key
func cmdTTL(c *command.Ctx, args [][]byte) { ttlGeneric(c, args, false, false) }

// PTTL key
func cmdPTTL(c *command.Ctx, args [][]byte) { ttlGeneric(c, args, true, false) }

// EXPIRETIME key
func cmdExpireTime(c *command.Ctx, args [][]byte) { ttlGeneric(c, args, false, true) }

// PEXPIRETIME key
func cmdPExpireTime(c *command.Ctx, args [][]byte) { ttlGeneric(c, args, true, true) }

// ttlGeneric answers -2 for a missing key, -1 for a key without expiry,
// else the remaining time (or the deadline), never below 0; seconds are
// rounded to the nearest one.
func ttlGeneric(c *command.Ctx, args [][]byte, millis, absolute bool) {
	db := c.DB()
	e := db.Lookup(args[1], store.LookupNoTouch)
	if e == nil {
		c.Int(-2)
		return
	}
	at := e.ExpireAt()
	if at == 0 {
		c.Int(-1)
		return
	}
	ttl := at
	if !absolute {
		ttl = at - db.Keyspace().Now()
	}
	if ttl < 0 {
		ttl = 0
	}
	if !millis {
		// Unsigned, so that a deadline near 2^63 ms rounds without
		// wrapping (Redis's compiled arithmetic gives the exact result).
		ttl = int64((uint64(ttl) + 500) / 1000)
	}
	c.Int(ttl)
}

// PERSIST key
func cmdPersist(c *command.Ctx, args [][]byte) {
	db := c.DB()
	e := db.Lookup(args[1], store.LookupNoStats)
	if e == nil || e.ExpireAt() == 0 {
		c.Int(0)
		c.NoEffect()
		return
	}
	db.SetExpire(args[1], e, 0)
	c.Notify(config.NotifyGeneric, "persist", args[1])
	c.Int(1)
}
