package strconvx

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
)

// Long double arithmetic, for INCRBYFLOAT, HINCRBYFLOAT and the blocking
// commands' timeouts. Redis computes it in C's long double, which on
// x86-64 is the x87 80-bit extended format: a 64-bit significand, a 15-bit
// exponent (largest finite value just under 2^16384), round to nearest even.
// It parses operands with strtold and formats the result with "%.17Lf"
// before trimming trailing zeros. Go has no such type, so these helpers do
// the same arithmetic with math/big at 64 bits of precision: each operand is
// rounded once from its exact value, the sum is rounded once, and the
// decimal expansion is exact before rounding to 17 places, which is what
// glibc does, so results match Redis digit for digit.

const (
	ldPrec = 64
	// ldMaxExp is the largest big.Float exponent (mantissa in [0.5, 1)) of
	// a finite long double.
	ldMaxExp = 16384
	// Exact values at or below 2^ldZeroExp round to zero (half the
	// smallest denormal, 2^-16445): strtold then reports an underflow,
	// which Redis rejects.
	ldZeroExp = -16446
	// Decimal orders of magnitude outside these bounds are certainly out of
	// range (overflow) or round to zero, whatever the digits.
	ldMaxDecOrder = 4932  // LDBL_MAX ≈ 1.19e4932
	ldMinDecOrder = -4951 // 2^-16446 ≈ 1.82e-4951
	// ldMaxChars is Redis's MAX_LONG_DOUBLE_CHARS: longer inputs are
	// rejected before parsing.
	ldMaxChars = 5 * 1024
)

// LongDouble is a finite or infinite long double value; the zero value is
// +0.
type LongDouble struct {
	f   *big.Float // finite value (nil = +0); unused when inf != 0
	inf int8       // +1 / -1 for ±infinity
}

func (x LongDouble) float() *big.Float {
	if x.f == nil {
		return new(big.Float).SetPrec(ldPrec)
	}
	return x.f
}

// IsInf reports whether x is +inf or -inf.
func (x LongDouble) IsInf() bool { return x.inf != 0 }

// Add returns x + y rounded to long double; finite is false if the sum is
// infinite or NaN (an infinite operand, or an overflow).
func (x LongDouble) Add(y LongDouble) (sum LongDouble, finite bool) {
	if x.inf != 0 || y.inf != 0 {
		return LongDouble{}, false
	}
	z := new(big.Float).SetPrec(ldPrec).Add(x.float(), y.float())
	if z.MantExp(nil) > ldMaxExp {
		return LongDouble{}, false
	}
	return LongDouble{f: z}, true
}

// AppendHuman appends x as Redis's ld2string in LD_STR_HUMAN mode writes
// it: "%.17Lf", trailing zeros (and a trailing point) removed, and "-0"
// written as "0". x must be finite.
func (x LongDouble) AppendHuman(dst []byte) []byte {
	start := len(dst)
	return trimHuman(x.float().Append(dst, 'f', 17), start)
}

// AppendHumanFloat appends f as AppendHuman does the long double holding f
// (exactly: a long double holds every double), with infinities written
// "inf" and "-inf": addReplyHumanLongDouble of GEOPOS and WITHCOORD.
func AppendHumanFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	start := len(dst)
	return trimHuman(strconv.AppendFloat(dst, f, 'f', 17, 64), start)
}

