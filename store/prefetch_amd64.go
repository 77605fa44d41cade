package store

import "unsafe"

// prefetch asks the CPU to bring the cache line at addr into its caches
// without waiting for it (PREFETCHT0): a hint, which never faults and
// changes nothing the program can see.
//
//go:noescape
func prefetch(addr unsafe.Pointer)
