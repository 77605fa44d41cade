package command

import (
	"testing"

	"github.com/shoal-db/shoal/slots"
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
