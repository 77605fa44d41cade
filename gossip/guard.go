package gossip

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/shoal-db/shoal/internal/netdial"
	"go.uber.org/zap"
)

// The bus guard is a memberlist Transport wrapped around the real one
// (NetTransport, or a test network): every inbound packet and every message
// read from a stream, accepted or dialed, is checked by guard_msgpack.go
// before memberlist parses it. Input that fails is dropped (the packet, or
// the connection), counted, and logged at most once per guardLogInterval
// per peer host; it never reaches memberlist.

const (
	// guardLogInterval is the minimum time between two log lines about
	// one peer host's rejected input.
	guardLogInterval = 10 * time.Second
	// guardLogPeers bounds the hosts remembered for the rate limit; when
	// that many hosts misbehaved within one interval, the others are
	// counted but not logged.
	guardLogPeers = 1024
	// guardMaxInflight bounds the stream bytes held by all connections
	// while their messages are checked (a bus message may be 64 MiB; many
	// peers each sending a large one must not exhaust memory).
	guardMaxInflight = 2 * MaxMessageSize
	// guardChunk is the most a stream read grows a message's buffer by.
	guardChunk = 64 << 10
)

var (
	errGuardBusy     = errors.New("too many stream bytes in flight")
	errGuardRejected = errors.New("gossip: bus input rejected")
)

// busGuard is the state the guard keeps across memberlist instances (a
// CLUSTER RESET creates a new one): the rejected-input counter, the log
// rate limit and the in-flight byte budget.
type busGuard struct {
	log      *zap.Logger
	rejected atomic.Uint64
	inflight atomic.Int64

	mu      sync.Mutex
	lastLog map[string]time.Time // peer host → last log line
}

func newBusGuard(log *zap.Logger) *busGuard {
	return &busGuard{log: log, lastLog: make(map[string]time.Time)}
}

// reject counts one dropped input from peer and logs it unless this peer
// host was logged within guardLogInterval.
func (g *busGuard) reject(peer net.Addr, kind string, err error) {
	total := g.rejected.Add(1)
	addr := "unknown"
	if peer != nil {
		addr = peer.String()
	}
	host := addr
	if h, _, e := net.SplitHostPort(addr); e == nil {
		host = h // one attacker uses many source ports
	}
	now := time.Now()
	g.mu.Lock()
	last, seen := g.lastLog[host]
	if seen && now.Sub(last) < guardLogInterval {
		g.mu.Unlock()
		return
	}
	if !seen && len(g.lastLog) >= guardLogPeers {
		for h, t := range g.lastLog {
			if now.Sub(t) >= guardLogInterval {
				delete(g.lastLog, h)
			}
		}
		if len(g.lastLog) >= guardLogPeers {
			g.mu.Unlock()
			return
		}
	}
	g.lastLog[host] = now
	g.mu.Unlock()
	g.log.Warn("cluster bus: dropped malformed input", zap.String("peer", addr), zap.String("kind", kind),
		zap.Error(err), zap.Uint64("rejected_total", total))
}

func (g *busGuard) reserve(n int) bool {
	if g.inflight.Add(int64(n)) > guardMaxInflight {
		g.inflight.Add(-int64(n))
		return false
	}
	return true
}

// encryptionState reports the keyring's keys (none: encryption is off)
// and whether memberlist refuses input that is not encrypted.
type encryptionState func() (keys [][]byte, verifyIncoming bool)

func noEncryption() ([][]byte, bool) { return nil, false }

// guardTransport wraps a memberlist transport with the guard.
type guardTransport struct {
	inner   memberlist.NodeAwareTransport
	g       *busGuard
	enc     encryptionState
	timeout streamTimeout // see gossip/bus_timing.go
	// source is bind-source-addr, read at each dial; nil when the bus does
	// not run on the real network (a test's transport).
	source func() string

	packets chan *memberlist.Packet
	streams chan net.Conn
	// onLink receives the accepted streams that open with linkMagic (the
	// cluster links, gossip/link.go); nil: they are closed.
	onLink atomic.Pointer[func(net.Conn)]
	// onUser receives the payload of each plaintext user-message packet
	// (the bus's PING, PONG, FAIL); nil: memberlist gets them.
	onUser atomic.Pointer[func([]byte)]
	// peeking are the accepted streams whose first byte is awaited
	// (closed by Shutdown); guarded by peekMu.
	peekMu    sync.Mutex
	peeking   map[net.Conn]struct{}
	closing   chan struct{} // Shutdown began: stop handing input to memberlist
	innerDone chan struct{} // the inner transport is shut down
	wg        sync.WaitGroup
	once      sync.Once
}

