package strconvx

// AppendRepr appends s quoted like Redis's sdscatrepr(): in double quotes,
// \ and " backslash-escaped, \n \r \t \a \b as their escapes and every other
// byte outside C's isprint() as \xHH (MONITOR lines, CONFIG REWRITE).
func AppendRepr(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if IsCPrint(c) {
				dst = append(dst, c)
			} else {
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(dst, '"')
}

// IsCPrint reports whether b is printable for C's isprint() in the "C"
// locale.
func IsCPrint(b byte) bool { return b >= 0x20 && b <= 0x7e }
