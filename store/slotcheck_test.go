package store

import (
	"testing"

	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// Every operation that takes a key's slot from its caller refuses, in race
// builds (the tests), a slot that is not the key's: a caller that passed a
// wrong one would otherwise file the key under another slot's table and
// lock without a sign. With the right slot each is the operation without it.
func TestInSlotOperationsCheckTheSlot(t *testing.T) {
	if !checkSlots {
		t.Skip("the slot check is built only with -race or -tags shoal_slotcheck")
	}
	ks := New(1, nil, nil)
	db := ks.DB(0)
	key := []byte("user:{42}:name")
	slot := slots.KeySlot(key)
	wrong := (slot + 1) % slots.Count
	db.Lock(slot)
	defer db.Unlock(slot)
	e := db.SetStringInSlot(slot, key, []byte("v"), false)
	require.Same(t, e, db.Find(key))
	require.Same(t, e, db.LookupInSlot(slot, key, 0))
	ops := []struct {
		name string
		op   func(uint16)
	}{
		{"LookupInSlot", func(s uint16) { db.LookupInSlot(s, key, 0) }},
		{"SetStringInSlot", func(s uint16) { db.SetStringInSlot(s, key, []byte("w"), false) }},
		{"SetRawStringInSlot", func(s uint16) { db.SetRawStringInSlot(s, key, []byte("w"), false) }},
		{"SetExpireInSlot", func(s uint16) { db.SetExpireInSlot(s, key, e, 1) }},
		{"SetValueInSlot", func(s uint16) { db.SetValueInSlot(s, key, NewList(-2)) }},
		{"RemeasureInSlot", func(s uint16) { db.RemeasureInSlot(s, key) }},
		{"DeleteInSlot", func(s uint16) { db.DeleteInSlot(s, key) }},
	}
	for _, o := range ops {
		e = db.SetString(key, []byte("v"), false)
		require.Panics(t, func() { o.op(wrong) }, o.name)
		require.NotPanics(t, func() { o.op(slot) }, o.name)
	}
	require.Zero(t, db.SlotSize(wrong), "nothing was filed under the wrong slot")
}