var _ memberlist.NodeAwareTransport = (*guardTransport)(nil)

func newGuardTransport(inner memberlist.Transport, g *busGuard, enc encryptionState, timeout streamTimeout) *guardTransport {
	na, ok := inner.(memberlist.NodeAwareTransport)
	if !ok {
		na = addressTransport{inner}
	}
	if enc == nil {
		enc = noEncryption
	}
	t := &guardTransport{
		inner:     na,
		g:         g,
		enc:       enc,
		timeout:   timeout,
		packets:   make(chan *memberlist.Packet),
		streams:   make(chan net.Conn),
		closing:   make(chan struct{}),
		innerDone: make(chan struct{}),
		peeking:   make(map[net.Conn]struct{}),
	}
	if pt, ok := inner.(packetTaker); ok {
		pt.setPacketHandler(t.takeLent) // on busTransport's reader: one hand-off fewer per packet
	}
	t.wg.Add(2)
	go t.forwardPackets()
	go t.forwardStreams()
	return t
}

// addressTransport adapts a Transport that does not know node names.
type addressTransport struct{ memberlist.Transport }

func (a addressTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	return a.WriteTo(b, addr.Addr)
}

func (a addressTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return a.DialTimeout(addr.Addr, timeout)
}

// packetTaker is an inner transport that can hand its packets to a
// function on its reader goroutine (busTransport) instead of PacketCh.
type packetTaker interface {
	setPacketHandler(fn packetHandler)
}

// packetHandler takes one packet read from from at ts. buf is lent: it is
// the reader's buffer, read into again once the handler returns, so a
// handler that keeps the packet copies it. Packets lent this way, not
// copied into a memberlist.Packet each, were a quarter of the garbage of
// an idle node (a user message, most of the bus's packets, is copied once
// more by the Bus anyway).
type packetHandler func(buf []byte, from netip.AddrPort, ts time.Time)

// forwardPackets checks each inbound packet on the way to memberlist
// (takePacket), for an inner transport that delivers on PacketCh.
func (t *guardTransport) forwardPackets() {
	defer t.wg.Done()
	in := t.inner.PacketCh()
	for {
		select {
		case p := <-in:
			t.takePacket(p)
		case <-t.innerDone:
			return
		}
	}
}

// takePacket checks one inbound packet and hands it to the bus or to
// memberlist. Once Shutdown began it drops what it reads, so the inner
// transport's reader never blocks on a memberlist that is gone.
func (t *guardTransport) takePacket(p *memberlist.Packet) {
	if err := t.checkPacket(p.Buf); err != nil {
		t.g.reject(p.From, "packet", err)
		return
	}
	if !t.deliverUser(p.Buf) {
		t.toMemberlist(p)
	}
}

// takeLent is takePacket for a packet whose buffer is lent
// (packetHandler): it is copied only on its way to memberlist.
func (t *guardTransport) takeLent(buf []byte, from netip.AddrPort, ts time.Time) {
	if err := t.checkPacket(buf); err != nil {
		t.g.reject(net.UDPAddrFromAddrPort(from), "packet", err)
		return
	}
	if !t.deliverUser(buf) {
		t.toMemberlist(&memberlist.Packet{Buf: bytes.Clone(buf), From: net.UDPAddrFromAddrPort(from), Timestamp: ts})
	}
}

// toMemberlist hands a checked packet to memberlist.
func (t *guardTransport) toMemberlist(p *memberlist.Packet) {
	select {
	case t.packets <- p:
	case <-t.closing:
	}
}

func (t *guardTransport) forwardStreams() {
	defer t.wg.Done()
	in := t.inner.StreamCh()
	for {
		select {
		case c := <-in:
			t.peekMu.Lock()
			select {
			case <-t.closing:
				t.peekMu.Unlock()
				_ = c.Close()
				continue
			default:
			}
			t.peeking[c] = struct{}{}
			t.wg.Add(1)
			t.peekMu.Unlock()
			go t.route(c)
		case <-t.innerDone:
			return
		}
	}
}

// setLinkHandler makes fn receive the cluster links accepted from now on.
func (t *guardTransport) setLinkHandler(fn func(net.Conn)) { t.onLink.Store(&fn) }

// setUserHandler makes fn receive the plaintext user messages from now on
// (see deliverUser).
func (t *guardTransport) setUserHandler(fn func([]byte)) { t.onUser.Store(&fn) }

