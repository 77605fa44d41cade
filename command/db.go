package command

import (
	"unsafe"

	"github.com/shoal-db/shoal/store"
)

// DB is the database a handler works on (Ctx.DB, Ctx.DBOf), whose key
// operations take each key's hash slot from the dispatcher when it already
// computed it: the dispatcher hashes a command's key to route it and to lock
// its slot, and Ctx.KeySlot hands that slot back for that very argument, so
// a one-key command hashes its key once, whatever store calls its handler
// makes. Any other key is hashed as the store would. The store checks the
// slot it is given against the key in race builds (store/slotcheck_on.go),
// which is how the tests run.
//
// The embedded *store.DB provides everything else (locks, scans, ID...).
type DB struct {
	*store.DB
	ctx *Ctx
}

// Find is store.DB.Find.
func (d DB) Find(key []byte) *store.Entry {
	return d.DB.LookupInSlot(d.ctx.KeySlot(key), key, 0)
}

// Lookup is store.DB.Lookup.
func (d DB) Lookup(key []byte, flags store.LookupFlags) *store.Entry {
	return d.DB.LookupInSlot(d.ctx.KeySlot(key), key, flags)
}

// Exists is store.DB.Exists.
func (d DB) Exists(key []byte) bool {
	return d.DB.LookupInSlot(d.ctx.KeySlot(key), key, store.LookupNoTouch|store.LookupNoStats) != nil
}

// SetString is store.DB.SetString.
func (d DB) SetString(key, val []byte, keepTTL bool) *store.Entry {
	return d.DB.SetStringInSlot(d.ctx.KeySlot(key), key, val, keepTTL)
}

// SetRawString is store.DB.SetRawString.
func (d DB) SetRawString(key, b []byte, keepTTL bool) *store.Entry {
	return d.DB.SetRawStringInSlot(d.ctx.KeySlot(key), key, b, keepTTL)
}

// SetObject is store.DB.SetObject.
func (d DB) SetObject(key []byte, t store.Type, p unsafe.Pointer) *store.Entry {
	return d.DB.SetObjectInSlot(d.ctx.KeySlot(key), key, t, p)
}

// SetValue is store.DB.SetValue.
func (d DB) SetValue(key []byte, v store.Value) *store.Entry {
	return d.DB.SetValueInSlot(d.ctx.KeySlot(key), key, v)
}

// Delete is store.DB.Delete.
func (d DB) Delete(key []byte) bool {
	return d.DB.DeleteInSlot(d.ctx.KeySlot(key), key)
}

// SetExpire is store.DB.SetExpire.
func (d DB) SetExpire(key []byte, e *store.Entry, at int64) {
	d.DB.SetExpireInSlot(d.ctx.KeySlot(key), key, e, at)
}

// Remeasure is store.DB.Remeasure.
func (d DB) Remeasure(key []byte) {
	d.DB.RemeasureInSlot(d.ctx.KeySlot(key), key)
}
