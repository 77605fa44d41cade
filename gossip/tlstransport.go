package gossip

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// TLS on the cluster bus (tls-cluster yes).
//
// Redis's bus is one TCP link per peer, over TLS with tls-cluster. shoal's
// bus rides on memberlist, whose NetTransport sends packets (probes,
// gossip, every PING/PONG shoal sends best-effort) over UDP and streams
// (push/pull, and shoal's cluster links: gossip/link.go) over TCP. UDP has no
// TLS in Go, so with tls-cluster the bus uses tlsTransport instead: every
// byte between bus ports travels in a TLS connection that both sides
// authenticate (the accepting side requires a client certificate signed by
// the CA, as Redis's cluster bus does whatever tls-auth-clients says).
//
//   - A stream is one TLS connection, as memberlist's TCP stream: dial,
//     handshake, one type byte 's', then memberlist's bytes.
//   - Packets to one peer share a long-lived TLS connection (type byte
//     'p'), each framed by a 4-byte length; a packet is at most 64 KiB (a
//     UDP datagram's bound). Sends never block memberlist: each peer has a
//     bounded queue drained by its own goroutine, which dials when needed;
//     a full queue or a failed write drops packets, as UDP would. The
//     goroutine ends after a minute without packets.
//
// The bus guard (gossip/guard.go) wraps this transport like any other, so
// every packet and stream message is checked before memberlist parses it,
// and the cluster secret's keyring (gossip/secret.go) still seals the
// payloads inside TLS.

// BusTLS is the cluster bus's TLS: Server for accepted bus connections,
// Client (read at every dial, so reloaded certificates are used) for
// connections to peers.
type BusTLS struct {
	Server *tls.Config
	Client func() *tls.Config
}

const (
	tlsConnStream     = 's'
	tlsConnPackets    = 'p'
	tlsMaxPacket      = 64 << 10
	tlsPeerQueue      = 256
	tlsPeerIdle       = time.Minute
	tlsHandshakeLimit = 5 * time.Second
	// tlsMaxHandshakes bounds the accepted connections still in their
	// handshake (unauthenticated): more are closed at once.
	tlsMaxHandshakes = 256
)

type tlsTransport struct {
	ln      net.Listener
	bindIP  net.IP
	cfg     BusTLS
	log     *zap.Logger
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	wg      sync.WaitGroup
	// handshakes holds a token per accepted connection in its handshake.
	handshakes chan struct{}

	mu    sync.Mutex
	peers map[string]*tlsPeer // by address: the packet senders
	conns map[net.Conn]struct{}
	once  sync.Once
}

var _ memberlist.Transport = (*tlsTransport)(nil)

// newTLSTransport listens on bindAddr:bindPort (port 0: any free port).
func newTLSTransport(bindAddr string, bindPort int, cfg BusTLS, log *zap.Logger) (*tlsTransport, error) {
	if cfg.Server == nil || cfg.Client == nil {
		return nil, errors.New("tls-cluster: TLS is not configured")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(bindAddr, strconv.Itoa(bindPort)))
	if err != nil {
		return nil, err
	}
	t := &tlsTransport{
		ln:      ln,
		bindIP:  net.ParseIP(bindAddr),
		cfg:     cfg,
		log:     log,
		packets: make(chan *memberlist.Packet),
		streams: make(chan net.Conn),
		done:    make(chan struct{}),
		peers:   make(map[string]*tlsPeer),
		conns:   make(map[net.Conn]struct{}),

		handshakes: make(chan struct{}, tlsMaxHandshakes),
	}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// port is the port the transport listens on.
func (t *tlsTransport) port() int { return t.ln.Addr().(*net.TCPAddr).Port }

func (t *tlsTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	var adv net.IP
	switch {
	case ip != "":
		if adv = net.ParseIP(ip); adv == nil {
			return nil, 0, fmt.Errorf("failed to parse advertise address %q", ip)
		}
	case t.bindIP != nil && !t.bindIP.IsUnspecified():
		adv = t.bindIP
	default:
		s, err := sockaddr.GetPrivateIP()
		if err != nil || s == "" {
			return nil, 0, fmt.Errorf("no private IP address found, and explicit IP not provided: %v", err)
		}
		adv = net.ParseIP(s)
	}
	if v4 := adv.To4(); v4 != nil {
		adv = v4
	}
	if port == 0 {
		port = t.port()
	}
	return adv, port, nil
}

func (t *tlsTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *tlsTransport) StreamCh() <-chan net.Conn           { return t.streams }

// WriteTo queues one packet for addr; it never blocks.
func (t *tlsTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if len(b) > tlsMaxPacket {
		return time.Time{}, fmt.Errorf("packet of %d bytes over the %d-byte bound", len(b), tlsMaxPacket)
	}
	now := time.Now()
	t.mu.Lock()
	select {
	case <-t.done:
		t.mu.Unlock()
		return now, errors.New("transport shut down")
	default:
	}
	p := t.peers[addr]
	if p == nil {
		p = &tlsPeer{t: t, addr: addr, queue: make(chan []byte, tlsPeerQueue)}
		t.peers[addr] = p
		t.wg.Add(1)
		go p.run()
	}
	select {
	case p.queue <- append([]byte(nil), b...):
	default: // the peer does not keep up: dropped, as a UDP datagram would be
	}
	t.mu.Unlock()
	return now, nil
}

// DialTimeout opens a stream to addr.
func (t *tlsTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.dial(addr, timeout, tlsConnStream)
}

func (t *tlsTransport) dial(addr string, timeout time.Duration, kind byte) (net.Conn, error) {
	cfg := t.cfg.Client()
	if cfg == nil {
		return nil, errors.New("tls-cluster: TLS is not configured")
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return withFirstByte(c, kind, timeout)
}

// withFirstByte writes the byte that tells the receiving bus port what a
// new stream carries (a link, or memberlist's kinds over TLS), within
// timeout; on failure the connection is closed.
func withFirstByte(c net.Conn, b byte, timeout time.Duration) (net.Conn, error) {
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{b}); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

func (t *tlsTransport) Shutdown() error {
	t.once.Do(func() {
		t.mu.Lock()
		close(t.done)
		for c := range t.conns {
			_ = c.Close()
		}
		t.mu.Unlock()
		_ = t.ln.Close()
		t.wg.Wait()
	})
	return nil
}

// track registers an open connection so that Shutdown closes it; false
// when the transport is shutting down (the caller closes it).
func (t *tlsTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		return false
	default:
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tlsTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *tlsTransport) acceptLoop() {
	defer t.wg.Done()
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-t.done:
				return
			}
			continue
		}
		backoff = 0
		select {
		case t.handshakes <- struct{}{}:
		default:
			t.log.Debug("cluster bus: too many TLS handshakes in progress, connection closed", zap.String("addr", c.RemoteAddr().String()))
			_ = c.Close()
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		tc := tls.Server(c, t.cfg.Server)
		if !t.track(tc) {
			<-t.handshakes
			_ = c.Close()
			return
		}
		t.wg.Add(1)
		go t.serveAccepted(tc)
	}
}