// deliverUser hands a checked plaintext user-message packet
// ([mlUser][message], how memberlist sends the bus's packets without a
// cluster secret) straight to the user handler, which is where memberlist
// would put it after two more goroutine hand-offs (its packet listener
// queues user messages for its packet handler, which calls the delegate's
// NotifyMsg). Each hand-off is a wake-up; with a few dozen bus packets a
// second they were a good part of an idle node's CPU. Sealed, labelled,
// checksummed and compound packets still go through memberlist, and so
// does everything while a cluster secret is set. The handler copies what
// it keeps, as memberlist's NotifyMsg must (buf may be lent).
func (t *guardTransport) deliverUser(buf []byte) bool {
	if len(buf) < 2 || buf[0] != mlUser {
		return false
	}
	fn := t.onUser.Load()
	if fn == nil {
		return false
	}
	if keys, _ := t.enc(); len(keys) > 0 {
		return false
	}
	(*fn)(buf[1:])
	return true
}

// route reads an accepted stream's first byte (the dialer writes first,
// memberlist's streams and the cluster links alike) and hands a link to
// onLink, anything else to memberlist through the guard.
func (t *guardTransport) route(c net.Conn) {
	defer t.wg.Done()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(linkPeekTimeout))
	_, err := io.ReadFull(c, first[:])
	_ = c.SetReadDeadline(time.Time{})
	t.peekMu.Lock()
	delete(t.peeking, c)
	t.peekMu.Unlock()
	if err != nil {
		_ = c.Close()
		return
	}
	if first[0] == linkMagic {
		if fn := t.onLink.Load(); fn != nil {
			(*fn)(c)
		} else {
			_ = c.Close()
		}
		return
	}
	pc := &prefixedConn{Conn: c, first: first[0], pending: true}
	select {
	case t.streams <- acceptedConn{Conn: t.g.wrap(pc, t.enc), timeout: t.timeout}:
	case <-t.closing:
		_ = c.Close()
	}
}

// prefixedConn replays the byte route read before the connection's data.
type prefixedConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		c.pending = false
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

// checkPacket lets through a packet that the cluster secret authenticates
// (memberlist decrypts it again and trusts its contents) and otherwise a
// plaintext packet that passes validatePacket, unless memberlist is told
// to refuse plaintext.
func (t *guardTransport) checkPacket(buf []byte) error {
	keys, verify := t.enc()
	if len(keys) > 0 {
		if authenticPacket(keys, buf) {
			return nil
		}
		if verify {
			return errors.New("packet not authenticated by the cluster secret")
		}
	}
	return validatePacket(buf)
}

// authenticPacket reports whether buf is memberlist's encrypted packet
// format ([version 0|1] [12-byte nonce] [AES-GCM ciphertext and tag]) and
// one of keys opens it.
func authenticPacket(keys [][]byte, buf []byte) bool {
	const nonceLen, tagLen = 12, 16
	if len(buf) < 1+nonceLen+tagLen || buf[0] > 1 {
		return false
	}
	_, ok := gcmOpen(keys, buf[1:1+nonceLen], buf[1+nonceLen:])
	return ok
}

