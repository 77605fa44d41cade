package geohash

import (
	"math"
	"math/big"
)

// Correctly rounded sin, cos and asin for the geo distance formulas.
//
// Redis computes distances with glibc's libm, whose sin/cos/asin return the
// correctly rounded result in all but a handful of cases; Go's math package
// is faithful but differs from it in the last bit for a fifth to a third of
// all arguments, which shows in GEODIST, WITHDIST and STOREDIST results
// (STOREDIST stores the full double). These versions evaluate in
// double-double arithmetic (about 100 bits) and round once, so they agree
// with glibc wherever glibc is correctly rounded.

// dd is an unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

func ddMul(a, b dd) dd {
	p := twoProd(a.hi, b.hi)
	p.lo += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p.hi, p.lo)
}

func ddMulF(a dd, b float64) dd {
	p := twoProd(a.hi, b)
	p.lo += a.lo * b
	return quickTwoSum(p.hi, p.lo)
}

// ddDivF divides by a double.
func ddDivF(a dd, b float64) dd {
	q1 := a.hi / b
	p := twoProd(q1, b)
	r := twoSum(a.hi, -p.hi)
	r.lo -= p.lo
	r.lo += a.lo
	q2 := (r.hi + r.lo) / b
	return quickTwoSum(q1, q2)
}

func ddDiv(a, b dd) dd {
	q1 := a.hi / b.hi
	r := ddAdd(a, ddNeg(ddMulF(b, q1)))
	q2 := r.hi / b.hi
	r = ddAdd(r, ddNeg(ddMulF(b, q2)))
	q3 := r.hi / b.hi
	q := quickTwoSum(q1, q2)
	return ddAdd(q, dd{q3, 0})
}

// halfPi holds pi/2 as three doubles (about 160 bits).
var halfPi [3]float64

func init() {
	const digits = "1.570796326794896619231321691639751442098584699687552910487472296153908203143104499314017412671058534"
	f, _, err := big.ParseFloat(digits, 10, 256, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	for i := range halfPi {
		halfPi[i], _ = f.Float64()
		f.Sub(f, new(big.Float).SetPrec(256).SetFloat64(halfPi[i]))
	}
}

// reduceHalfPi returns r and k with x = k*pi/2 + r, |r| <= ~pi/4; ok is
// false when x is too large for this reduction to stay accurate.
func reduceHalfPi(x float64) (r dd, k int64, ok bool) {
	if math.Abs(x) > 1<<20 || math.IsNaN(x) {
		return dd{}, 0, false
	}
	kf := math.RoundToEven(x / halfPi[0])
	r = dd{x, 0}
	for _, p := range halfPi {
		r = ddAdd(r, ddNeg(twoProd(kf, p)))
	}
	return r, int64(kf), true
}

// Taylor coefficients: sinCoef[i] = (-1)^i/(2i+1)!, cosCoef[i] = (-1)^i/(2i)!,
// as double-doubles.
const seriesTerms = 15

var sinCoef, cosCoef [seriesTerms]dd

func init() {
	fact := new(big.Float).SetPrec(256).SetInt64(1)
	one := new(big.Float).SetPrec(256).SetInt64(1)
	for n := 1; n < 2*seriesTerms; n++ {
		fact.Mul(fact, new(big.Float).SetPrec(256).SetInt64(int64(n)))
		inv := new(big.Float).SetPrec(256).Quo(one, fact)
		if n%4 == 2 || n%4 == 3 {
			inv.Neg(inv)
		}
		hi, _ := inv.Float64()
		lo, _ := new(big.Float).SetPrec(256).Sub(inv, new(big.Float).SetPrec(256).SetFloat64(hi)).Float64()
		if n%2 == 1 {
			sinCoef[n/2] = dd{hi, lo}
		} else {
			cosCoef[n/2] = dd{hi, lo}
		}
	}
	cosCoef[0] = dd{1, 0}
	// asin y = sum (2k)! / (4^k (k!)^2 (2k+1)) y^(2k+1)
	c := new(big.Float).SetPrec(256).SetInt64(1) // (2k)! / (4^k (k!)^2)
	for k := 0; k < asinTerms; k++ {
		if k > 0 {
			c.Mul(c, new(big.Float).SetPrec(256).SetInt64(int64((2*k-1)*(2*k))))
			c.Quo(c, new(big.Float).SetPrec(256).SetInt64(int64(4*k*k)))
		}
		v := new(big.Float).SetPrec(256).Quo(c, new(big.Float).SetPrec(256).SetInt64(int64(2*k+1)))
		hi, _ := v.Float64()
		lo, _ := new(big.Float).SetPrec(256).Sub(v, new(big.Float).SetPrec(256).SetFloat64(hi)).Float64()
		asinCoef[k] = dd{hi, lo}
	}
}

// asinTerms covers |y| <= 1/2 to 2^-110: terms shrink by about 4 per step.
const asinTerms = 60

var asinCoef [asinTerms]dd

// polySeries evaluates sum coef[i]*x2^i (times x when odd) with Horner's
// scheme, adaptively truncated and split as sinCosSeries describes.
func polySeries(coef []dd, x dd, odd, precise bool) dd {
	x2 := ddMul(x, x)
	stop, ddLimit := 0x1p-72, 0x1p-14
	if precise {
		stop, ddLimit = 0x1p-110, 0x1p-50
	}
	last, split := 0, 1
	mag := 1.0
	for last < len(coef)-1 {
		mag *= x2.hi * math.Abs(coef[last+1].hi/coef[last].hi)
		if mag < stop {
			break
		}
		last++
		if mag >= ddLimit {
			split = last + 1
		}
	}
	var acc dd
	if last >= split {
		p := coef[last].hi
		for i := last - 1; i >= split; i-- {
			p = p*x2.hi + coef[i].hi
		}
		acc = dd{p, 0}
	} else {
		acc = coef[last]
	}
	for i := min(last, split) - 1; i >= 0; i-- {
		acc = ddAdd(ddMul(acc, x2), coef[i])
	}
	if odd {
		return ddMul(acc, x)
	}
	return acc
}

// sinCosSeries evaluates sin(r) (or cos(r)) for |r| <= ~pi/4 by its Taylor
// series (Horner's scheme in r^2). The series stops once terms fall below
// 2^-110 (precise) or 2^-72 (fast) of the result; terms smaller than 2^-50
// (precise) or 2^-14 (fast) of it are summed in double, the others in
// double-double. The fast evaluation's relative error stays below
// fastErrBound; the precise one's is about 2^-100.
func sinCosSeries(r dd, cos, precise bool) dd {
	if cos {
		return polySeries(cosCoef[:], r, false, precise)
	}
	return polySeries(sinCoef[:], r, true, precise)
}

// fastErrBound bounds the relative error of a fast evaluation (dropped
// terms below 2^-72, double-evaluated terms below 2^-14 with a 2^-51
// relative error: about 2^-65; with margin).
const fastErrBound = 0x1p-62

// roundedIfSafe returns v rounded to a double when an error of at most
// errBound*|v| cannot change that rounding.
func roundedIfSafe(v dd, errBound float64) (float64, bool) {
	if v.hi == 0 || math.IsInf(v.hi, 0) || math.IsNaN(v.hi) {
		return 0, false
	}
	gap := math.Abs(v.hi-math.Nextafter(v.hi, 0)) / 2 // the smaller half-gap
	return v.hi, math.Abs(v.lo)+errBound*math.Abs(v.hi) < gap
}

// sinCosQuadrant evaluates sin (or cos) of x = k*pi/2 + r.
func sinCosQuadrant(r dd, k int64, cos, precise bool) dd {
	if cos {
		k++
	}
	switch k & 3 {
	case 0:
		return sinCosSeries(r, false, precise)
	case 1:
		return sinCosSeries(r, true, precise)
	case 2:
		return ddNeg(sinCosSeries(r, false, precise))
	default:
		return ddNeg(sinCosSeries(r, true, precise))
	}
}

// sinCosCR is the correctly rounded sine or cosine: a fast evaluation whose
// rounding is kept when its error bound allows, else a precise one.
func sinCosCR(x float64, cos bool) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) || x == 0 && !cos {
		if cos {
			return math.Cos(x)
		}
		return math.Sin(x)
	}
	var r dd
	var k int64
	if math.Abs(x) <= halfPi[0]/2 {
		r = dd{x, 0}
	} else {
		var ok bool
		if r, k, ok = reduceHalfPi(x); !ok {
			if cos {
				return math.Cos(x)
			}
			return math.Sin(x)
		}
	}
	if v, ok := roundedIfSafe(sinCosQuadrant(r, k, cos, false), fastErrBound); ok {
		return v
	}
	v := sinCosQuadrant(r, k, cos, true)
	return v.hi + v.lo
}

