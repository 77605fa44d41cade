package strconvx

import (
	"math"
	"strconv"
)

// AppendDouble appends f as C's printf("%.17g") writes it (17 significant
// digits, trailing zeros dropped, an exponent of at least two digits when it
// is below -4 or at least 17), with infinities and NaN spelled "inf", "-inf"
// and "nan" as Redis prints them: the text of addReplyDouble's RESP2 bulk
// string and RESP3 double, and of a sorted set score.
func AppendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	// strconv's 'g' with precision 17 is %.17g for finite values: the same
	// correctly rounded digits, trailing zeros removed, %e below 1e-4 and
	// from 1e17, and a two-digit minimum exponent.
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
