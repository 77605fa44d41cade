//go:build !linux

package aof

import "os"

// fdatasync is fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// fdatasyncHolding is fdatasync (fsync_linux.go says why Linux differs).
func fdatasyncHolding(f *os.File) error { return f.Sync() }
