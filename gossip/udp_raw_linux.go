//go:build linux

package gossip

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// rawUDP reads and sends the bus's UDP packets with raw system calls
// (through the socket's RawConn, so waiting for readiness is still the
// runtime's netpoller). The socket is non-blocking, so recvfrom and sendto
// never block; the ordinary path wraps each in the runtime's
// entersyscall/exitsyscall, and a system call entered while every P is
// idle wakes the runtime's sysmon thread, which then polls every 20 µs
// until the process is idle again. An idle cluster node receives and
// answers a packet at a time, a few dozen a second, each a fresh
// wake-up: sysmon's polling was 40% of such a node's CPU (perf, idle 3+3
// cluster). Raw calls leave sysmon asleep.
type rawUDP struct {
	rc    syscall.RawConn
	inet6 bool // the socket is AF_INET6 (a dual-stack wildcard bind): IPv4 peers are v4-mapped

	// The calls' state and the functions RawConn runs, made once: a
	// closure per call escapes to the heap (RawConn is an interface), two
	// allocations per packet. rd belongs to the one goroutine that reads
	// (busTransport.readPackets); wr is used under wmu (memberlist sends
	// from several goroutines).
	rd     rawRead
	readFn func(fd uintptr) bool
	wmu    sync.Mutex
	wr     rawWrite
	// writeFn is wr.send, made once.
	writeFn func(fd uintptr) bool
}

// rawRead is one recvfrom's arguments and results.
type rawRead struct {
	buf  []byte
	rsa  syscall.RawSockaddrAny
	n    int
	from netip.AddrPort
	err  error
}

// rawWrite is one sendto's arguments and result.
type rawWrite struct {
	b     []byte
	sa4   syscall.RawSockaddrInet4
	sa6   syscall.RawSockaddrInet6
	sa    unsafe.Pointer
	salen uintptr
	err   error
}

func newRawUDP(c *net.UDPConn) (*rawUDP, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	u := &rawUDP{rc: rc}
	u.readFn, u.writeFn = u.rd.recv, u.wr.send
	var serr error
	if err := rc.Control(func(fd uintptr) {
		var sa syscall.Sockaddr
		sa, serr = syscall.Getsockname(int(fd))
		_, u.inet6 = sa.(*syscall.SockaddrInet6)
	}); err != nil {
		return nil, err
	}
	return u, serr
}

// readFrom reads one packet into buf. Only one goroutine may call it.
func (u *rawUDP) readFrom(buf []byte) (int, netip.AddrPort, error) {
	if len(buf) == 0 {
		return 0, netip.AddrPort{}, errors.New("empty read buffer")
	}
	r := &u.rd
	r.buf, r.n, r.from, r.err = buf, 0, netip.AddrPort{}, nil
	err := u.rc.Read(u.readFn)
	if err == nil {
		err = r.err
	}
	r.buf = nil
	return r.n, r.from, err
}

// recv is one non-blocking recvfrom (false: wait for the netpoller).
func (r *rawRead) recv(fd uintptr) bool {
	for {
		alen := uint32(syscall.SizeofSockaddrAny)
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)),
			0, uintptr(unsafe.Pointer(&r.rsa)), uintptr(unsafe.Pointer(&alen)))
		switch e {
		case 0:
			r.n, r.from = int(n), addrPortOf(&r.rsa)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for the netpoller
		default:
			r.err = e
			return true
		}
	}
}

// writeTo sends b to one peer.
func (u *rawUDP) writeTo(b []byte, to netip.AddrPort) error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	w := &u.wr
	w.err = nil
	port := to.Port()
	if addr := to.Addr().Unmap(); addr.Is4() && !u.inet6 {
		w.sa4 = syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: addr.As4()}
		p := (*[2]byte)(unsafe.Pointer(&w.sa4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		w.sa, w.salen = unsafe.Pointer(&w.sa4), syscall.SizeofSockaddrInet4
	} else if u.inet6 {
		w.sa6 = syscall.RawSockaddrInet6{Family: syscall.AF_INET6, Addr: to.Addr().As16()} // an IPv4 peer as ::ffff:a.b.c.d
		if z := to.Addr().Zone(); z != "" {
			if id, err := strconv.Atoi(z); err == nil {
				w.sa6.Scope_id = uint32(id)
			} else if ifi, err := net.InterfaceByName(z); err == nil {
				w.sa6.Scope_id = uint32(ifi.Index)
			}
		}
		p := (*[2]byte)(unsafe.Pointer(&w.sa6.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		w.sa, w.salen = unsafe.Pointer(&w.sa6), syscall.SizeofSockaddrInet6
	} else {
		return syscall.EAFNOSUPPORT // an IPv6 peer from an IPv4 socket
	}
	w.b = b
	err := u.rc.Write(u.writeFn)
	w.b = nil // not kept beyond the call
	if err == nil {
		err = w.err
	}
	return err
}

// send is one non-blocking sendto (false: wait for the netpoller).
func (w *rawWrite) send(fd uintptr) bool {
	var ptr unsafe.Pointer
	if len(w.b) > 0 {
		ptr = unsafe.Pointer(&w.b[0])
	}
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(ptr), uintptr(len(w.b)), 0, uintptr(w.sa), w.salen)
		switch e {
		case 0:
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			w.err = e
			return true
		}
	}
}

// addrPortOf is the peer address recvfrom filled in.
func addrPortOf(rsa *syscall.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case syscall.AF_INET:
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		sa := (*syscall.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		addr := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			addr = addr.WithZone(strconv.Itoa(int(sa.Scope_id)))
		}
		return netip.AddrPortFrom(addr, uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
