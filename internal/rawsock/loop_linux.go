//go:build linux

package rawsock

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// ErrWouldBlock is a loop-mode Read's answer when the socket holds nothing
// to read yet (see EnterLoop).
var ErrWouldBlock = errors.New("rawsock: no input yet")

// Poller watches many connections' readiness in one epoll set of its own,
// which the runtime's netpoller watches in turn: one goroutine (Run) then
// serves every connection that has input, one after another, as
// redis-server's event loop does, instead of each connection's goroutine
// being woken, scheduled and parked for every request. On a node answering
// one request at a time per connection that scheduling was most of the
// difference between shoal's CPU per request and Redis's (a goroutine per
// connection cost 1.4-1.6× an event loop's CPU per request in the same
// program, three servers with 17 clients each).
//
// The connections are registered edge-triggered: a connection reported
// ready must be read until a read leaves its socket empty (Conn.Drained), or
// be remembered by the caller as having more, since the set reports it
// again only when new bytes arrive.
//
// Concurrency: Add, Remove, Wake and Stop may be called from any goroutine;
// Run from one goroutine at a time.
type Poller struct {
	epfd    int
	efd     int // an eventfd in the set: Wake's signal
	file    *os.File
	rc      syscall.RawConn
	events  []syscall.EpollEvent
	tokens  []uint64
	stopped atomic.Bool
}

// wakeToken marks the eventfd's events (client tokens are client IDs, which
// never reach it).
const wakeToken = ^uint64(0)

// NewPoller opens an epoll set.
func NewPoller() (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	efd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		_ = syscall.Close(epfd)
		return nil, os.NewSyscallError("eventfd2", errno)
	}
	p := &Poller{epfd: epfd, efd: int(efd), events: make([]syscall.EpollEvent, 128)}
	if err := p.ctl(syscall.EPOLL_CTL_ADD, p.efd, wakeToken); err != nil {
		p.closeFDs()
		return nil, err
	}
	// A non-blocking descriptor makes os.NewFile hand it to the netpoller,
	// which then waits for the set to have something ready.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		p.closeFDs()
		return nil, os.NewSyscallError("fcntl", err)
	}
	p.file = os.NewFile(uintptr(epfd), "epoll")
	if p.rc, err = p.file.SyscallConn(); err != nil {
		_ = p.file.Close()
		_ = syscall.Close(p.efd)
		return nil, err
	}
	return p, nil
}

func (p *Poller) closeFDs() {
	_ = syscall.Close(p.epfd)
	_ = syscall.Close(p.efd)
}

