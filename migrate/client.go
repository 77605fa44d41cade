package migrate

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
)

// The client side of the MIGRATE command (Redis's migrateCommand): it
// pipelines [AUTH], [SELECT] and one RESTORE (RESTORE-ASKING in cluster
// mode) per live key to the target over a cached connection and reads one
// reply line for each. As in Redis, the timeout bounds each step: the
// connect, each 64 KiB written, each reply line read. A socket error before
// any RESTORE was acknowledged is retried once on a fresh connection,
// unless it was a timeout.

// Request is one MIGRATE's target and options.
type Request struct {
	Host, Port string // as the command named them
	DB         int64
	Timeout    time.Duration
	Replace    bool
	// Auth sends AUTH Password, or AUTH Username Password when Username is
	// not nil.
	Auth               bool
	Username, Password []byte
	// AskingRestore sends RESTORE-ASKING (cluster mode) instead of RESTORE.
	AskingRestore bool
	// Encoding writes the payloads (rdbcompression).
	Encoding rdb.Encoder
}

// Key is one key to move: its name and its entry, looked up by the caller,
// who holds the key's slot lock for the whole exchange.
type Key struct {
	Name  []byte
	Entry *store.Entry
}

// Addr is the address Redis's connect would use for host and port: the
// port as atoi reads it.
func Addr(host, port string) string {
	n := 0
	for i := 0; i < len(port) && port[i] >= '0' && port[i] <= '9' && n < 1<<20; i++ {
		n = n*10 + int(port[i]-'0')
	}
	return net.JoinHostPort(host, strconv.Itoa(n))
}

// Migrate sends keys to the target of req. now is the keyspace's clock
// (unix ms): keys that expired since the lookup are skipped, and a TTL under
// one millisecond becomes one. acked is called for each key the target
// restored, in order, as its reply arrives. The error is MIGRATE's error
// reply (nil: +OK): "IOERR ..." for a connection failure, "ERR Target
// instance replied with error: ..." for the target's first error; keys
// acknowledged before a failure stay acknowledged.
func (mc *ConnCache) Migrate(req Request, keys []Key, now func() int64, acked func(name []byte)) error {
	restoreCmd := []byte("RESTORE")
	if req.AskingRestore {
		restoreCmd = []byte("RESTORE-ASKING")
	}
	name := req.Host + ":" + req.Port
	addr := Addr(req.Host, req.Port)
	for attempt := 0; attempt < 2; attempt++ {
		mayRetry := attempt == 0
		cn, err := mc.get(name, addr, req.Timeout)
		if errors.Is(err, errRefused) {
			if mayRetry {
				continue
			}
			return errors.New("IOERR error or timeout writing to target instance")
		}
		if err != nil {
			return errors.New("IOERR error or timeout connecting to the client")
		}
		var buf []byte
		if req.Auth {
			if req.Username != nil {
				buf = resp.AppendCommand(buf, []byte("AUTH"), req.Username, req.Password)
			} else {
				buf = resp.AppendCommand(buf, []byte("AUTH"), req.Password)
			}
		}
		sel := cn.lastDB != req.DB
		if sel {
			buf = resp.AppendCommand(buf, []byte("SELECT"), strconv.AppendInt(nil, req.DB, 10))
		}
		ms := now()
		sent := keys[:0:0]
		for _, k := range keys {
			var ttl int64
			if at := k.Entry.ExpireAt(); at != 0 {
				ttl = at - ms
				if ttl < 0 {
					continue
				}
				ttl = max(ttl, 1)
			}
			sent = append(sent, k)
			argv := [][]byte{restoreCmd, k.Name, strconv.AppendInt(nil, ttl, 10), req.Encoding.DumpPayload(k.Entry)}
			if req.Replace {
				argv = append(argv, []byte("REPLACE"))
			}
			buf = resp.AppendCommand(buf, argv...)
		}

		// fail is socket_err: close, retry once unless it was a timeout.
		fail := func(werr bool, err error) (retry bool, reply error) {
			mc.discard(cn)
			if mayRetry && !errors.Is(err, errTimeout) {
				return true, nil
			}
			what := "reading"
			if werr {
				what = "writing"
			}
			return false, errors.New("IOERR error or timeout " + what + " to target instance")
		}
		if err := cn.write(buf, req.Timeout); err != nil {
			if retry, reply := fail(true, err); !retry {
				return reply
			}
			continue
		}
		var authReply, selReply string
		if req.Auth {
			if authReply, err = cn.readLine(req.Timeout); err != nil {
				if retry, reply := fail(false, err); !retry {
					return reply
				}
				continue
			}
		}
		if sel {
			if selReply, err = cn.readLine(req.Timeout); err != nil {
				if retry, reply := fail(false, err); !retry {
					return reply
				}
				continue
			}
		}
		var targetErr error
		socketErr := error(nil)
		j := 0
		for ; j < len(sent); j++ {
			reply, err := cn.readLine(req.Timeout)
			if err != nil {
				socketErr = err
				break
			}
			if req.Auth && authReply[0] == '-' || sel && selReply[0] == '-' || reply[0] == '-' {
				if targetErr == nil {
					cn.lastDB = -1
					msg := reply
					if req.Auth && authReply[0] == '-' {
						msg = authReply
					} else if sel && selReply[0] == '-' {
						msg = selReply
					}
					targetErr = errors.New("ERR Target instance replied with error: " + msg[1:])
				}
				continue
			}
			acked(sent[j].Name)
		}
		if socketErr != nil {
			mc.discard(cn)
			if targetErr == nil && j == 0 && mayRetry && !errors.Is(socketErr, errTimeout) {
				continue
			}
			if targetErr != nil {
				return targetErr
			}
			return errors.New("IOERR error or timeout reading to target instance")
		}
		if targetErr != nil {
			mc.put(cn)
			return targetErr
		}
		cn.lastDB = req.DB
		mc.put(cn)
		return nil
	}
	return nil // not reached: the second attempt never retries
}
