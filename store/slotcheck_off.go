//go:build !race && !shoal_slotcheck

package store

// checkSlots: see slotcheck_on.go.
const checkSlots = false
