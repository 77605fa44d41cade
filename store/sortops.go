package store

// This file holds what SORT needs from the value types beyond their own
// APIs.

// ConvertToSkiplist switches a listpack sorted set to the skiplist encoding
// (no-op otherwise). Redis's SORT does this to any sorted set it sorts, even
// SORT_RO, and OBJECT ENCODING shows it.
func (z *ZSet) ConvertToSkiplist() {
	if z.sl == nil {
		z.convertToSkiplist()
	}
}
