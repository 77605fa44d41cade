package slots

import (
	"errors"

	"github.com/shoal-db/shoal/strconvx"
)

// ErrInvalidSlot is Redis's reply to a slot argument that is not an integer
// in 0..16383 (cluster.c getSlotOrReply).
var ErrInvalidSlot = errors.New("ERR Invalid or out of range slot")

// ParseSlot parses a slot argument with Redis's integer rules (string2ll: an
// optional '-', no '+', no leading zeros, no spaces) and checks its range.
func ParseSlot(arg []byte) (int, error) {
	v, ok := strconvx.ParseInt(arg)
	if !ok || v < 0 || v >= Count {
		return 0, ErrInvalidSlot
	}
	return int(v), nil
}
