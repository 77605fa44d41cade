package zset

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// Number and range parsing for the sorted set and geo commands, with the
// exact acceptance rules of Redis 7.0's C code: getDoubleFromObject
// (string2d over strtod), zslParseRange (bare strtod on a C string) and
// zslParseLexRangeItem.

// parseDouble is Redis's string2d (getDoubleFromObject): the whole argument
// must be a number, without leading space; overflow, underflow to zero and
// NaN are refused, "inf" is accepted.
func parseDouble(b []byte) (float64, bool) {
	if len(b) == 0 || strconvx.IsCSpace(b[0]) {
		return 0, false
	}
	v, n, erange := command.Strtod(b)
	if n != len(b) || math.IsNaN(v) {
		return 0, false
	}
	if erange && (math.IsInf(v, 0) || v == 0) {
		return 0, false
	}
	return v, true
}

// ParseDoubleOrReply parses a float argument, replying msg (or "value is
// not a valid float") when it is not one.
func ParseDoubleOrReply(c *command.Ctx, b []byte, msg string) (float64, bool) {
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
	s := []byte(command.CString(b))
	if len(s) > 0 && s[0] == '(' {
		ex = true
		s = s[1:]
	}
	v, n, _ := command.Strtod(s)
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

// ParseLongOrReply parses a "long" argument (getLongFromObjectOrReply).
func ParseLongOrReply(c *command.Ctx, b []byte) (int64, bool) {
	v, ok := command.ParseInt64(b)
	if !ok {
		c.ErrNotInteger()
	}
	return v, ok
}

// parseRangeLongOrReply is getRangeLongFromObjectOrReply: an integer within
// [lo, hi]; msg (if not empty) replaces both error texts.
func parseRangeLongOrReply(c *command.Ctx, b []byte, lo, hi int64, msg string) (int64, bool) {
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
			c.Error("ERR value is out of range, value must between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10))
		}
		return 0, false
	}
	return v, true
}

// parsePositiveLongOrReply is getPositiveLongFromObjectOrReply.
func parsePositiveLongOrReply(c *command.Ctx, b []byte, msg string) (int64, bool) {
	if msg == "" {
		msg = "value is out of range, must be positive"
	}
	return parseRangeLongOrReply(c, b, 0, math.MaxInt64, msg)
}
