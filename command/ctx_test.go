package command

import (
	"testing"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// KeySlot answers the hinted slot only for the hinted argument itself: an
// equal key elsewhere, a part of it, or any key once the hint is cleared is
// hashed.
func TestKeySlotHint(t *testing.T) {
	var c Ctx
	args := [][]byte{[]byte("SET"), []byte("user:{42}:name"), []byte("v")}
	const wrong = 7 // not the key's slot: shows where the hint was used
	if slots.KeySlot(args[1]) == wrong {
		t.Fatal("pick another wrong slot")
	}
	c.HintKeySlot(args[1], wrong)
	if got := c.KeySlot(args[1]); got != wrong {
		t.Fatalf("hinted argument: slot %d, want the hint %d", got, wrong)
	}
	for _, key := range [][]byte{[]byte("user:{42}:name"), args[1][:5], args[2], {}} {
		if got, want := c.KeySlot(key), slots.KeySlot(key); got != want {
			t.Fatalf("key %q: slot %d, want %d", key, got, want)
		}
	}
	c.ClearKeySlotHint()
	if got, want := c.KeySlot(args[1]), slots.KeySlot(args[1]); got != want {
		t.Fatalf("after the hint: slot %d, want %d", got, want)
	}
}

// The handler's database handle takes a hinted key's slot from the hint
// and hashes any other key; the store checks the slot in race builds, so a
// dispatcher that hinted a wrong slot fails every test that runs the
// command instead of filing the key under another slot.
func TestDBUsesTheHintTheStoreChecks(t *testing.T) {
	ks := store.New(1, nil, nil)
	var c Ctx
	c.SetDB(ks.DB(0))
	db := c.DB()
	args := [][]byte{[]byte("GET"), []byte("user:{42}:name")}
	slot := slots.KeySlot(args[1])
	db.Lock(slot)
	defer db.Unlock(slot)
	c.HintKeySlot(args[1], slot)
	db.SetString(args[1], []byte("v"), false)
	if e := db.Find(args[1]); e == nil || string(e.Bytes()) != "v" {
		t.Fatalf("hinted key: %v", e)
	}
	other := []byte("user:{42}:name") // an equal key elsewhere: hashed
	if db.Find(other) == nil {
		t.Fatal("unhinted copy of the key not found")
	}
	c.HintKeySlot(args[1], (slot+1)%slots.Count)
	defer func() {
		r := recover()
		if raceBuild && r == nil {
			t.Fatal("a wrong hint went unnoticed in a race build")
		}
	}()
	db.Find(args[1])
}
