package store

import (
	"testing"
	"unsafe"
)

// TestSlotLayout checks what Slot's comment promises: every slot of a DB
// starts on a cache line and is three of them, the fields a command or an
// eviction touches fill the first, and the dict's inline buckets the second.
func TestSlotLayout(t *testing.T) {
	var s Slot
	if size := unsafe.Sizeof(s); size != 3*slotAlign {
		t.Fatalf("Slot is %d bytes, want %d", size, 3*slotAlign)
	}
	var db DB
	if off := unsafe.Offsetof(db.slots); off%slotAlign != 0 {
		t.Fatalf("DB.slots at offset %d, not a multiple of %d", off, slotAlign)
	}
	dictAt := unsafe.Offsetof(s.dict)
	firstLine := map[string]uintptr{
		"mu":           unsafe.Offsetof(s.mu),
		"keys":         unsafe.Offsetof(s.keys),
		"bytes":        unsafe.Offsetof(s.bytes),
		"dict.buckets": dictAt + unsafe.Offsetof(s.dict.buckets),
		"dict.count":   dictAt + unsafe.Offsetof(s.dict.count),
		"dict.rehash":  dictAt + unsafe.Offsetof(s.dict.rehash) + unsafe.Sizeof(s.dict.rehash) - 1,
	}
	for name, off := range firstLine {
		if off >= slotAlign {
			t.Errorf("%s at offset %d, past the first cache line", name, off)
		}
	}
	if in := dictAt + unsafe.Offsetof(s.dict.inline); in != slotAlign {
		t.Errorf("dict.inline at offset %d, want %d (the second line)", in, slotAlign)
	}
	// A DB is allocated alone and is far larger than a page, so the
	// allocator page-aligns it: its slots are cache-line aligned in memory.
	d := &DB{}
	if addr := uintptr(unsafe.Pointer(&d.slots[0])); addr%slotAlign != 0 {
		t.Errorf("a new DB's first slot at %#x, not cache-line aligned", addr)
	}
}
