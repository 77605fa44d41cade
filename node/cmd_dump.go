package node

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/command"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/migrate"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/store"
)

// dumpHandlers: DUMP, RESTORE, RESTORE-ASKING and MIGRATE, built on the
// Redis 7.0 value serialization of package rdb (Redis's cluster.c
// dumpCommand, restoreCommand, migrateCommand). RESTORE-ASKING is RESTORE
// under another name; its ASKING flag is the router's business.
func dumpHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"dump":           cmdDump,
		"restore":        cmdRestore,
		"restore-asking": cmdRestore,
		"migrate":        cmdMigrate,
	}
}

// rdbLimits returns the thresholds a restored value is encoded by: the
// server's current *-max-listpack-* settings, as if its elements had been
// written here one by one.
func rdbLimits(cfg *config.Config) rdb.Limits {
	lim := rdb.Limits{
		HashMaxListpackEntries: cfg.Int("hash-max-listpack-entries"),
		HashMaxListpackValue:   cfg.Int("hash-max-listpack-value"),
		SetMaxIntsetEntries:    cfg.Int("set-max-intset-entries"),
		ZSetMaxListpackEntries: cfg.Int("zset-max-listpack-entries"),
		ZSetMaxListpackValue:   cfg.Int("zset-max-listpack-value"),
		ListMaxListpackSize:    cfg.Int("list-max-listpack-size"),
		StreamNodeMaxBytes:     cfg.Int("stream-node-max-bytes"),
		StreamNodeMaxEntries:   cfg.Int("stream-node-max-entries"),
		MaxString:              int(cfg.Int("proto-max-bulk-len")),
	}
	return lim
}

// DUMP key
func cmdDump(c *Client, args [][]byte) {
	e := c.DB().Find(args[1])
	if e == nil {
		c.Null()
		return
	}
	c.Bulk(rdb.DumpPayload(e))
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
func parseRestoreOptions(c *Client, args [][]byte) (restoreOptions, bool) {
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
func cmdRestore(c *Client, args [][]byte) {
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
	obj, err := rdb.DecodePayload(args[3], rdbLimits(c.srv.cfg))
	if err != nil {
		if errors.Is(err, rdb.ErrChecksum) {
			c.Error("ERR DUMP payload version or checksum are wrong")
		} else {
			c.Error("ERR Bad data format")
		}
		return
	}
	deleted := o.replace && db.Delete(key)
	now := c.srv.ks.Now()
	if ttl != 0 && !o.absTTL {
		ttl += now
	}
	// checkAlreadyExpired: a replica keeps what its master sends.
	if ttl != 0 && ttl <= now && !c.srv.ks.ReplicaMode() {
		if deleted {
			c.ReplaceEffect([]byte("DEL"), key)
		} else {
			c.NoEffect()
		}
		c.OK()
		return
	}
	e := obj.SetIn(db, key)
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
	// objectSetLRUOrLFU: IDLETIME sets the LRU clock unless an LFU policy is
	// in force. The keyspace keeps no LFU counter, so FREQ is validated and
	// otherwise has no effect.
	if o.idle >= 0 && c.srv.cfg.Int("maxmemory-policy")&config.MaxmemoryFlagLFU == 0 {
		c.srv.ks.SetIdleMillis(e, o.idle*1000)
	}
	c.signalKeyReady(key)
	c.OK()
}

// migrateGetKeys is Redis's migrateGetKeys: the key argument, or with the
// KEYS option every argument after it (the empty key argument then names
// no key). AUTH and AUTH2 values are skipped so that a password "keys" is
// not taken for the option.
func migrateGetKeys(args [][]byte) ([]int, error) {
	first, num := 3, 1
	for i := 6; i < len(args); i++ {
		switch a := args[i]; {
		case command.ArgIs(a, "keys"):
			if len(args[3]) != 0 {
				return nil, nil
			}
			first, num = i+1, len(args)-i-1
			i = len(args)
		case command.ArgIs(a, "auth"):
			i++
		case command.ArgIs(a, "auth2"):
			i += 2
		}
	}
	keys := make([]int, num)
	for j := range keys {
		keys[j] = first + j
	}
	return keys, nil
}

// migrateRequest is a parsed MIGRATE.
type migrateRequest struct {
	host, port         string
	db                 int64
	timeout            time.Duration
	copy, replace      bool
	username, password []byte
	hasAuth            bool
	keys               [][]byte
}

// parseMigrate parses MIGRATE's arguments as migrateCommand does, replying
// the error itself.
func parseMigrate(c *Client, args [][]byte) (migrateRequest, bool) {
	m := migrateRequest{host: string(args[1]), port: string(args[2])}
	first, num := 3, 1
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch a := args[j]; {
		case command.ArgIs(a, "copy"):
			m.copy = true
		case command.ArgIs(a, "replace"):
			m.replace = true
		case command.ArgIs(a, "auth"):
			if more == 0 {
				c.ErrSyntax()
				return m, false
			}
			j++
			m.password, m.hasAuth = args[j], true
		case command.ArgIs(a, "auth2"):
			if more < 2 {
				c.ErrSyntax()
				return m, false
			}
			m.username, m.password, m.hasAuth = args[j+1], args[j+2], true
			j += 2
		case command.ArgIs(a, "keys"):
			if len(args[3]) != 0 {
				c.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return m, false
			}
			first, num = j+1, len(args)-j-1
			j = len(args)
		default:
			c.ErrSyntax()
			return m, false
		}
	}
	timeout, ok1 := command.ParseInt64(args[5])
	db, ok2 := command.ParseInt64(args[4])
	// getLongFromObjectOrReply: timeout first, then the db.
	if !ok1 || !ok2 {
		c.ErrNotInteger()
		return m, false
	}
	if timeout <= 0 {
		timeout = 1000
	}
	m.timeout = time.Duration(min(timeout, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	m.db = db
	m.keys = args[first : first+num]
	return m, true
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// The exchange with the target is migrate.ConnCache.Migrate; the
// acknowledged keys are deleted unless COPY, and those deletions propagate
// as DEL. The network I/O runs while the dispatcher holds the keys' slot
// locks (Redis blocks entirely).
func cmdMigrate(c *Client, args [][]byte) {
	m, ok := parseMigrate(c, args)
	if !ok {
		return
	}
	db := c.DB()
	var keys []migrate.Key
	for _, k := range m.keys {
		if e := db.Find(k); e != nil {
			keys = append(keys, migrate.Key{Name: k, Entry: e})
		}
	}
	if len(keys) == 0 {
		c.NoEffect()
		c.Status("NOKEY")
		return
	}
	req := migrate.Request{Host: m.host, Port: m.port, DB: m.db, Timeout: m.timeout, Replace: m.replace,
		Auth: m.hasAuth, Username: m.username, Password: m.password, AskingRestore: c.srv.cfg.ClusterEnabled()}
	var deletedKeys [][]byte
	err := c.srv.migrateConns.Migrate(req, keys, c.srv.ks.Now, func(key []byte) {
		if !m.copy {
			db.Delete(key)
			deletedKeys = append(deletedKeys, key)
		}
	})
	if err != nil {
		c.Error(err.Error())
	} else {
		c.OK()
	}
	if len(deletedKeys) > 0 {
		c.ReplaceEffect(append([][]byte{[]byte("DEL")}, deletedKeys...)...)
	} else {
		c.NoEffect()
	}
}
