//go:build unix

package node

import "syscall"

// mapAnonymous maps n bytes of private anonymous memory (nil on failure).
func mapAnonymous(n int) []byte {
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return mem
}

func unmapAnonymous(mem []byte) { _ = syscall.Munmap(mem) }
