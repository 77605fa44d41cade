package aof

import (
	"os"
	"syscall"
)

// fdatasync is redis_fsync on Linux: the data, not the metadata that does
// not matter for reading it back.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
