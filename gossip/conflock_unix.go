//go:build unix

package gossip

import (
	"os"
	"syscall"
)

var errWouldBlock = syscall.EWOULDBLOCK

// flockExclusive is flock(fd, LOCK_EX|LOCK_NB), retried on EINTR.
func flockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
