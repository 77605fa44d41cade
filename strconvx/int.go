package strconvx

// ParseInt parses s exactly as Redis's string2ll does: "0", or an optional
// '-' followed by a non-zero digit and more digits, at most 20 bytes, no
// '+', no leading zeros, no spaces, no "-0", without overflowing an int64.
// These are also the strings the listpack, intset and OBJECT ENCODING "int"
// checks accept (string2ll + ll2string round trip).
func ParseInt[T ~string | ~[]byte](s T) (int64, bool) {
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
		return -int64(v), true // wraps to MinInt64 for 2^63, as intended
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