// trimHuman removes the trailing zeros (and then a trailing point) of the
// "%.17Lf" text at dst[start:] and writes "-0" as "0".
func trimHuman(dst []byte, start int) []byte {
	if bytes.IndexByte(dst[start:], '.') >= 0 {
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		dst = bytes.TrimSuffix(dst, []byte("."))
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// CeilMulInt64 is (long long) ceill(x * m) on x86-64, the conversion Redis
// applies to a timeout in seconds (m = 1000 for milliseconds): a product
// out of the range of a long long, or infinite, converts to the minimum
// int64 (which Redis then rejects as negative).
func (x LongDouble) CeilMulInt64(m int64) int64 {
	if x.inf != 0 {
		return math.MinInt64
	}
	f := new(big.Float).SetPrec(ldPrec).Mul(x.float(), new(big.Float).SetInt64(m))
	i, acc := f.Int(nil) // truncates toward zero
	if acc == big.Below {
		i.Add(i, big.NewInt(1)) // ceil for positive fractions
	}
	if !i.IsInt64() {
		return math.MinInt64
	}
	return i.Int64()
}

// IsCSpace is C's isspace in the "C" locale.
func IsCSpace(b byte) bool {
	return b == ' ' || b >= '\t' && b <= '\r'
}

// ParseLongDouble parses b as Redis's string2ld does: all of b must be a
// number strtold accepts (decimal or hexadecimal, "inf"/"infinity" in any
// case, an optional sign; no leading space, no NUL, at most 5119 bytes),
// and the value must not overflow, round to zero from a non-zero input, or
// be NaN.
func ParseLongDouble(b []byte) (LongDouble, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars || IsCSpace(b[0]) {
		return LongDouble{}, false
	}
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	// bytes.EqualFold is ASCII case folding for these words: no other rune
	// folds to their letters.
	if bytes.EqualFold(b, []byte("inf")) || bytes.EqualFold(b, []byte("infinity")) {
		if neg {
			return LongDouble{inf: -1}, true
		}
		return LongDouble{inf: 1}, true
	}
	var f *big.Float
	var ok bool
	if len(b) >= 2 && b[0] == '0' && b[1]|0x20 == 'x' {
		f, ok = parseHexLD(b[2:])
	} else {
		f, ok = parseDecimalLD(b)
	}
	if !ok {
		return LongDouble{}, false
	}
	if neg {
		f.Neg(f)
	}
	return LongDouble{f: f}, true
}

// scanDigits returns the length of the prefix of b made of digits (hex
// digits if hex).
func scanDigits(b []byte, hex bool) int {
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || hex && (b[i]|0x20 >= 'a' && b[i]|0x20 <= 'f')) {
		i++
	}
	return i
}

// scanMantissa splits "int[.frac]" (at least one digit in all) at the start
// of b and returns the digits of both parts and the rest of b.
func scanMantissa(b []byte, hex bool) (intPart, frac, rest []byte, ok bool) {
	n := scanDigits(b, hex)
	intPart, b = b[:n], b[n:]
	if len(b) > 0 && b[0] == '.' {
		m := scanDigits(b[1:], hex)
		frac, b = b[1:1+m], b[1+m:]
	}
	return intPart, frac, b, len(intPart)+len(frac) > 0
}

// scanExponent parses the whole of b as an exponent "<marker>[+-]digits"
// (marker 'e' or 'p', any case), or an empty b as 0. The magnitude
// saturates at a billion, far beyond any finite long double.
func scanExponent(b []byte, marker byte) (int64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	if b[0]|0x20 != marker {
		return 0, false
	}
	b = b[1:]
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || scanDigits(b, false) != len(b) {
		return 0, false
	}
	var e int64
	for _, d := range b {
		if e < 1e9 {
			e = e*10 + int64(d-'0')
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

// parseDecimalLD parses an unsigned decimal number and rounds it to a long
// double.
func parseDecimalLD(b []byte) (*big.Float, bool) {
	intPart, frac, rest, ok := scanMantissa(b, false)
	if !ok {
		return nil, false
	}
	exp, ok := scanExponent(rest, 'e')
	if !ok {
		return nil, false
	}
	// The value is digits × 10^exp10 with the significant digits only.
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(append(digits, intPart...), frac...)
	exp10 := exp - int64(len(frac))
	digits = bytes.TrimLeft(digits, "0")
	trimmed := bytes.TrimRight(digits, "0")
	exp10 += int64(len(digits) - len(trimmed))
	digits = trimmed
	if len(digits) == 0 {
		return new(big.Float).SetPrec(ldPrec), true // a zero of any form is valid
	}
	order := exp10 + int64(len(digits)) - 1 // value in [10^order, 10^(order+1))
	if order > ldMaxDecOrder || order < ldMinDecOrder {
		return nil, false
	}
	m, _ := new(big.Int).SetString(string(digits), 10)
	ten := big.NewInt(10)
	if exp10 >= 0 {
		m.Mul(m, new(big.Int).Exp(ten, big.NewInt(exp10), nil))
		return ldCheck(new(big.Float).SetInt(m).SetPrec(ldPrec), nil, nil)
	}
	den := new(big.Int).Exp(ten, big.NewInt(-exp10), nil)
	q := new(big.Float).SetPrec(ldPrec).Quo(new(big.Float).SetInt(m), new(big.Float).SetInt(den))
	return ldCheck(q, m, den)
}

// ldCheck rejects a rounded value that overflowed, or whose exact value
// num/den (given for a non-integer) rounds to zero.
func ldCheck(f *big.Float, num, den *big.Int) (*big.Float, bool) {
	exp := f.MantExp(nil)
	if exp > ldMaxExp {
		return nil, false
	}
	if exp < ldZeroExp+8 && num != nil {
		// num/den <= 2^ldZeroExp  <=>  num × 2^-ldZeroExp <= den
		if new(big.Int).Lsh(num, -ldZeroExp).Cmp(den) <= 0 {
			return nil, false
		}
	}
	return f, true
}

// parseHexLD parses an unsigned hexadecimal float after its "0x" prefix:
// hex digits with an optional point, then an optional binary exponent.
func parseHexLD(b []byte) (*big.Float, bool) {
	intPart, frac, rest, ok := scanMantissa(b, true)
	if !ok {
		return nil, false
	}
	exp, ok := scanExponent(rest, 'p')
	if !ok {
		return nil, false
	}
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(append(digits, intPart...), frac...)
	exp2 := exp - 4*int64(len(frac))
	digits = bytes.TrimLeft(digits, "0")
	if len(digits) == 0 {
		return new(big.Float).SetPrec(ldPrec), true
	}
	m, _ := new(big.Int).SetString(string(digits), 16)
	top := int64(m.BitLen()) + exp2 // value in [2^(top-1), 2^top)
	if top > ldMaxExp+1 || top-1 < ldZeroExp {
		return nil, false
	}
	// Exactly 2^ldZeroExp (a power of two at the bottom) also rounds to zero.
	if top-1 == ldZeroExp && m.TrailingZeroBits() == uint(m.BitLen()-1) {
		return nil, false
	}
	f := new(big.Float).SetInt(m)
	f.SetMantExp(f, int(exp2))
	f.SetPrec(ldPrec)
	if f.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return f, true
}
