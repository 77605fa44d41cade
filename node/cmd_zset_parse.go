package node

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// Number and range parsing for the sorted set and geo commands, with the
// exact acceptance rules of Redis 7.0's C code: getDoubleFromObject
// (string2d over strtod), zslParseRange (bare strtod on a C string) and
// zslParseLexRangeItem.

func isCSpaceByte(b byte) bool {
	return b == ' ' || b >= '\t' && b <= '\r'
}

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

// cStrtod parses the longest prefix of s that C's strtod (glibc, "C" locale)
// accepts: leading white space, a sign, then a decimal or hexadecimal
// number, "inf"/"infinity" or "nan"/"nan(chars)". It returns the value and
// the length consumed (0 when nothing was converted, as strtod then leaves
// its end pointer at the start), and whether strtod would set ERANGE
// (overflow to ±inf, or a non-zero number rounding to zero).
func cStrtod(s []byte) (val float64, n int, erange bool) {
	i := 0
	for i < len(s) && isCSpaceByte(s[i]) {
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
	v, err := strconv.ParseFloat(command.Bstr(s[i:j]), 64)
	if err != nil {
		if !command.IsRangeErr(err) {
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
		if !command.IsRangeErr(err) {
			return 0, 0, false, false
		}
		return v, j, true, true
	}
	return v, j, v == 0 && nonZero, true
}

// parseDouble is Redis's string2d (getDoubleFromObject): the whole argument
// must be a number, without leading space; overflow, underflow to zero and
// NaN are refused, "inf" is accepted.
func parseDouble(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpaceByte(b[0]) {
		return 0, false
	}
	v, n, erange := cStrtod(b)
	if n != len(b) || math.IsNaN(v) {
		return 0, false
	}
	if erange && (math.IsInf(v, 0) || v == 0) {
		return 0, false
	}
	return v, true
}

// parseDoubleOrReply parses a float argument, replying msg (or "value is
// not a valid float") when it is not one.
func parseDoubleOrReply(c *Client, b []byte, msg string) (float64, bool) {
	v, ok := parseDouble(b)
	if !ok {
		if msg == "" {
			c.ErrNotFloat()
		} else {
			c.Error("ERR " + msg)
		}
	}
	return v, ok
}

// parseRangeBound parses one end of a score range as zslParseRange does: an
// optional '(' for an exclusive bound, then strtod over the argument read
// as a C string, which must be consumed entirely (so "" and "(" mean 0, and
// leading blanks and overflow to ±inf are accepted); NaN is refused.
func parseRangeBound(b []byte) (v float64, ex, ok bool) {
	s := []byte(cString(b))
	if len(s) > 0 && s[0] == '(' {
		ex = true
		s = s[1:]
	}
	v, n, _ := cStrtod(s)
	if n != len(s) || math.IsNaN(v) {
		return 0, false, false
	}
	return v, ex, true
}

// parseScoreRange parses min and max into a range, or reports false (the
// caller replies "min or max is not a float").
func parseScoreRange(min, max []byte) (store.ScoreRange, bool) {
	var r store.ScoreRange
	var ok bool
	if r.Min, r.MinEx, ok = parseRangeBound(min); !ok {
		return r, false
	}
	if r.Max, r.MaxEx, ok = parseRangeBound(max); !ok {
		return r, false
	}
	return r, true
}

// parseLexBound parses a ZRANGEBYLEX bound: "-", "+", "(member" or
// "[member" (the member being the rest of the argument, NULs included);
// '+' and '-' must end the argument's C string.
func parseLexBound(b []byte) (store.LexBound, bool) {
	if len(b) == 0 {
		return store.LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return store.LexBound{}, false
		}
		inf := int8(1)
		if b[0] == '-' {
			inf = -1
		}
		return store.LexBound{Inf: inf, Ex: true}, true
	case '(':
		return store.LexBound{Value: b[1:], Ex: true}, true
	case '[':
		return store.LexBound{Value: b[1:]}, true
	}
	return store.LexBound{}, false
}

// parseLexRange parses both ends, or reports false (the caller replies
// "min or max not valid string range item").
func parseLexRange(min, max []byte) (store.LexRange, bool) {
	lo, ok1 := parseLexBound(min)
	hi, ok2 := parseLexBound(max)
	return store.LexRange{Min: lo, Max: hi}, ok1 && ok2
}

// parseLongOrReply parses a "long" argument (getLongFromObjectOrReply).
func parseLongOrReply(c *Client, b []byte) (int64, bool) {
	v, ok := command.ParseInt64(b)
	if !ok {
		c.ErrNotInteger()
	}
	return v, ok
}

// parseRangeLongOrReply is getRangeLongFromObjectOrReply: an integer within
// [lo, hi]; msg (if not empty) replaces both error texts.
func parseRangeLongOrReply(c *Client, b []byte, lo, hi int64, msg string) (int64, bool) {
	v, ok := command.ParseInt64(b)
	if !ok {
		if msg != "" {
			c.Error("ERR " + msg)
		} else {
			c.ErrNotInteger()
		}
		return 0, false
	}
	if v < lo || v > hi {
		if msg != "" {
			c.Error("ERR " + msg)
		} else {
			c.Error("ERR value is out of range, value must between " + itoa(lo) + " and " + itoa(hi))
		}
		return 0, false
	}
	return v, true
}

// parsePositiveLongOrReply is getPositiveLongFromObjectOrReply.
func parsePositiveLongOrReply(c *Client, b []byte, msg string) (int64, bool) {
	if msg == "" {
		msg = "value is out of range, must be positive"
	}
	return parseRangeLongOrReply(c, b, 0, math.MaxInt64, msg)
}
