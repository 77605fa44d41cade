package gossip

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// MemNetwork is an in-memory network for memberlist, for tests that run
// many Bus instances in one process (memberlist.MockNetwork delivers
// packets synchronously, so two busy peers can block each other forever).
// Packets behave like UDP: delivered through a bounded queue, silently
// dropped when the queue is full, the peer is gone or the path is cut.
// Streams are net.Pipe pairs. Safe for concurrent use.
type MemNetwork struct {
	mu      sync.Mutex
	byAddr  map[string]*MemTransport
	port    int
	cut     map[[2]string]bool // directed links that drop everything
	stalled map[string]bool    // transports that accept nothing (Stall)
	Dropped uint64             // packets lost (guarded by mu)
}

// NewTransport returns a transport at a new address 127.0.0.1:<port>.
func (n *MemNetwork) NewTransport() *MemTransport {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byAddr == nil {
		n.byAddr = make(map[string]*MemTransport)
		n.cut = make(map[[2]string]bool)
		n.stalled = make(map[string]bool)
		n.port = 20000
	}
	n.port++
	t := &MemTransport{
		net:      n,
		addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)),
		packetCh: make(chan *memberlist.Packet, 4096),
		streamCh: make(chan net.Conn, 256),
		done:     make(chan struct{}),
	}
	n.byAddr[t.addr] = t
	return t
}

// Stall makes a transport behave like a stopped process (SIGSTOP) whose
// listen backlog is full: packets to it are lost and dials to it wait out
// their timeout. stall false restores it.
func (n *MemNetwork) Stall(addr string, stall bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stalled[addr] = stall
}

func (n *MemNetwork) isStalled(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stalled[addr]
}

// Cut drops (or, with cut false, restores) all traffic between two
// addresses, both directions.
func (n *MemNetwork) Cut(a, b string, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{a, b}] = cut
	n.cut[[2]string{b, a}] = cut
}

func (n *MemNetwork) route(from, to string) (*MemTransport, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.byAddr[to]
	if t == nil || n.cut[[2]string{from, to}] || n.stalled[to] {
		n.Dropped++
		return nil, false
	}
	return t, true
}

// MemTransport is one node's endpoint on a MemNetwork.
type MemTransport struct {
	net      *MemNetwork
	addr     string
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	once     sync.Once
}

var _ memberlist.NodeAwareTransport = (*MemTransport)(nil)

// Addr is the transport's "ip:port".
func (t *MemTransport) Addr() string { return t.addr }

// Port is the transport's port (use it as the bus port).
func (t *MemTransport) Port() int {
	_, p, _ := net.SplitHostPort(t.addr)
	v, _ := strconv.Atoi(p)
	return v
}

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *MemTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return net.ParseIP("127.0.0.1"), t.Port(), nil
}

// WriteTo implements memberlist.Transport.
func (t *MemTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport (routing is by
// address only).
func (t *MemTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	dest, ok := t.net.route(t.addr, a.Addr)
	if !ok {
		return now, nil
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: memAddr(t.addr), Timestamp: now}
	select {
	case dest.packetCh <- p:
	case <-dest.done:
	default:
		t.net.mu.Lock()
		t.net.Dropped++
		t.net.mu.Unlock()
	}
	return now, nil
}

// PacketCh implements memberlist.Transport.
func (t *MemTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout implements memberlist.Transport.
func (t *MemTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *MemTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if t.net.isStalled(a.Addr) {
		select {
		case <-timer.C:
		case <-t.done:
		}
		return nil, errors.New("memnet: dial timeout")
	}
	dest, ok := t.net.route(t.addr, a.Addr)
	if !ok {
		return nil, fmt.Errorf("memnet: no route to %s", a.Addr)
	}
	p1, p2 := net.Pipe()
	select {
	case dest.streamCh <- &memStream{Conn: p1, net: t.net, from: a.Addr, to: t.addr}:
		return &memStream{Conn: p2, net: t.net, from: t.addr, to: a.Addr}, nil
	case <-dest.done:
	case <-timer.C:
	}
	_ = p1.Close()
	_ = p2.Close()
	return nil, errors.New("memnet: connection refused")
}

// StreamCh implements memberlist.Transport.
func (t *MemTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport: the address disappears from
// the network.
func (t *MemTransport) Shutdown() error {
	t.once.Do(func() {
		t.net.mu.Lock()
		if t.net.byAddr[t.addr] == t {
			delete(t.net.byAddr, t.addr)
		}
		t.net.mu.Unlock()
		close(t.done)
	})
	return nil
}

// memStream is one end of a stream. A stream lives on when its path is cut
// or its peer stalls, as a TCP connection does: a write into a cut path
// is lost (a frame written in one call vanishes whole), and a write to a
// stalled peer blocks until it resumes or the connection closes, as
// once the kernel's buffers are full.
type memStream struct {
	net.Conn
	net      *MemNetwork
	from, to string
	closed   atomic.Bool
	deadline atomic.Int64 // write deadline, unix ns (0: none)
}

func (c *memStream) SetDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *memStream) SetWriteDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *memStream) setWriteDeadline(t time.Time) {
	if t.IsZero() {
		c.deadline.Store(0)
	} else {
		c.deadline.Store(t.UnixNano())
	}
}

func (c *memStream) Write(p []byte) (int, error) {
	for {
		c.net.mu.Lock()
		cut, stalled := c.net.cut[[2]string{c.from, c.to}], c.net.stalled[c.to]
		c.net.mu.Unlock()
		if c.closed.Load() {
			return 0, net.ErrClosed
		}
		if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			return 0, os.ErrDeadlineExceeded
		}
		if cut {
			return len(p), nil
		}
		if !stalled {
			return c.Conn.Write(p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *memStream) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }
