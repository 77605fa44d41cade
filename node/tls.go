package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shoal-db/shoal/internal/rawsock"

	"github.com/shoal-db/shoal/tlsconf"
	"go.uber.org/zap"
)

// TLS, as Redis 7.0 with tls-port, tls-replication and tls-cluster.
//
// The certificates live in tlsconf.Holder; the listeners on tls-port hand
// every accepted socket to crypto/tls with a server config that picks, at
// each handshake, the current certificates and tls-auth-clients (so CONFIG
// SET of a tls-* file reloads them for new connections, as Redis's
// tlsConfigure, and clients already connected keep their session). The
// handshake runs lazily on the connection's own goroutine (its first read),
// never in the accept loop. The client side (replica → master, cluster bus,
// MIGRATE and slot migration) dials with Holder.ClientConfig.

// tlsState is the server's TLS: the loaded configuration and the tls-port
// listeners.
type tlsState struct {
	holder tlsconf.Holder
	server *tls.Config // the client port's config (reads the holder at each handshake)

	mu        sync.Mutex // serialises listener changes
	listeners []net.Listener
	port      int64    // the tls-port listened on (0: none)
	binds     []string // and the bind addresses
	served    bool     // Listen ran: new listeners are served at once
}

// errTLSConfigure is Redis's start-up line when tlsConfigure fails.
var errTLSConfigure = errors.New("Failed to configure TLS. Check logs for more info.")

// initTLS loads the TLS configuration at start-up when tls-port,
// tls-replication or tls-cluster turns TLS on; a failure stops the server
// with Redis's lines (the reason, then "Failed to configure TLS").
func (s *Server) initTLS() error {
	s.tls.server = s.tls.holder.ServerConfig(tlsconf.AuthClientsOf(s.cfg))
	if !tlsconf.Enabled(s.cfg) {
		return nil
	}
	if err := s.tls.holder.Load(tlsconf.FromConfig(s.cfg)); err != nil {
		s.log.Warn(err.Error())
		return errTLSConfigure
	}
	return nil
}

// TLSClientConfig is the client side for connections this node opens to
// other nodes (nil: TLS is not configured).
func (s *Server) TLSClientConfig() *tls.Config { return s.tls.holder.ClientConfig() }

// dialTLS wraps an established connection to another node in TLS and
// completes the handshake within timeout.
func (s *Server) dialTLS(conn net.Conn, timeout time.Duration) (net.Conn, error) {
	cfg := s.TLSClientConfig()
	if cfg == nil {
		_ = conn.Close()
		return nil, errors.New("TLS is not configured")
	}
	tc := tls.Client(conn, cfg)
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// dialNode connects to another node's client port, over TLS in a TLS
// cluster (MIGRATE and slot migrations, as Redis's tls-cluster).
func (s *Server) dialNode(addr string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil || !s.cfg.Bool("tls-cluster") {
		return conn, err
	}
	return s.dialTLS(conn, timeout)
}

// openTLSListeners binds tls-port on the bind addresses (none when
// tls-port is 0); Listen serves them.
func (s *Server) openTLSListeners() error {
	port, binds := s.cfg.Int("tls-port"), s.cfg.Strings("bind")
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if port == 0 {
		return nil
	}
	lns, err := openListeners(port, binds, s.stopCron)
	if err != nil {
		s.log.Warn(fmt.Sprintf("Warning: Could not create server TLS listening socket %s:%d: %v", strings.Join(binds, " "), port, err))
		return fmt.Errorf("Failed listening on port %d (tls), aborting.", port)
	}
	s.tls.listeners, s.tls.port, s.tls.binds = lns, port, binds
	return nil
}

// serveTLSListeners starts serving the tls-port listeners (Listen).
func (s *Server) serveTLSListeners() {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	s.tls.served = true
	s.serveTLSLocked(s.tls.listeners)
}

func (s *Server) serveTLSLocked(lns []net.Listener) {
	for _, ln := range lns {
		gl := &guardListener{Listener: ln, srv: s, tls: s.tls.server}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveListener(gl)
		}()
	}
}

