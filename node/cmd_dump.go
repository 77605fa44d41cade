package node

import (
	"errors"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/resp"

	"github.com/shoal-db/shoal/config"
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
		case argIs(a, "replace"):
			o.replace = true
		case argIs(a, "absttl"):
			o.absTTL = true
		case argIs(a, "idletime") && more >= 1 && o.freq == -1:
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
		case argIs(a, "freq") && more >= 1 && o.idle == -1:
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
		case argIs(a, "keys"):
			if len(args[3]) != 0 {
				return nil, nil
			}
			first, num = i+1, len(args)-i-1
			i = len(args)
		case argIs(a, "auth"):
			i++
		case argIs(a, "auth2"):
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
		case argIs(a, "copy"):
			m.copy = true
		case argIs(a, "replace"):
			m.replace = true
		case argIs(a, "auth"):
			if more == 0 {
				c.ErrSyntax()
				return m, false
			}
			j++
			m.password, m.hasAuth = args[j], true
		case argIs(a, "auth2"):
			if more < 2 {
				c.ErrSyntax()
				return m, false
			}
			m.username, m.password, m.hasAuth = args[j+1], args[j+2], true
			j += 2
		case argIs(a, "keys"):
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

// migrateAddr is the address Redis's connect would use: the port as atoi
// reads it.
func migrateAddr(host, port string) string {
	n := 0
	for i := 0; i < len(port) && port[i] >= '0' && port[i] <= '9' && n < 1<<20; i++ {
		n = n*10 + int(port[i]-'0')
	}
	return net.JoinHostPort(host, strconv.Itoa(n))
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// It pipelines [AUTH], [SELECT] and one RESTORE (RESTORE-ASKING in cluster
// mode) per live key to the target, reads one reply line for each, deletes
// the acknowledged keys unless COPY, and propagates those deletions as DEL.
// The network I/O runs while the dispatcher holds the keys' slot locks
// (Redis blocks entirely); as in Redis, the timeout argument bounds each
// step: the connect, each 64 KiB written, each reply line read.
// A socket error before any RESTORE was acknowledged is retried once on a
// fresh connection, unless it was a timeout.
func cmdMigrate(c *Client, args [][]byte) {
	m, ok := parseMigrate(c, args)
	if !ok {
		return
	}
	db := c.DB()
	type item struct {
		key []byte
		e   *store.Entry
	}
	var items []item
	for _, k := range m.keys {
		if e := db.Find(k); e != nil {
			items = append(items, item{k, e})
		}
	}
	if len(items) == 0 {
		c.NoEffect()
		c.Status("NOKEY")
		return
	}
	restoreCmd := []byte("RESTORE")
	if c.srv.cfg.ClusterEnabled() {
		restoreCmd = []byte("RESTORE-ASKING")
	}
	cache := &c.srv.migrateConns
	name := m.host + ":" + m.port
	addr := migrateAddr(m.host, m.port)
	var deletedKeys [][]byte
	defer func() {
		if len(deletedKeys) > 0 {
			c.ReplaceEffect(append([][]byte{[]byte("DEL")}, deletedKeys...)...)
		} else {
			c.NoEffect()
		}
	}()

	for attempt := 0; attempt < 2; attempt++ {
		mayRetry := attempt == 0
		cn, err := cache.get(name, addr, m.timeout)
		if errors.Is(err, errMigrateRefused) {
			if mayRetry {
				continue
			}
			c.Error("IOERR error or timeout writing to target instance")
			return
		}
		if err != nil {
			c.Error("IOERR error or timeout connecting to the client")
			return
		}
		var buf []byte
		if m.hasAuth {
			if m.username != nil {
				buf = resp.AppendCommand(buf, []byte("AUTH"), m.username, m.password)
			} else {
				buf = resp.AppendCommand(buf, []byte("AUTH"), m.password)
			}
		}
		sel := cn.lastDB != m.db
		if sel {
			buf = resp.AppendCommand(buf, []byte("SELECT"), strconv.AppendInt(nil, m.db, 10))
		}
		// Keys that expired since the lookup are skipped; a TTL under one
		// millisecond becomes one.
		now := c.srv.ks.Now()
		sent := items[:0:0]
		for _, it := range items {
			var ttl int64
			if at := it.e.ExpireAt(); at != 0 {
				ttl = at - now
				if ttl < 0 {
					continue
				}
				ttl = max(ttl, 1)
			}
			sent = append(sent, it)
			argv := [][]byte{restoreCmd, it.key, strconv.AppendInt(nil, ttl, 10), rdb.DumpPayload(it.e)}
			if m.replace {
				argv = append(argv, []byte("REPLACE"))
			}
			buf = resp.AppendCommand(buf, argv...)
		}

		fail := func(werr bool, err error) bool {
			// socket_err: close, retry once unless it was a timeout.
			cache.discard(cn)
			if mayRetry && !errors.Is(err, errMigrateTimeout) {
				return true
			}
			what := "reading"
			if werr {
				what = "writing"
			}
			c.Error("IOERR error or timeout " + what + " to target instance")
			return false
		}
		if err := cn.write(buf, m.timeout); err != nil {
			if fail(true, err) {
				continue
			}
			return
		}
		var authReply, selReply string
		if m.hasAuth {
			if authReply, err = cn.readLine(m.timeout); err != nil {
				if fail(false, err) {
					continue
				}
				return
			}
		}
		if sel {
			if selReply, err = cn.readLine(m.timeout); err != nil {
				if fail(false, err) {
					continue
				}
				return
			}
		}
		targetErr := false
		socketErr := error(nil)
		j := 0
		for ; j < len(sent); j++ {
			reply, err := cn.readLine(m.timeout)
			if err != nil {
				socketErr = err
				break
			}
			if m.hasAuth && authReply[0] == '-' || sel && selReply[0] == '-' || reply[0] == '-' {
				if !targetErr {
					cn.lastDB = -1
					msg := reply
					if m.hasAuth && authReply[0] == '-' {
						msg = authReply
					} else if sel && selReply[0] == '-' {
						msg = selReply
					}
					targetErr = true
					c.Error("ERR Target instance replied with error: " + msg[1:])
				}
				continue
			}
			if !m.copy {
				db.Delete(sent[j].key)
				deletedKeys = append(deletedKeys, sent[j].key)
			}
		}
		if socketErr != nil {
			if !targetErr && j == 0 && mayRetry && !errors.Is(socketErr, errMigrateTimeout) {
				cache.discard(cn)
				continue
			}
			cache.discard(cn)
			if !targetErr {
				c.Error("IOERR error or timeout reading to target instance")
			}
			return
		}
		if !targetErr {
			cn.lastDB = m.db
			c.OK()
		}
		cache.put(cn)
		return
	}
}
