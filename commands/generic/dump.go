package generic

import (
	"errors"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/store"
)

// DUMP and RESTORE (RESTORE-ASKING is RESTORE under another name; its
// ASKING flag is the router's business), built on the Redis 7.0 value
// serialization of package rdb (Redis's cluster.c dumpCommand and
// restoreCommand). MIGRATE, which sends DUMP payloads to another server,
// stays in node: its connection cache is the server's (package migrate).

// DUMP key
func cmdDump(c *command.Ctx, args [][]byte) {
	e := c.DB().Find(args[1])
	if e == nil {
		c.Null()
		return
	}
	c.Bulk(rdb.Encoder{Compress: c.Config().Bool("rdbcompression")}.DumpPayload(e))
}

// restoreOptions are RESTORE's parsed options; idle and freq are -1 when
// not given.
type restoreOptions struct {
	replace, absTTL bool
	idle, freq      int64
}

// parseRestoreOptions parses the options after the payload as
// restoreCommand does (IDLETIME and FREQ exclude each other: the second
// one is a syntax error), replying the error itself.
func parseRestoreOptions(c *command.Ctx, args [][]byte) (restoreOptions, bool) {
	o := restoreOptions{idle: -1, freq: -1}
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch a := args[j]; {
		case command.ArgIs(a, "replace"):
			o.replace = true
		case command.ArgIs(a, "absttl"):
			o.absTTL = true
		case command.ArgIs(a, "idletime") && more >= 1 && o.freq == -1:
			v, ok := command.ParseInt64(args[j+1])
			if !ok {
				c.ErrNotInteger()
				return o, false
			}
			if v < 0 {
				c.Error("ERR Invalid IDLETIME value, must be >= 0")
				return o, false
			}
			o.idle = v
			j++
		case command.ArgIs(a, "freq") && more >= 1 && o.idle == -1:
			v, ok := command.ParseInt64(args[j+1])
			if !ok {
				c.ErrNotInteger()
				return o, false
			}
			if v < 0 || v > 255 {
				c.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return o, false
			}
			o.freq = v
			j++
		default:
			c.ErrSyntax()
			return o, false
		}
	}
	return o, true
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
//
// The checks come in Redis's order: options, BUSYKEY, TTL, the payload's
// footer, the payload's value. A TTL already in the past stores nothing
// (and deletes the old key under REPLACE, propagated as DEL). A relative
// TTL is propagated as the absolute one with ABSTTL, so that replicas and
// the AOF restore the same expiry.
func cmdRestore(c *command.Ctx, args [][]byte) {
	o, ok := parseRestoreOptions(c, args)
	if !ok {
		return
	}
	db := c.DB()
	key := args[1]
	if !o.replace && db.Lookup(key, store.LookupNoStats) != nil {
		c.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if ttl < 0 {
		c.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	obj, err := rdb.DecodePayload(args[3], command.RDBLimits(c.Config()))
	if err != nil {
		if errors.Is(err, rdb.ErrChecksum) {
			c.Error("ERR DUMP payload version or checksum are wrong")
		} else {
			c.Error("ERR Bad data format")
		}
		return
	}
	deleted := o.replace && db.Delete(key)
	now := c.NowMs()
	if ttl != 0 && !o.absTTL {
		ttl += now
	}
	// checkAlreadyExpired: a replica keeps what its master sends.
	if ttl != 0 && ttl <= now && !c.Keyspace().ReplicaMode() {
		if deleted {
			c.ReplaceEffect([]byte("DEL"), key)
			c.Notify(config.NotifyGeneric, "del", key)
		} else {
			c.NoEffect()
		}
		c.OK()
		return
	}
	e := obj.SetIn(db.DB, key)
	if ttl != 0 {
		db.SetExpire(key, e, ttl)
		if !o.absTTL {
			fx := make([][]byte, 0, len(args)+1)
			fx = append(fx, args[0], key, strconv.AppendInt(nil, ttl, 10))
			fx = append(fx, args[3:]...)
			fx = append(fx, []byte("ABSTTL"))
			c.ReplaceEffect(fx...)
		}
	}
	c.Keyspace().RestoreAccess(e, o.idle, o.freq) // objectSetLRUOrLFU
	c.SignalKeyReady(key)
	c.Notify(config.NotifyGeneric, "restore", key)
	c.OK()
}
