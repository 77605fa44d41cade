package migrate

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-db/shoal/resp"
)

// MIGRATE's cache of target connections (Redis's migrate_cached_sockets):
// at most cacheItems connections, keyed by the "host:port" text the
// command named, each closed after cacheTTL without use.
//
// Concurrency: MIGRATE commands run on their clients' goroutines and may
// target the same instance at once, which Redis (single-threaded) never
// does. So a connection is checked out of the cache for the duration of
// one MIGRATE and checked back in afterwards: a second MIGRATE to the same
// target meanwhile dials its own, and whichever comes back second is
// closed if the cache already holds one. Idle expiry runs from a timer per
// connection, under the cache's mutex.
const (
	cacheItems = 64
	cacheTTL   = 10 * time.Second
)

// ConnCache is MIGRATE's cache of target connections; the zero value is
// ready to use.
type ConnCache struct {
	// Dial connects to a target (nil: plain TCP). A node of a TLS cluster
	// dials with TLS (tls-cluster, as Redis's MIGRATE).
	Dial func(addr string, timeout time.Duration) (net.Conn, error)

	mu     sync.Mutex
	conns  map[string]*targetConn // idle, checked-in connections
	out    int                    // connections checked out right now
	closed bool
}

// targetConn is one connection to a MIGRATE target.
type targetConn struct {
	name    string
	conn    net.Conn
	r       *resp.ReplyReader
	lastDB  int64 // database last SELECTed, -1 = unknown
	lastUse time.Time
	idle    *time.Timer // closes the connection when idle too long
}

var errTimeout = errors.New("timeout")

// errRefused is a connection the target refused. Redis connects
// without blocking and only waits for writability, so a refusal shows up
// as a failed write ("writing to target instance"), not as a failed
// connect; callers treat it as such.
var errRefused = errors.New("connection refused")

// get checks out the connection to name, dialling addr if none is cached.
// It fails with errRefused or with the dial error.
func (mc *ConnCache) get(name, addr string, timeout time.Duration) (*targetConn, error) {
	mc.mu.Lock()
	if cn := mc.conns[name]; cn != nil {
		delete(mc.conns, name)
		cn.idle.Stop()
		mc.out++
		mc.mu.Unlock()
		cn.lastUse = time.Now()
		return cn, nil
	}
	if len(mc.conns) >= cacheItems {
		// Too many: drop one at random, as Redis does.
		i := rand.IntN(len(mc.conns))
		for k, cn := range mc.conns {
			if i == 0 {
				delete(mc.conns, k)
				cn.idle.Stop()
				cn.conn.Close()
				break
			}
			i--
		}
	}
	mc.out++
	mc.mu.Unlock()

	dial := mc.Dial
	if dial == nil {
		dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	conn, err := dial(addr, timeout)
	if err != nil {
		mc.mu.Lock()
		mc.out--
		mc.mu.Unlock()
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, errRefused
		}
		return nil, err
	}
	return &targetConn{name: name, conn: conn, r: resp.NewReplyReader(conn, 4096), lastDB: -1, lastUse: time.Now()}, nil
}

// put checks a healthy connection back in.
func (mc *ConnCache) put(cn *targetConn) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.out--
	if mc.closed || mc.conns[cn.name] != nil {
		cn.conn.Close()
		return
	}
	if mc.conns == nil {
		mc.conns = map[string]*targetConn{}
	}
	cn.lastUse = time.Now()
	mc.conns[cn.name] = cn
	cn.idle = time.AfterFunc(cacheTTL, func() { mc.expire(cn) })
}

// discard closes a checked-out connection after an error.
func (mc *ConnCache) discard(cn *targetConn) {
	cn.conn.Close()
	mc.mu.Lock()
	mc.out--
	mc.mu.Unlock()
}

// expire closes cn if it is still cached (not checked out again since).
func (mc *ConnCache) expire(cn *targetConn) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.conns[cn.name] == cn {
		delete(mc.conns, cn.name)
		cn.conn.Close()
	}
}

// Size is INFO's migrate_cached_sockets: every open connection.
func (mc *ConnCache) Size() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return len(mc.conns) + mc.out
}

// CloseAll closes the cached connections at server shutdown; connections
// checked out are closed when they come back.
func (mc *ConnCache) CloseAll() {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.closed = true
	for k, cn := range mc.conns {
		cn.idle.Stop()
		cn.conn.Close()
		delete(mc.conns, k)
	}
}

// writeChunk is the size of one write to the target: as in Redis,
// the timeout bounds each 64 KiB piece, not the whole transfer.
const writeChunk = 64 << 10

// write sends b, each piece within timeout (connSyncWrite per 64 KiB).
func (cn *targetConn) write(b []byte, timeout time.Duration) error {
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		cn.conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := cn.conn.Write(b[:n]); err != nil {
			return classifyNetErr(err)
		}
		b = b[n:]
	}
	return nil
}

// readLine reads one reply line (without CRLF) within timeout
// (connSyncReadLine).
func (cn *targetConn) readLine(timeout time.Duration) (string, error) {
	cn.conn.SetReadDeadline(time.Now().Add(timeout))
	line, err := cn.r.ReadLine()
	return line, classifyNetErr(err)
}

func classifyNetErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimeout
	}
	return err
}
