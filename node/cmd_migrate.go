package node

import (
	"math"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/migrate"
)

// migrateHandlers: MIGRATE (Redis's cluster.c migrateCommand), which sends
// DUMP payloads (package rdb) to another server through the server's
// connection cache (package migrate). DUMP and RESTORE are in
// commands/generic.
func migrateHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{"migrate": cmdMigrate}
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
		Auth: m.hasAuth, Username: m.username, Password: m.password, AskingRestore: c.srv.cfg.ClusterEnabled(),
		Encoding: c.srv.rdbEncoder()}
	var deletedKeys [][]byte
	err := c.srv.migrateConns.Migrate(req, keys, c.srv.ks.Now, func(key []byte) {
		if !m.copy {
			db.Delete(key)
			c.Notify(config.NotifyGeneric, "del", key)
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
