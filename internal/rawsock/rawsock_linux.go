//go:build linux

package rawsock

import (
	"io"
	"iter"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read and Write are raw system calls. The
// callbacks handed to the RawConn are made once (writeFn, writevFn) and take
// their buffers from fields, so a call allocates nothing; readMu and writeMu
// keep those fields to one reader and one writer at a time.
//
// Reads stay inside one RawConn.Read call from one Read to the next (a
// coroutine, readLoop, suspended between them): the runtime clears a
// socket's readiness when such a call starts, so a reader that starts one
// per Read must try a read (EAGAIN) before it may wait, one wasted system
// call per request of a client that waits for each reply. Inside one call
// the readiness is kept: after a read that left the socket empty, the next
// Read waits for the readiness that new bytes set, without reading first.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	readMu sync.Mutex
	rbuf   []byte
	rerr   error // the last Read's error (set by readLoop)
	// drained: the last read left the socket empty, with no end of stream
	// pending (TCP_INQ said 0), so only bytes or a FIN that come after it
	// can be read, and they set the socket's readiness.
	drained bool
	// inq: TCP_INQ is on, so each read is a recvmsg whose control message
	// tells how many bytes it left in the socket (1 when only a FIN is
	// left). Without it every read that returns data is followed by one
	// that finds none, as net.TCPConn's: a short read does not tell
	// whether a FIN came with the data (both can set the readiness that
	// woke the reader at once).
	inq bool
	// loop: a Poller's goroutine reads c, holding readMu (EnterLoop).
	loop   bool
	loopFD int // the descriptor, in loop mode
	msg    syscall.Msghdr
	riov   syscall.Iovec
	cmsg   [3]uint64          // one TCP_CM_INQ control message: a Cmsghdr and an int32, aligned
	next   func() (int, bool) // resumes readLoop (iter.Pull); nil until the first Read
	stop   func()
	closed atomic.Bool

	writeMu    sync.Mutex
	writeFn    func(fd uintptr) bool
	writeNowFn func(fd uintptr)
	wbuf       []byte
	wn         int
	werrno     syscall.Errno
	writevFn   func(fd uintptr) bool
	wbufs      *net.Buffers
	wvn        int64
	iov        []syscall.Iovec
}

func wrapTCP(tc *net.TCPConn) *Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	c := &Conn{TCPConn: tc, rc: rc}
	_ = rc.Control(func(fd uintptr) {
		c.inq = syscall.SetsockoptInt(int(fd), syscall.SOL_TCP, tcpInq, 1) == nil
	})
	c.writeFn = c.writeAll
	c.writeNowFn = c.writeNow
	c.writevFn = c.writevAll
	return c
}

// Read reads once, as net.TCPConn's: what the socket holds, up to len(b);
// io.EOF when the peer closed its side.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if c.loop {
		return c.readNow(b) // readMu is the loop's (EnterLoop)
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.closed.Load() {
		return 0, c.closeFromRead()
	}
	if c.next == nil {
		c.next, c.stop = iter.Pull(c.readLoop)
	}
	c.rbuf, c.rerr = b, nil
	n, ok := c.next()
	c.rbuf = nil
	switch {
	case !ok:
		return 0, c.closedError()
	case c.rerr != nil && c.closed.Load():
		return 0, c.closeFromRead()
	case c.rerr != nil:
		return n, c.rerr
	}
	return n, nil
}

// readLoop serves Reads: each value it yields is one Read's byte count
// (0 with rerr set on an error). It returns when stopped (Close, or a Read
// that found the socket closed).
func (c *Conn) readLoop(yield func(int) bool) {
	for {
		var errno syscall.Errno
		eof, stopped := false, false
		err := c.rc.Read(func(fd uintptr) bool {
			for {
				if c.drained {
					c.drained = false
					return false // wait for new bytes' readiness, without a read that would find none
				}
				r, left, e := c.readRaw(fd)
				switch e {
				case 0:
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false
				default:
					errno = e
					return true
				}
				if r == 0 {
					eof = true
					return true
				}
				c.drained = left == 0
				if !yield(int(r)) {
					stopped = true
					return true
				}
			}
		})
		if stopped {
			return
		}
		// The call ended (an error, a deadline, the end of the stream); a
		// Read after it starts a new call, which reads first.
		c.drained = false
		switch {
		case eof:
			c.rerr = io.EOF
		default:
			c.rerr = c.result("read", err, errno)
		}
		if !yield(0) {
			return
		}
	}
}

