package command

import (
	"bytes"
	"strings"
)

// ArgIs compares an option argument with a lower-case keyword as Redis's
// strcasecmp on the argument's C string does (a NUL byte ends it).
func ArgIs(b []byte, kw string) bool {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.EqualFold(Bstr(b), kw)
}
