//go:build linux

package rawsock

import (
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// inQueue is how many bytes the socket holds unread (ioctl SIOCINQ, which
// is FIONREAD, TIOCINQ in package syscall).
func inQueue(t *testing.T, rc syscall.RawConn) int {
	t.Helper()
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		t.Fatalf("SIOCINQ: %v %v", err, errno)
	}
	return int(n)
}

// TestTCPInqIsOn: on this kernel (Linux ≥ 4.18) a wrapped socket reads with
// TCP_INQ, and a read that takes all the socket holds reports it empty.
func TestTCPInqIsOn(t *testing.T) {
	w, client := pair(t)
	c, ok := w.(*Conn)
	if !ok {
		t.Skip("no raw reads on this platform")
	}
	if !c.inq {
		t.Fatal("TCP_INQ is off: every read that returns data is followed by one that finds none")
	}
	if _, err := client.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	rc, err := c.TCPConn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// Wait until all 10 bytes are in the socket (SIOCINQ), a bounded
	// number of times: a loaded machine may deliver loopback bytes late.
	for i := 0; inQueue(t, rc) < 10; i++ {
		if i == 1000 {
			t.Fatal("the 10 bytes written never reached the socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.rbuf = make([]byte, 4)
	var lefts []int
	for range 3 {
		err = rc.Read(func(fd uintptr) bool {
			n, left, errno := c.readRaw(fd)
			if errno != 0 || n == 0 {
				t.Errorf("read %d bytes, errno %v", n, errno)
			}
			lefts = append(lefts, left)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{6, 2, 0}; !slices.Equal(lefts, want) {
		t.Fatalf("TCP_INQ after reads of 4, 4 and 2 bytes = %v, want %v", lefts, want)
	}
}
