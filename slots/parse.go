package slots

import "errors"

// ErrInvalidSlot is Redis's reply to a slot argument that is not an integer
// in 0..16383 (cluster.c getSlotOrReply).
var ErrInvalidSlot = errors.New("ERR Invalid or out of range slot")

// ParseSlot parses a slot argument with Redis's integer rules (string2ll: an
// optional '-', no '+', no leading zeros, no spaces) and checks its range.
func ParseSlot(arg []byte) (int, error) {
	v, ok := ParseInt64(arg)
	if !ok || v < 0 || v >= Count {
		return 0, ErrInvalidSlot
	}
	return int(v), nil
}

// ParseInt64 parses s exactly as Redis's string2ll does: "0", or an optional
// '-' followed by a non-zero digit and more digits, without overflow.
func ParseInt64(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if s[0] == '-' {
		neg = true
		i++
		if i == len(s) {
			return 0, false
		}
	}
	if s[i] < '1' || s[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
