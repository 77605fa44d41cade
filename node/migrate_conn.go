package node

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// MIGRATE's cache of target connections (Redis's migrate_cached_sockets):
// at most migrateCacheItems connections, keyed by the "host:port" text the
// command named, each closed after migrateCacheTTL without use.
//
// Concurrency: MIGRATE commands run on their clients' goroutines and may
// target the same instance at once, which Redis (single-threaded) never
// does. So a connection is checked out of the cache for the duration of
// one MIGRATE and checked back in afterwards: a second MIGRATE to the same
// target meanwhile dials its own, and whichever comes back second is
// closed if the cache already holds one. Idle expiry runs from a timer per
// connection, under the cache's mutex.
const (
	migrateCacheItems = 64
	migrateCacheTTL   = 10 * time.Second
	// migrateMaxReplyLine bounds one reply line read from the target.
	migrateMaxReplyLine = 64 << 10
)

type migrateConnCache struct {
	mu     sync.Mutex
	conns  map[string]*migrateConn // idle, checked-in connections
	out    int                     // connections checked out right now
	closed bool
}

// migrateConn is one connection to a MIGRATE target.
type migrateConn struct {
	name    string
	conn    net.Conn
	r       *bufio.Reader
	lastDB  int64 // database last SELECTed, -1 = unknown
	lastUse time.Time
	idle    *time.Timer // closes the connection when idle too long
}

var errMigrateTimeout = errors.New("timeout")

// errMigrateRefused is a connection the target refused. Redis connects
// without blocking and only waits for writability, so a refusal shows up
// as a failed write ("writing to target instance"), not as a failed
// connect; callers treat it as such.
var errMigrateRefused = errors.New("connection refused")

// get checks out the connection to name, dialling addr if none is cached.
// It fails with errMigrateRefused or with the dial error.
func (mc *migrateConnCache) get(name, addr string, timeout time.Duration) (*migrateConn, error) {
	mc.mu.Lock()
	if cn := mc.conns[name]; cn != nil {
		delete(mc.conns, name)
		cn.idle.Stop()
		mc.out++
		mc.mu.Unlock()
		cn.lastUse = time.Now()
		return cn, nil
	}
	if len(mc.conns) >= migrateCacheItems {
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

	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		mc.mu.Lock()
		mc.out--
		mc.mu.Unlock()
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, errMigrateRefused
		}
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &migrateConn{name: name, conn: conn, r: bufio.NewReaderSize(conn, 4096), lastDB: -1, lastUse: time.Now()}, nil
}

// put checks a healthy connection back in.
func (mc *migrateConnCache) put(cn *migrateConn) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.out--
	if mc.closed || mc.conns[cn.name] != nil {
		cn.conn.Close()
		return
	}
	if mc.conns == nil {
		mc.conns = map[string]*migrateConn{}
	}
	cn.lastUse = time.Now()
	mc.conns[cn.name] = cn
	cn.idle = time.AfterFunc(migrateCacheTTL, func() { mc.expire(cn) })
}

// discard closes a checked-out connection after an error.
func (mc *migrateConnCache) discard(cn *migrateConn) {
	cn.conn.Close()
	mc.mu.Lock()
	mc.out--
	mc.mu.Unlock()
}

// expire closes cn if it is still cached (not checked out again since).
func (mc *migrateConnCache) expire(cn *migrateConn) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.conns[cn.name] == cn {
		delete(mc.conns, cn.name)
		cn.conn.Close()
	}
}

// size is INFO's migrate_cached_sockets: every open connection.
func (mc *migrateConnCache) size() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return len(mc.conns) + mc.out
}

// closeAll closes the cached connections at server shutdown; connections
// checked out are closed when they come back.
func (mc *migrateConnCache) closeAll() {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.closed = true
	for k, cn := range mc.conns {
		cn.idle.Stop()
		cn.conn.Close()
		delete(mc.conns, k)
	}
}

// migrateWriteChunk is the size of one write to the target: as in Redis,
// the timeout bounds each 64 KiB piece, not the whole transfer.
const migrateWriteChunk = 64 << 10

// write sends b, each piece within timeout (connSyncWrite per 64 KiB).
func (cn *migrateConn) write(b []byte, timeout time.Duration) error {
	for len(b) > 0 {
		n := min(len(b), migrateWriteChunk)
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
func (cn *migrateConn) readLine(timeout time.Duration) (string, error) {
	cn.conn.SetReadDeadline(time.Now().Add(timeout))
	var line []byte
	for {
		chunk, isPrefix, err := cn.r.ReadLine()
		if err != nil {
			return "", classifyNetErr(err)
		}
		line = append(line, chunk...)
		if len(line) > migrateMaxReplyLine {
			return "", errors.New("reply line too long")
		}
		if !isPrefix {
			break
		}
	}
	if len(line) == 0 {
		return "", errors.New("empty reply line")
	}
	return string(line), nil
}

func classifyNetErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errMigrateTimeout
	}
	return err
}
