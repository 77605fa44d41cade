// Package longdouble does the arithmetic of C's long double on x86-64 (the
// x87 80-bit extended format) with math/big, as Redis's INCRBYFLOAT,
// HINCRBYFLOAT and blocking timeouts compute it.
package longdouble

import (
	"bytes"
	"math/big"
)

// Redis computes it in C's long double, which on
// x86-64 is the x87 80-bit extended format: a 64-bit significand, a 15-bit
// exponent (largest finite value just under 2^16384), round to nearest even.
// It parses operands with strtold and formats the result with "%.17Lf"
// before trimming trailing zeros. Go has no such type, so these helpers do
// the same arithmetic with math/big at 64 bits of precision: each operand is
// rounded once from its exact value, the sum is rounded once, and the
// decimal expansion is exact before rounding to 17 places, which is what
// glibc does, so results match Redis digit for digit.

const (
	Prec = 64
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

// Value is a finite or infinite long double value.
type Value struct {
	f   *big.Float // finite value (nil = +0); unused when inf != 0
	inf int8       // +1 / -1 for ±infinity
}

var Zero = Value{}

func (x Value) Float() *big.Float {
	if x.f == nil {
		return new(big.Float).SetPrec(Prec)
	}
	return x.f
}

// Add returns x + y rounded to long double; finite is false if the sum is
// infinite or NaN (an infinite operand, or an overflow).
func (x Value) Add(y Value) (sum Value, finite bool) {
	if x.inf != 0 || y.inf != 0 {
		return Value{}, false
	}
	z := new(big.Float).SetPrec(Prec).Add(x.Float(), y.Float())
	if z.MantExp(nil) > ldMaxExp {
		return Value{}, false
	}
	return Value{f: z}, true
}

// AppendHuman formats x as Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf",
// trailing zeros (and a trailing point) removed, and "-0" written as "0".
// x must be finite.
func (x Value) AppendHuman(dst []byte) []byte {
	start := len(dst)
	dst = x.Float().Append(dst, 'f', 17)
	s := dst[start:]
	if bytes.IndexByte(s, '.') >= 0 {
		s = bytes.TrimRight(s, "0")
		s = bytes.TrimSuffix(s, []byte("."))
	}
	if string(s) == "-0" {
		return append(dst[:start], '0')
	}
	return dst[:start+len(s)]
}

// isCSpace is C's isspace in the C locale.
func isCSpace(b byte) bool {
	return b == ' ' || b >= '\t' && b <= '\r'
}

// Parse parses b as Redis's string2ld does: all of b must be a
// number strtold accepts (decimal or hexadecimal, "inf"/"infinity" in any
// case, an optional sign; no leading space, no NUL, at most 5119 bytes),
// and the value must not overflow, round to zero from a non-zero input, or
// be NaN.
func Parse(b []byte) (Value, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars || isCSpace(b[0]) {
		return Value{}, false
	}
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	if bytes.EqualFold(b, []byte("inf")) || bytes.EqualFold(b, []byte("infinity")) {
		if neg {
			return Value{inf: -1}, true
		}
		return Value{inf: 1}, true
	}
	var f *big.Float
	var ok bool
	if len(b) >= 2 && b[0] == '0' && b[1]|0x20 == 'x' {
		f, ok = parseHexLD(b[2:])
	} else {
		f, ok = parseDecimalLD(b)
	}
	if !ok {
		return Value{}, false
	}
	if neg {
		f.Neg(f)
	}
	return Value{f: f}, true
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
		return new(big.Float).SetPrec(Prec), true // a zero of any form is valid
	}
	order := exp10 + int64(len(digits)) - 1 // value in [10^order, 10^(order+1))
	if order > ldMaxDecOrder || order < ldMinDecOrder {
		return nil, false
	}
	m, _ := new(big.Int).SetString(string(digits), 10)
	ten := big.NewInt(10)
	if exp10 >= 0 {
		m.Mul(m, new(big.Int).Exp(ten, big.NewInt(exp10), nil))
		return ldCheck(new(big.Float).SetInt(m).SetPrec(Prec), nil, nil)
	}
	den := new(big.Int).Exp(ten, big.NewInt(-exp10), nil)
	q := new(big.Float).SetPrec(Prec).Quo(new(big.Float).SetInt(m), new(big.Float).SetInt(den))
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
		return new(big.Float).SetPrec(Prec), true
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
	f.SetPrec(Prec)
	if f.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return f, true
}

// Inf is +1 or -1 for an infinite value, 0 for a finite one.
func (x Value) Inf() int { return int(x.inf) }