func (p *Poller) ctl(op, fd int, token uint64) error {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET}
	*(*uint64)(unsafe.Pointer(&ev.Fd)) = token // the 64-bit data after Events
	if err := syscall.EpollCtl(p.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// Add watches c's input under token. Its readiness may be reported to Run
// before Add returns.
func (p *Poller) Add(c *Conn, token uint64) error {
	var err error
	if cerr := c.rc.Control(func(fd uintptr) { err = p.ctl(syscall.EPOLL_CTL_ADD, int(fd), token) }); cerr != nil {
		return cerr
	}
	return err
}

// Remove stops watching c. A report of c already collected may still reach
// Run's caller once.
func (p *Poller) Remove(c *Conn) error {
	var err error
	if cerr := c.rc.Control(func(fd uintptr) {
		if e := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil); e != nil {
			err = os.NewSyscallError("epoll_ctl", e)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}

// Wake makes Run call its turn at once, with woken set.
func (p *Poller) Wake() {
	one := uint64(1)
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(p.efd), uintptr(unsafe.Pointer(&one)), 8)
}

// Stop makes Run return after its current turn.
func (p *Poller) Stop() {
	p.stopped.Store(true)
	p.Wake()
}

// Run calls turn with the tokens of the connections reported ready (each
// once per report) until Stop, then closes the set. turn returns whether
// it has work left over (a connection it did not finish): Run then looks
// again without waiting. woken says that Wake was called since the last
// turn. While nothing is ready Run's goroutine is parked in the netpoller.
func (p *Poller) Run(turn func(tokens []uint64, woken bool) (again bool)) error {
	var errno syscall.Errno
	err := p.rc.Read(func(uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(p.epfd),
				uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
			if e == syscall.EINTR {
				continue
			}
			if e != 0 {
				errno = e
				return true
			}
			p.tokens = p.tokens[:0]
			woken := false
			for i := range int(n) {
				token := *(*uint64)(unsafe.Pointer(&p.events[i].Fd))
				if token == wakeToken {
					woken = true
					var v uint64
					_, _, _ = syscall.RawSyscall(syscall.SYS_READ, uintptr(p.efd), uintptr(unsafe.Pointer(&v)), 8)
					continue
				}
				p.tokens = append(p.tokens, token)
			}
			again := turn(p.tokens, woken)
			if p.stopped.Load() {
				return true
			}
			// With little ready, wait: whatever became ready while turn ran
			// has already made the netpoller see the set ready, so the
			// wait ends at once then. With much ready, look again first.
			if !again && int(n) < 2 {
				return false
			}
		}
	})
	_ = p.file.Close()
	_ = syscall.Close(p.efd)
	if errno != 0 {
		return os.NewSyscallError("epoll_pwait", errno)
	}
	if p.stopped.Load() {
		return nil
	}
	return err
}

// EnterLoop puts c in loop mode: its reads are made by a Poller's Run
// goroutine, which holds the read side from now until ExitLoop. In loop
// mode Read reads once without waiting (ErrWouldBlock when there is
// nothing), and Close from another goroutine shuts the socket down, which
// the poller reports, for the loop to see the end of the stream and close
// the connection itself (its second Close, after ExitLoop). It returns
// false when a Read is under way or c is closed. A connection read in the
// ordinary way may enter loop mode again between Reads (its reader then
// reads no more): the suspended ordinary read ends here.
func (c *Conn) EnterLoop() bool {
	if !c.readMu.TryLock() {
		return false
	}
	if c.closed.Load() {
		c.readMu.Unlock()
		return false
	}
	if c.next != nil {
		c.stopReads()
		c.next = nil
	}
	fd := -1
	if err := c.rc.Control(func(d uintptr) { fd = int(d) }); err != nil || fd < 0 {
		c.readMu.Unlock()
		return false
	}
	// In loop mode only the loop closes the descriptor (closeFromRead, or
	// Close after ExitLoop): Close from elsewhere shuts the socket down
	// instead, readMu being held. So the loop may use it without the
	// runtime's reference counting (RawConn.Control), which cost an eighth
	// of a request's CPU.
	c.loopFD = fd
	c.loop = true
	c.drained = false
	return true
}

// ExitLoop ends loop mode: Read waits for input again, on the goroutine
// that reads from now on.
func (c *Conn) ExitLoop() {
	c.loop = false
	// The ordinary reader reads before it waits: a loop read that left the
	// socket empty does not carry over (the readiness it would wait for
	// may have come and gone).
	c.drained = false
	c.readMu.Unlock()
}

// Drained reports whether the last loop-mode read left the socket empty
// (TCP_INQ said so): the poller reports the connection again when bytes or
// the end of the stream arrive, so the loop need not read until then.
func (c *Conn) Drained() bool { return c.drained }

// readNow is Read in loop mode: one read, without waiting.
func (c *Conn) readNow(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.closeFromRead()
	}
	c.rbuf = b
	n, left, errno := c.readRaw(uintptr(c.loopFD))
	for errno == syscall.EINTR {
		n, left, errno = c.readRaw(uintptr(c.loopFD))
	}
	c.rbuf = nil
	switch {
	case errno == syscall.EAGAIN:
		c.drained = true
		return 0, ErrWouldBlock
	case errno != 0:
		return 0, c.result("read", nil, errno)
	case n == 0:
		return 0, io.EOF
	}
	c.drained = left == 0
	return int(n), nil
}

// TryWrite writes what the socket takes now of b, without waiting: n <
// len(b) with a nil error when it is full. Only the loop that holds c
// calls it (loop mode).
func (c *Conn) TryWrite(b []byte) (int, error) {
	if !c.loop || c.closed.Load() {
		return 0, c.closedError() // shut down, or closed by the loop itself
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	written := 0
	for written < len(b) {
		rest := b[written:]
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.loopFD), uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			written += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return written, nil
		default:
			return written, c.result("write", nil, e)
		}
	}
	return written, nil
}

// epollET is EPOLLET as the uint32 of EpollEvent.Events (syscall's
// constant is a negative int).
const epollET = 1 << 31
