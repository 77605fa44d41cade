//go:build race || shoal_slotcheck

package store

// checkSlots makes every store call that takes a key's slot from its caller
// verify it against the key (slotIn): on in race builds, which is how the
// tests run, so a caller that passes a wrong slot fails its tests instead of
// filing the key under another slot's table and lock.
const checkSlots = true