// closeTLSListeners closes the tls-port sockets (stopServing).
func (s *Server) closeTLSListeners() {
	s.tls.mu.Lock()
	lns := s.tls.listeners
	s.tls.listeners = nil
	s.tls.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// applyTLSListen moves the tls-port listeners to the configured tls-port
// and bind addresses (CONFIG SET tls-port / bind), configuring TLS first if
// it was not (Redis's applyTLSPort). New sockets open before the old ones
// retire, so a failure changes nothing; clients already connected stay.
func (s *Server) applyTLSListen() error {
	port, binds := s.cfg.Int("tls-port"), s.cfg.Strings("bind")
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if port == s.tls.port && slices.Equal(binds, s.tls.binds) {
		return nil
	}
	if port > 0 && !s.tls.holder.Configured() {
		if err := s.tls.holder.Load(tlsconf.FromConfig(s.cfg)); err != nil {
			s.log.Warn(err.Error())
			return errors.New("Unable to update TLS configuration. Check server logs.")
		}
	}
	var lns []net.Listener
	if port > 0 {
		var err error
		if lns, err = openListeners(port, binds, s.stopCron); err != nil {
			s.log.Warn("CONFIG SET tls-port failed", zap.Error(err))
			return errors.New("Unable to listen on this port. Check server logs.")
		}
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		for _, ln := range lns {
			_ = ln.Close()
		}
		return nil
	}
	old := s.tls.listeners
	s.tls.listeners, s.tls.port, s.tls.binds = lns, port, binds
	if s.tls.served {
		s.serveTLSLocked(lns)
	}
	for _, ln := range old {
		if rl, ok := ln.(*retirableListener); ok {
			rl.retire()
		} else {
			_ = ln.Close()
		}
	}
	return nil
}

// TLSAddr is the first tls-port listener's address (nil without one).
func (s *Server) TLSAddr() net.Addr {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if len(s.tls.listeners) == 0 {
		return nil
	}
	return s.tls.listeners[0].Addr()
}

// tlsReloadDirectives are the directives whose CONFIG SET rebuilds the TLS
// configuration when TLS is on (Redis's applyTlsCfg).
var tlsReloadDirectives = []string{"tls-cert-file", "tls-key-file", "tls-client-cert-file", "tls-client-key-file",
	"tls-ca-cert-file", "tls-ca-cert-dir", "tls-dh-params-file", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
	"tls-session-caching", "tls-session-cache-size", "tls-session-cache-timeout", "tls-prefer-server-ciphers",
	"tls-key-file-pass", "tls-client-key-file-pass", "tls-replication", "tls-cluster"}

// registerTLSHooks applies CONFIG SET of the tls-* directives.
func (s *Server) registerTLSHooks() {
	reload := func(string) error {
		if !tlsconf.Enabled(s.cfg) {
			return nil
		}
		if err := s.tls.holder.Load(tlsconf.FromConfig(s.cfg)); err != nil {
			s.log.Warn(err.Error())
			return errors.New("Unable to update TLS configuration. Check server logs.")
		}
		return nil
	}
	for _, name := range tlsReloadDirectives {
		s.cfg.OnChange(name, reload)
	}
	s.cfg.OnChange("tls-port", func(string) error { return s.applyTLSListen() })
	s.cfg.OnChange("bind", func(string) error {
		if err := s.applyTLSListen(); err != nil {
			return errors.New("Failed to bind to specified addresses.")
		}
		return nil
	})
}

// tlsRecordPlaintext is the most plaintext a TLS record carries (RFC 8446
// §5.1); a Write no longer than that is one record.
const tlsRecordPlaintext = 16 << 10

// recordGatherer is the socket under a client's tls.Conn. crypto/tls writes
// every record of a Write with a socket write of its own, and a record
// carries 16 KiB at most: a 256 KiB reply chunk cost 17 system calls (and
// 17 trips through the loopback's TCP stack) over TLS where plaintext costs
// one. While writeConn writes a reply larger than a record, the records are
// gathered in a pooled buffer and written together when it ends. Only
// crypto/tls calls Write, under its own write lock; mu orders the gathered
// bytes with the writes of any other goroutine.
type recordGatherer struct {
	net.Conn
	mu        sync.Mutex
	gathering int     // writeConn calls under way
	buf       *[]byte // the records gathered (from gatherPool); nil when none
}

// gatherPool holds the gathering buffers: one per reply being written at a
// time across the server, not one per connection.
var gatherPool = sync.Pool{New: func() any {
	b := make([]byte, 0, outputWriteChunk+outputWriteChunk/tlsRecordPlaintext*64)
	return &b
}}

func (g *recordGatherer) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gathering == 0 {
		return g.Conn.Write(p)
	}
	if g.buf == nil {
		g.buf = gatherPool.Get().(*[]byte)
	}
	*g.buf = append(*g.buf, p...)
	return len(p), nil
}

// release ends one writeConn's gathering and writes what was gathered.
func (g *recordGatherer) release() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gathering--
	if g.buf == nil {
		return nil
	}
	b := g.buf
	g.buf = nil
	_, err := g.Conn.Write(*b)
	if cap(*b) <= 2*outputWriteChunk {
		*b = (*b)[:0]
		gatherPool.Put(b)
	}
	return err
}

// writeConn writes b to a client's connection: over TLS a reply of several
// records reaches the socket in one write (recordGatherer).
func writeConn(conn net.Conn, b []byte) error {
	if len(b) > tlsRecordPlaintext {
		if tc, g := gatherer(conn); g != nil {
			_, err := g.gathered(func() (int64, error) {
				n, err := tc.Write(b)
				return int64(n), err
			})
			return err
		}
	}
	_, err := conn.Write(b)
	return err
}

// writeBuffers writes bufs (writev on a plain socket); over TLS their
// records reach the socket in one write, as writeConn's.
func writeBuffers(conn net.Conn, bufs *net.Buffers) (int64, error) {
	if tc, g := gatherer(conn); g != nil {
		return g.gathered(func() (int64, error) { return bufs.WriteTo(tc) })
	}
	if rc, ok := conn.(*rawsock.Conn); ok {
		return rc.WriteBuffers(bufs) // net.Buffers.WriteTo would not find its writev
	}
	return bufs.WriteTo(conn)
}

// gatherer returns a TLS client connection and the recordGatherer under it,
// or a nil gatherer: plaintext, or before the handshake, whose flight must
// not wait in the buffer for a reply that depends on it.
func gatherer(conn net.Conn) (*tls.Conn, *recordGatherer) {
	tc, ok := conn.(*tls.Conn)
	if !ok || !tc.ConnectionState().HandshakeComplete {
		return nil, nil
	}
	g, _ := tc.NetConn().(*recordGatherer)
	return tc, g
}

// gathered runs write with the gatherer collecting its records, then sends
// them in one write.
func (g *recordGatherer) gathered(write func() (int64, error)) (int64, error) {
	g.mu.Lock()
	g.gathering++
	g.mu.Unlock()
	n, err := write()
	if rerr := g.release(); err == nil {
		err = rerr
	}
	return n, err
}