// sinCR is the correctly rounded sine (math.Sin beyond |x| = 2^20).
func sinCR(x float64) float64 { return sinCosCR(x, false) }

// cosCR is the correctly rounded cosine.
func cosCR(x float64) float64 { return sinCosCR(x, true) }

// asinCR is the correctly rounded arcsine: a Newton step in double-double
// from math.Asin's faithful result, checked against its error bound, else
// two precise steps.
func asinCR(y float64) float64 {
	if math.IsNaN(y) || y < -1 || y > 1 || y == 0 {
		return math.Asin(y)
	}
	if y == 1 || y == -1 {
		return math.Copysign(halfPi[0], y)
	}
	if math.Abs(y) <= 0.5 {
		if v, ok := roundedIfSafe(polySeries(asinCoef[:], dd{y, 0}, true, false), fastErrBound); ok {
			return v
		}
		v := polySeries(asinCoef[:], dd{y, 0}, true, true)
		return v.hi + v.lo
	}
	t0 := dd{math.Asin(y), 0}
	t := asinNewton(t0, y, false)
	if c := math.Abs(math.Cos(t0.hi)); c > 0 {
		tan := math.Abs(y) / c
		// Error of the fast sin/cos amplified by 1/cos, plus Newton's
		// quadratic term from a start within 2 ulps.
		start := 0x1p-51 * math.Abs(t0.hi)
		bound := (fastErrBound*tan+tan*start*start)/math.Abs(t0.hi) + 0x1p-90
		if v, ok := roundedIfSafe(t, 4*bound); ok {
			return v
		}
	}
	t = asinNewton(asinNewton(t0, y, true), y, true)
	return t.hi + t.lo
}

// asinNewton is one Newton step t - (sin t - y) / cos t.
func asinNewton(t dd, y float64, precise bool) dd {
	s, c := sinCosDD(t, precise)
	return ddAdd(t, ddNeg(ddDiv(ddAdd(s, dd{-y, 0}), c)))
}

// sinCosDD returns sin and cos of a double-double argument in [-pi/2, pi/2].
func sinCosDD(t dd, precise bool) (s, c dd) {
	kf := math.RoundToEven(t.hi / halfPi[0])
	r := t
	if kf != 0 {
		for _, p := range halfPi {
			r = ddAdd(r, ddNeg(twoProd(kf, p)))
		}
	}
	k := int64(kf)
	return sinCosQuadrant(r, k, false, precise), sinCosQuadrant(r, k, true, precise)
}