// tcpInq is Linux's TCP_INQ socket option and its control message's type
// (TCP_CM_INQ), since Linux 4.18.
const tcpInq = 36

// readRaw reads once into rbuf. left is what TCP_INQ said the read left in
// the socket (non-zero when an end of stream is pending), or -1 when it is
// not known (TCP_INQ off): then only a read that finds nothing tells that
// the socket is empty.
func (c *Conn) readRaw(fd uintptr) (n uintptr, left int, errno syscall.Errno) {
	if !c.inq {
		n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		return n, -1, errno
	}
	c.riov.Base = &c.rbuf[0]
	c.riov.SetLen(len(c.rbuf))
	c.msg.Iov = &c.riov
	c.msg.Iovlen = 1
	c.msg.Control = (*byte)(unsafe.Pointer(&c.cmsg[0]))
	c.msg.SetControllen(int(unsafe.Sizeof(c.cmsg)))
	n, _, errno = syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
	c.riov.Base = nil // the caller's buffer is not the Conn's to keep
	left = -1
	if errno == 0 && c.msg.Controllen >= uint64(syscall.CmsgLen(4)) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&c.cmsg[0]))
		if h.Level == syscall.SOL_TCP && h.Type == tcpInq {
			left = int(*(*int32)(unsafe.Pointer(&c.cmsg[2])))
		}
	}
	return n, left, errno
}

// stopReads ends readLoop, whose RawConn.Read holds the socket open while
// it lasts (readMu held).
func (c *Conn) stopReads() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// closedError is what a Read of a closed Conn returns, as net.TCPConn's.
func (c *Conn) closedError() error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: net.ErrClosed}
}

// Close closes the socket. The descriptor cannot be closed while readLoop
// is inside the socket's read call (the runtime's Close would wait for that
// call to end): when no Read is under way readLoop is ended first; when one
// is (Close from another goroutine), the connection is shut down at once,
// which wakes that Read with the end of the stream, and the Read, seeing
// closed, ends readLoop and closes the descriptor. Whoever owns the
// connection calls Close (or Read) again when done with it, as the server's
// client loop and the replication link do, so the descriptor is always
// freed.
func (c *Conn) Close() error {
	first := c.closed.CompareAndSwap(false, true)
	if c.readMu.TryLock() {
		defer c.readMu.Unlock()
		c.stopReads()
		return c.TCPConn.Close()
	}
	if first {
		_ = c.rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
	return nil
}

// closeFromRead is Close by the reader (readMu held), once it saw closed.
func (c *Conn) closeFromRead() error {
	c.stopReads()
	_ = c.TCPConn.Close()
	return c.closedError()
}

// Write writes all of b (waiting for room as the netpoller says), as
// net.TCPConn's.
func (c *Conn) Write(b []byte) (int, error) { return c.write(b, false) }

// WriteNow writes what the socket takes of b now, without waiting: n <
// len(b) with a nil error when it is full. Write deadlines do not apply
// (it never waits). Writes are serialised with Write's.
func (c *Conn) WriteNow(b []byte) (int, error) { return c.write(b, true) }

func (c *Conn) write(b []byte, now bool) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wbuf, c.wn, c.werrno = b, 0, 0
	var err error
	if now {
		err = c.rc.Control(c.writeNowFn)
	} else {
		err = c.rc.Write(c.writeFn)
	}
	n, errno := c.wn, c.werrno
	c.wbuf = nil
	if errno == syscall.EAGAIN {
		errno = 0 // WriteNow's full socket
	}
	return n, c.result("write", err, errno)
}

// writeNow is WriteNow's RawConn callback: writeAll that stops at a full
// socket (werrno EAGAIN).
func (c *Conn) writeNow(fd uintptr) {
	if !c.writeAll(fd) {
		c.werrno = syscall.EAGAIN
	}
}

// writeAll is Write's RawConn callback: it writes until wbuf is empty, or
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
