package node

import "github.com/shoal-db/shoal/store"

// lookupTyped is the lookup every collection command starts with (Redis's
// lookupKeyRead/lookupKeyWrite + checkType): a read counts a keyspace hit
// or miss, a write does not. It returns (value, true) when the key holds a
// value of type t, (nil, true) when the key is missing, and (nil, false)
// after replying WRONGTYPE.
func lookupTyped[T any](c *Client, db *store.DB, key []byte, write bool, t store.Type, value func(*store.Entry) *T) (*T, bool) {
	var e *store.Entry
	if write {
		e = lookupWrite(db, key)
	} else {
		e = db.Find(key)
	}
	if e == nil {
		return nil, true
	}
	if e.Type() != t {
		c.ErrWrongType()
		return nil, false
	}
	return value(e), true
}
