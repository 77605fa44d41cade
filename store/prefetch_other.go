//go:build !amd64

package store

import "unsafe"

// prefetch is a no-op where the store has no prefetch instruction.
func prefetch(addr unsafe.Pointer) {}
