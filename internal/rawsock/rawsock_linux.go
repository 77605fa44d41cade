//go:build linux

package rawsock

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read and Write are raw system calls. The
// callbacks handed to the RawConn are made once (readFn, writeFn) and take
// their buffers from fields, so a call allocates nothing; readMu and writeMu
// keep those fields to one reader and one writer at a time.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	readMu   sync.Mutex
	readFn   func(fd uintptr) bool
	rbuf     []byte
	rn       int
	rerrno   syscall.Errno
	writeMu  sync.Mutex
	writeFn  func(fd uintptr) bool
	wbuf     []byte
	wn       int
	werrno   syscall.Errno
	writevFn func(fd uintptr) bool
	wbufs    *net.Buffers
	wvn      int64
	iov      []syscall.Iovec
}

func wrapTCP(tc *net.TCPConn) *Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.readFn = c.readOnce
	c.writeFn = c.writeAll
	c.writevFn = c.writevAll
	return c
}

// Read reads once, as net.TCPConn's: what the socket holds, up to len(b);
// io.EOF when the peer closed its side.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.rbuf, c.rn, c.rerrno = b, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerrno
	c.rbuf = nil
	if err := c.result("read", err, errno); err != nil {
		return n, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readOnce is the RawConn callback: false asks the netpoller to wait.
func (c *Conn) readOnce(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch e {
		case 0:
			c.rn = int(r)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.rerrno = e
			return true
		}
	}
}

// Write writes all of b (waiting for room as the netpoller says), as
// net.TCPConn's.
func (c *Conn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wbuf, c.wn, c.werrno = b, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werrno
	c.wbuf = nil
	return n, c.result("write", err, errno)
}

// writeAll is the RawConn callback: it writes until wbuf is empty, or
// returns false for the netpoller to wait until the socket has room.
func (c *Conn) writeAll(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		rest := c.wbuf[c.wn:]
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			c.wn += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

// maxIovecs is Linux's IOV_MAX: the most buffers one writev takes.
const maxIovecs = 1024

// WriteBuffers writes all of bufs with writev, consuming them as
// net.Buffers.WriteTo does (which cannot reach a wrapped socket's writev).
func (c *Conn) WriteBuffers(bufs *net.Buffers) (int64, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wbufs, c.wvn, c.werrno = bufs, 0, 0
	err := c.rc.Write(c.writevFn)
	n, errno := c.wvn, c.werrno
	c.wbufs = nil
	clear(c.iov)
	return n, c.result("writev", err, errno)
}

// writevAll is WriteBuffers' RawConn callback.
func (c *Conn) writevAll(fd uintptr) bool {
	for {
		c.iov = c.iov[:0]
		for _, b := range *c.wbufs {
			if len(b) == 0 {
				continue
			}
			if len(c.iov) == maxIovecs {
				break
			}
			c.iov = append(c.iov, syscall.Iovec{Base: &b[0]})
			c.iov[len(c.iov)-1].SetLen(len(b))
		}
		if len(c.iov) == 0 {
			*c.wbufs = (*c.wbufs)[:0]
			return true
		}
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&c.iov[0])), uintptr(len(c.iov)))
		switch e {
		case 0:
			c.wvn += int64(r)
			consume(c.wbufs, int64(r))
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
}

// consume drops n written bytes from the front of v.
func consume(v *net.Buffers, n int64) {
	for len(*v) > 0 {
		l := int64(len((*v)[0]))
		if l > n {
			(*v)[0] = (*v)[0][n:]
			return
		}
		n -= l
		(*v)[0] = nil
		*v = (*v)[1:]
	}
}

// result is a raw call's error: the netpoller's (a deadline, a closed
// socket: already a *net.OpError), else the system call's, wrapped as
// net.TCPConn's methods wrap it, so that errors.Is(err, syscall.ECONNRESET)
// and friends still hold.
func (c *Conn) result(op string, pollErr error, errno syscall.Errno) error {
	if pollErr != nil {
		return pollErr
	}
	if errno != 0 {
		return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
	}
	return nil
}
