package command

import (
	"math"
	"strconv"
)

// Argument helpers that came with the generic key commands (commands/generic)
// and that other families share: C-string option words, SCAN cursors and
// database numbers, each parsed as Redis parses it.

// ParseScanCursor parses a SCAN cursor as Redis's parseScanCursorOrReply
// does with strtoul: the argument is read as a C string (up to a NUL), a
// leading space is refused, an optional sign is accepted ("-1" is 2^64-1),
// the empty string is 0, overflow is refused.
func ParseScanCursor(b []byte) (uint64, bool) {
	s := CString(b)
	if s == "" {
		return 0, true
	}
	switch s[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// ScanMaxCount bounds the COUNT of SCAN, HSCAN, SSCAN and ZSCAN handed to the
// store, which multiplies it (the visit budget is ten buckets per wanted
// key): a COUNT above the key count already means "the whole database".
const ScanMaxCount = math.MaxInt32

// ParseDBIndex parses a database number as Redis's getIntFromObjectOrReply
// does (an int32), and replies the error itself when it fails: errMsg if
// not empty, else Redis's generic texts.
func ParseDBIndex(c *Ctx, arg []byte, errMsg string) (int, bool) {
	n, ok := ParseInt64(arg)
	if !ok {
		if errMsg != "" {
			c.Error(errMsg)
		} else {
			c.ErrNotInteger()
		}
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		if errMsg != "" {
			c.Error(errMsg)
		} else {
			c.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		}
		return 0, false
	}
	return int(n), true
}
