package gossip

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
)

// busTransport is memberlist's transport on the bus port: a TCP listener
// for streams and a UDP socket for packets, as memberlist's NetTransport,
// except that a packet is read into one buffer the reader keeps and handed
// on in a copy of its own size. NetTransport allocated a fresh 64 KiB
// buffer for every packet (the largest a datagram can be): at a few dozen
// bus packets a second that was most of an idle node's allocations and the
// collections they caused. It binds one address (the bus's bind address).
type busTransport struct {
	tcp *net.TCPListener
	udp *net.UDPConn
	raw *rawUDP // udp's reads and sends (gossip/udp_raw_linux.go)

	packets chan *memberlist.Packet
	streams chan net.Conn

	// handler, when set, takes each packet on the reader goroutine
	// instead of packets (see setPacketHandler).
	handler  atomic.Pointer[packetHandler]
	shutdown atomic.Bool
	wg       sync.WaitGroup
	logger   *log.Logger
}

// setPacketHandler makes fn take the packets read from now on, on the
// reader goroutine, instead of PacketCh: the guard checks and routes them
// there, one goroutine hand-off fewer per packet.
func (t *busTransport) setPacketHandler(fn packetHandler) { t.handler.Store(&fn) }

// udpRecvBuffer is the socket receive buffer asked for (halved until the
// kernel accepts it), as NetTransport does; maxPacket is the largest UDP
// payload.
const (
	udpRecvBuffer = 2 << 20
	maxPacket     = 65536
)

// newBusTransport listens on bindAddr:port, TCP and UDP (port 0: the port
// the TCP listener got).
func newBusTransport(bindAddr string, port int, logger *log.Logger) (*busTransport, error) {
	ip := net.ParseIP(bindAddr)
	if ip == nil {
		return nil, fmt.Errorf("bad bind address %q", bindAddr)
	}
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
	if err != nil {
		return nil, fmt.Errorf("failed to start TCP listener on %q port %d: %v", bindAddr, port, err)
	}
	if port == 0 {
		port = tcp.Addr().(*net.TCPAddr).Port
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: port})
	if err != nil {
		_ = tcp.Close()
		return nil, fmt.Errorf("failed to start UDP listener on %q port %d: %v", bindAddr, port, err)
	}
	for size := udpRecvBuffer; size > 0; size /= 2 {
		if err = udp.SetReadBuffer(size); err == nil {
			break
		}
	}
	if err != nil {
		_ = tcp.Close()
		_ = udp.Close()
		return nil, fmt.Errorf("failed to resize UDP buffer: %v", err)
	}
	raw, err := newRawUDP(udp)
	if err != nil {
		_ = tcp.Close()
		_ = udp.Close()
		return nil, fmt.Errorf("UDP socket: %v", err)
	}
	t := &busTransport{tcp: tcp, udp: udp, raw: raw, logger: logger,
		packets: make(chan *memberlist.Packet), streams: make(chan net.Conn)}
	t.wg.Add(2)
	go t.acceptStreams()
	go t.readPackets()
	return t, nil
}

// Port is the port the transport listens on.
func (t *busTransport) Port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr is the given address, else the bound one.
func (t *busTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		addr := net.ParseIP(ip)
		if addr == nil {
			return nil, 0, fmt.Errorf("failed to parse advertise address %q", ip)
		}
		if ip4 := addr.To4(); ip4 != nil {
			addr = ip4
		}
		return addr, port, nil
	}
	addr := t.tcp.Addr().(*net.TCPAddr).IP
	if addr.IsUnspecified() {
		// Bound to every interface and nothing named: a private address
		// of the host, as NetTransport picks (the bus names one when
		// there is none, see systemAdvertiseFallback).
		priv, err := sockaddr.GetPrivateIP()
		if err != nil {
			return nil, 0, fmt.Errorf("failed to get interface addresses: %v", err)
		}
		if addr = net.ParseIP(priv); addr == nil {
			return nil, 0, errors.New("no private IP address found, and explicit IP not provided")
		}
	}
	return addr, t.Port(), nil
}

// WriteTo sends one packet to addr ("ip:port").
func (t *busTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return time.Now(), t.raw.writeTo(b, ap)
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, ua)
	return time.Now(), err
}

// WriteToAddress is WriteTo (the node name is not needed to reach it).
func (t *busTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

// DialTimeout opens a stream to addr.
func (t *busTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", addr)
}

// DialAddressTimeout is DialTimeout.
func (t *busTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

func (t *busTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *busTransport) StreamCh() <-chan net.Conn           { return t.streams }

// Shutdown closes the sockets and waits for the readers (the guard above
// keeps draining the channels meanwhile).
func (t *busTransport) Shutdown() error {
	t.shutdown.Store(true)
	_ = t.tcp.Close()
	_ = t.udp.Close()
	t.wg.Wait()
	return nil
}

// acceptStreams hands accepted connections on, backing off on errors.
func (t *busTransport) acceptStreams() {
	defer t.wg.Done()
	var delay time.Duration
	for {
		conn, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.logger.Printf("[ERR] memberlist: Error accepting TCP connection: %v", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		t.streams <- conn
	}
}

// readPackets reads every datagram into one buffer and hands on a copy of
// its exact size (memberlist may keep a packet after it returns), or lends
// the buffer to the handler.
func (t *busTransport) readPackets() {
	defer t.wg.Done()
	buf := make([]byte, maxPacket)
	for {
		n, addr, err := t.raw.readFrom(buf)
		ts := time.Now()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			t.logger.Printf("[ERR] memberlist: Error reading UDP packet: %v", err)
			continue
		}
		if n < 1 {
			continue // memberlist messages have at least a type byte
		}
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()) // a dual-stack socket's IPv4 peer
		if h := t.handler.Load(); h != nil {
			(*h)(buf[:n], addr, ts) // lent: copied only if kept
			continue
		}
		t.packets <- &memberlist.Packet{Buf: append([]byte(nil), buf[:n]...),
			From: net.UDPAddrFromAddrPort(addr), Timestamp: ts}
	}
}
