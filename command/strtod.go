package command

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/strconvx"
)

// C's strtod (glibc, "C" locale), which SORT's scores, the sorted set
// commands' ranges and Redis's string2d all parse with.

func isHexDigit(b byte) bool {
	return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'f'
}

func isDecDigit(b byte) bool { return b >= '0' && b <= '9' }

// hasPrefixFold reports whether b starts with the lower-case word w,
// ignoring ASCII case.
func hasPrefixFold(b []byte, w string) bool {
	if len(b) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// Strtod parses the longest prefix of s that C's strtod (glibc, "C" locale)
// accepts: leading white space, a sign, then a decimal or hexadecimal
// number, "inf"/"infinity" or "nan"/"nan(chars)". It returns the value and
// the length consumed (0 when nothing was converted, as strtod then leaves
// its end pointer at the start), and whether strtod would set ERANGE
// (overflow to ±inf, or a non-zero number rounding to zero).
func Strtod(s []byte) (val float64, n int, erange bool) {
	i := 0
	for i < len(s) && strconvx.IsCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	switch {
	case hasPrefixFold(s[i:], "inf"):
		j := i + 3
		if hasPrefixFold(s[j:], "inity") {
			j += 5
		}
		return sign(math.Inf(1)), j, false
	case hasPrefixFold(s[i:], "nan"):
		j := i + 3
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isDecDigit(s[k]) || s[k]|0x20 >= 'a' && s[k]|0x20 <= 'z' || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				j = k + 1
			}
		}
		return math.NaN(), j, false
	}
	if i+1 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' {
		if v, end, er, ok := scanHexFloat(s, i+2, neg); ok {
			return v, end, er
		}
		// "0x" without hex digits: strtod converts the "0" alone.
		return sign(0), i + 1, false
	}
	// Decimal: digits with an optional point, then an optional exponent
	// (taken only when digits follow it).
	j := i
	nonZero, digits := false, 0
	for j < len(s) && isDecDigit(s[j]) {
		nonZero = nonZero || s[j] != '0'
		digits++
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDecDigit(s[j]) {
			nonZero = nonZero || s[j] != '0'
			digits++
			j++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDecDigit(s[k]) {
			for k < len(s) && isDecDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	v, err := strconv.ParseFloat(Bstr(s[i:j]), 64)
	if err != nil {
		if !IsRangeErr(err) {
			return 0, 0, false // cannot happen: the text was validated above
		}
		return sign(v), j, true
	}
	return sign(v), j, v == 0 && nonZero
}

// scanHexFloat parses the hexadecimal float after "0x" at s[i:]; ok is
// false when there is no hex digit.
func scanHexFloat(s []byte, i int, neg bool) (val float64, end int, erange, ok bool) {
	j := i
	nonZero, digits := false, 0
	for j < len(s) && isHexDigit(s[j]) {
		nonZero = nonZero || s[j] != '0'
		digits++
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isHexDigit(s[j]) {
			nonZero = nonZero || s[j] != '0'
			digits++
			j++
		}
	}
	if digits == 0 {
		return 0, 0, false, false
	}
	text := make([]byte, 0, j-i+24)
	text = append(text, "0x"...)
	text = append(text, s[i:j]...)
	exp := []byte("p0")
	if j < len(s) && s[j]|0x20 == 'p' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDecDigit(s[k]) {
			for k < len(s) && isDecDigit(s[k]) {
				k++
			}
			exp = s[j:k]
			j = k
		}
	}
	text = append(text, 'p')
	text = append(text, exp[1:]...)
	v, err := strconv.ParseFloat(string(text), 64)
	if neg {
		v = -v
	}
	if err != nil {
		if !IsRangeErr(err) {
			return 0, 0, false, false
		}
		return v, j, true, true
	}
	return v, j, v == 0 && nonZero, true
}
