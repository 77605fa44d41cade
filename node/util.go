package node

import (
	"strconv"
	"unsafe"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// bstr views b as a string without copying; the string must not outlive b's
// contents (use it for lookups and comparisons only).
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseInt64Arg parses a command argument as Redis's string2ll does.
func parseInt64Arg(b []byte) (int64, bool) { return parseLL(b) }