// gcmOpen opens AES-GCM ciphertext ct (tag included) with the first of
// keys that authenticates it.
func gcmOpen(keys [][]byte, nonce, ct []byte) ([]byte, bool) {
	for _, k := range keys {
		block, err := aes.NewCipher(k)
		if err != nil {
			continue
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil || len(nonce) != gcm.NonceSize() {
			continue
		}
		if msg, err := gcm.Open(nil, nonce, ct, nil); err == nil {
			return msg, true
		}
	}
	return nil, false
}

func (t *guardTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *guardTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.inner.WriteTo(b, addr)
}

func (t *guardTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	return t.inner.WriteToAddress(b, addr)
}

func (t *guardTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *guardTransport) StreamCh() <-chan net.Conn           { return t.streams }

// DialTimeout and DialAddressTimeout guard the replies read from dialed
// connections too (a push/pull answer comes back on them), and dial within
// the current stream timeout (streamTimeout).
func (t *guardTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.dialRaw(addr, timeout)
	if err != nil {
		return nil, err
	}
	return t.g.wrap(c, t.enc), nil
}

// dialRaw dials a stream to addr without the guard on its reads (a cluster
// link's dialer reads nothing from it).
func (t *guardTransport) dialRaw(addr string, timeout time.Duration) (net.Conn, error) {
	c, bound, err := t.dialFromSource(addr, t.timeout.dial(timeout))
	if !bound {
		c, err = t.inner.DialTimeout(addr, t.timeout.dial(timeout))
	}
	return c, err
}

func (t *guardTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, bound, err := t.dialFromSource(addr.Addr, t.timeout.dial(timeout))
	if !bound {
		c, err = t.inner.DialAddressTimeout(addr, t.timeout.dial(timeout))
	}
	if err != nil {
		return nil, err
	}
	return t.g.wrap(c, t.enc), nil
}

// dialFromSource dials a peer's bus from bind-source-addr, as Redis's
// cluster links do (best effort: netdial). bound is false when no source
// address applies and the inner transport should dial. memberlist's UDP
// packets leave from the bus's own socket, whatever the source address.
func (t *guardTransport) dialFromSource(addr string, timeout time.Duration) (c net.Conn, bound bool, err error) {
	if t.source == nil {
		return nil, false, nil
	}
	src := t.source()
	if src == "" {
		return nil, false, nil
	}
	c, err = netdial.Dial(context.Background(), addr, src, timeout)
	return c, true, err
}

func (t *guardTransport) Shutdown() error {
	var err error
	t.once.Do(func() {
		t.peekMu.Lock()
		close(t.closing)
		for c := range t.peeking {
			_ = c.Close()
		}
		t.peekMu.Unlock()
		err = t.inner.Shutdown()
		close(t.innerDone)
		t.wg.Wait()
	})
	return err
}

// guardConn checks each message read from a stream before handing its
// bytes to memberlist. Reads come from one goroutine (memberlist's
// handler); Close may come from another.
type guardConn struct {
	net.Conn
	g        *busGuard
	enc      encryptionState
	r        *bufio.Reader
	pending  []byte // the checked message's bytes not yet read
	reserved atomic.Int64
	closed   atomic.Bool
	err      error
}

func (g *busGuard) wrap(c net.Conn, enc encryptionState) net.Conn {
	if enc == nil {
		enc = noEncryption
	}
	return &guardConn{Conn: c, g: g, enc: enc, r: bufio.NewReader(c)}
}

func (c *guardConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		keys, _ := c.enc()
		src := &streamSource{r: c.r, budget: 1, g: c.g, held: &c.reserved}
		err := validateStreamMessage(src, len(keys) > 0)
		if err != nil {
			c.release()
			if len(src.rec) == 0 && (errors.Is(err, io.EOF) || isTimeout(err)) {
				c.err = err // closed or idle between messages: not an attack
				return 0, err
			}
			c.g.reject(c.RemoteAddr(), "stream", err)
			c.err = errGuardRejected
			_ = c.Conn.Close()
			return 0, c.err
		}
		c.pending = src.rec
		if c.closed.Load() {
			c.release() // Close ran while the message was read
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil
		c.release()
	}
	return n, nil
}

func (c *guardConn) release() {
	if n := c.reserved.Swap(0); n != 0 {
		c.g.inflight.Add(-n)
	}
}

func (c *guardConn) Close() error {
	c.closed.Store(true)
	c.release()
	return c.Conn.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// streamSource reads one message from a connection into rec, growing it
// by at most guardChunk per read, within the message's budget and the
// guard's in-flight budget. A slice it returns is valid until the next
// take.
type streamSource struct {
	r      *bufio.Reader
	rec    []byte
	budget int
	g      *busGuard
	held   *atomic.Int64 // bytes reserved from g.inflight
}

func (s *streamSource) grant(n int) { s.budget += n }

func (s *streamSource) take(n int) ([]byte, error) {
	if n < 0 || n > s.budget {
		return nil, errGuardBudget
	}
	s.budget -= n
	start := len(s.rec)
	for n > 0 {
		// Grow with what arrived (at least 512 bytes, at most
		// guardChunk): a claimed length costs nothing until its bytes
		// come.
		chunk := min(n, guardChunk, max(512, len(s.rec)))
		if !s.g.reserve(chunk) {
			return nil, errGuardBusy
		}
		s.held.Add(int64(chunk))
		s.rec = slices.Grow(s.rec, chunk)[:len(s.rec)+chunk]
		if _, err := io.ReadFull(s.r, s.rec[len(s.rec)-chunk:]); err != nil {
			s.rec = s.rec[:len(s.rec)-chunk]
			if err == io.ErrUnexpectedEOF {
				err = errGuardTruncated
			}
			return nil, err
		}
		n -= chunk
	}
	return s.rec[start:], nil
}