// serveAccepted completes the handshake, reads the connection's type and
// hands a stream to memberlist or reads packets until the peer closes.
func (t *tlsTransport) serveAccepted(c *tls.Conn) {
	defer t.wg.Done()
	_ = c.SetDeadline(time.Now().Add(tlsHandshakeLimit))
	var kind [1]byte
	err := c.Handshake()
	if err == nil {
		_, err = io.ReadFull(c, kind[:])
	}
	<-t.handshakes
	if err != nil {
		t.log.Debug("cluster bus TLS connection refused", zap.String("addr", c.RemoteAddr().String()), zap.Error(err))
		t.untrack(c)
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	switch kind[0] {
	case tlsConnStream:
		// memberlist owns it from here (and closes it); Shutdown no longer
		// needs to.
		t.untrack(c)
		select {
		case t.streams <- c:
		case <-t.done:
			_ = c.Close()
		}
	case tlsConnPackets:
		t.readPackets(c)
		t.untrack(c)
		_ = c.Close()
	default:
		t.untrack(c)
		_ = c.Close()
	}
}

// readPackets reads length-framed packets until the connection ends.
func (t *tlsTransport) readPackets(c *tls.Conn) {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || n > tlsMaxPacket {
			return // not a sender of ours: drop the connection
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		select {
		case t.packets <- &memberlist.Packet{Buf: buf, From: c.RemoteAddr(), Timestamp: time.Now()}:
		case <-t.done:
			return
		}
	}
}

// tlsPeer sends the packets queued for one address over one connection.
type tlsPeer struct {
	t     *tlsTransport
	addr  string
	queue chan []byte
	conn  net.Conn
}

func (p *tlsPeer) run() {
	defer p.t.wg.Done()
	idle := time.NewTimer(tlsPeerIdle)
	defer idle.Stop()
	defer p.closeConn()
	for {
		select {
		case b := <-p.queue:
			p.send(b)
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(tlsPeerIdle)
		case <-idle.C:
			// Leave the map unless a packet was queued meanwhile.
			p.t.mu.Lock()
			if len(p.queue) == 0 {
				delete(p.t.peers, p.addr)
				p.t.mu.Unlock()
				return
			}
			p.t.mu.Unlock()
			idle.Reset(tlsPeerIdle)
		case <-p.t.done:
			return
		}
	}
}

// send writes one framed packet, dialing first if needed; a failure drops
// the packet and the connection (the next packet dials again).
func (p *tlsPeer) send(b []byte) {
	if p.conn == nil {
		c, err := p.t.dial(p.addr, tlsHandshakeLimit, tlsConnPackets)
		if err != nil {
			return
		}
		if !p.t.track(c) {
			_ = c.Close()
			return
		}
		p.conn = c
	}
	frame := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(frame, uint32(len(b)))
	frame = append(frame, b...)
	_ = p.conn.SetWriteDeadline(time.Now().Add(tlsHandshakeLimit))
	if _, err := p.conn.Write(frame); err != nil {
		p.closeConn()
	}
}

func (p *tlsPeer) closeConn() {
	if p.conn != nil {
		p.t.untrack(p.conn)
		_ = p.conn.Close()
		p.conn = nil
	}
}
