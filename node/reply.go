package node

import (
	"math"
	"strconv"
	"strings"
)

// Reply writers. A command's reply is built in c.out and handed to redcon
// once the command returns (redcon flushes once per read batch, so a
// pipeline gets one write). Every writer knows the client's protocol: the
// RESP3 types degrade to their RESP2 forms exactly as Redis 7.0 does.

// OK writes +OK.
func (c *Client) OK() { c.out = append(c.out, "+OK\r\n"...) }

// Status writes a simple string.
func (c *Client) Status(s string) {
	c.out = append(c.out, '+')
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

// Error writes an error reply. msg is the full text including its code
// ("ERR ...", "WRONGTYPE ..."); a leading '-' is tolerated. Newlines are
// replaced by spaces, as Redis does, so the reply stays one line.
func (c *Client) Error(msg string) {
	msg = strings.TrimPrefix(msg, "-")
	if strings.ContainsAny(msg, "\r\n") {
		msg = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, msg)
	}
	c.out = append(c.out, '-')
	c.out = append(c.out, msg...)
	c.out = append(c.out, '\r', '\n')
	c.noteError(msg)
}

// Errorf-free helpers for the common texts.
func (c *Client) ErrSyntax()     { c.Error("ERR syntax error") }
func (c *Client) ErrNotInteger() { c.Error(msgNotInteger) }
func (c *Client) ErrNotFloat()   { c.Error("ERR value is not a valid float") }
func (c *Client) ErrWrongType()  { c.Error(msgWrongType) }
func (c *Client) ErrOverflow()   { c.Error("ERR increment or decrement would overflow") }
func (c *Client) ErrArity(name string) {
	c.Error("ERR wrong number of arguments for '" + name + "' command")
}

const msgNotInteger = "ERR value is not an integer or out of range"

const msgWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// Int writes an integer.
func (c *Client) Int(n int64) {
	c.out = append(c.out, ':')
	c.out = strconv.AppendInt(c.out, n, 10)
	c.out = append(c.out, '\r', '\n')
}

// Bulk writes a bulk string.
func (c *Client) Bulk(b []byte) {
	c.out = append(c.out, '$')
	c.out = strconv.AppendInt(c.out, int64(len(b)), 10)
	c.out = append(c.out, '\r', '\n')
	c.out = append(c.out, b...)
	c.out = append(c.out, '\r', '\n')
}

// BulkString writes a bulk string.
func (c *Client) BulkString(s string) {
	c.out = append(c.out, '$')
	c.out = strconv.AppendInt(c.out, int64(len(s)), 10)
	c.out = append(c.out, '\r', '\n')
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

// BulkInt writes an integer as a bulk string.
func (c *Client) BulkInt(n int64) {
	var buf [24]byte
	c.Bulk(strconv.AppendInt(buf[:0], n, 10))
}

// Null writes a null bulk string ($-1 in RESP2, _ in RESP3).
func (c *Client) Null() {
	if c.resp == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "$-1\r\n"...)
	}
}

// NullArray writes a null array (*-1 in RESP2, _ in RESP3).
func (c *Client) NullArray() {
	if c.resp == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "*-1\r\n"...)
	}
}

func (c *Client) aggregate(kind byte, n int) {
	c.out = append(c.out, kind)
	c.out = strconv.AppendInt(c.out, int64(n), 10)
	c.out = append(c.out, '\r', '\n')
}

// Array writes an array header for n elements.
func (c *Client) Array(n int) { c.aggregate('*', n) }

// Map writes a map header for n key/value pairs (a flat array of 2n in RESP2).
func (c *Client) Map(n int) {
	if c.resp == 3 {
		c.aggregate('%', n)
	} else {
		c.aggregate('*', 2*n)
	}
}

// Set writes a set header (an array in RESP2).
func (c *Client) Set(n int) {
	if c.resp == 3 {
		c.aggregate('~', n)
	} else {
		c.aggregate('*', n)
	}
}

// Push writes a push header (an array in RESP2).
func (c *Client) Push(n int) {
	if c.resp == 3 {
		c.aggregate('>', n)
	} else {
		c.aggregate('*', n)
	}
}

// Bool writes a boolean (#t/#f in RESP3, :1/:0 in RESP2).
func (c *Client) Bool(b bool) {
	switch {
	case c.resp == 3 && b:
		c.out = append(c.out, "#t\r\n"...)
	case c.resp == 3:
		c.out = append(c.out, "#f\r\n"...)
	case b:
		c.out = append(c.out, ":1\r\n"...)
	default:
		c.out = append(c.out, ":0\r\n"...)
	}
}

// Double writes a double as Redis 7.0's addReplyDouble does: a RESP3 double,
// or in RESP2 a bulk string with %.17g formatting ("inf"/"-inf").
func (c *Client) Double(f float64) {
	var buf [32]byte
	s := formatDouble(buf[:0], f)
	if c.resp == 3 {
		c.out = append(c.out, ',')
		c.out = append(c.out, s...)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.Bulk(s)
}

// formatDouble formats like C's "%.17g", with inf/-inf/nan spelled as Redis does.
func formatDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return appendG17(dst, f)
}

// appendG17 mimics printf("%.17g"): 17 significant digits, trailing zeros
// removed, exponent form when the exponent is < -4 or >= 17.
func appendG17(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	e := strconv.AppendFloat(nil, f, 'e', 16, 64) // d.dddddddddddddddde±XX
	mant, exp, _ := strings.Cut(string(e), "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= 17 {
		m := strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		dst = append(dst, m...)
		dst = append(dst, 'e')
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		} else {
			dst = append(dst, '+')
		}
		if x < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(x), 10)
	}
	s := strconv.FormatFloat(f, 'f', 16-x, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return append(dst, s...)
}

// Verbatim writes a RESP3 verbatim string of the given 3-letter format
// ("txt", "mkd"); a bulk string in RESP2.
func (c *Client) Verbatim(s, format string) {
	if c.resp != 3 {
		c.BulkString(s)
		return
	}
	c.out = append(c.out, '=')
	c.out = strconv.AppendInt(c.out, int64(len(s)+4), 10)
	c.out = append(c.out, '\r', '\n')
	c.out = append(c.out, format...)
	c.out = append(c.out, ':')
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

// BigNumber writes a RESP3 big number (a bulk string in RESP2).
func (c *Client) BigNumber(digits string) {
	if c.resp != 3 {
		c.BulkString(digits)
		return
	}
	c.out = append(c.out, '(')
	c.out = append(c.out, digits...)
	c.out = append(c.out, '\r', '\n')
}

// StringArray writes an array of bulk strings.
func (c *Client) StringArray(ss []string) {
	c.Array(len(ss))
	for _, s := range ss {
		c.BulkString(s)
	}
}

// StatusArray writes an array of simple strings.
func (c *Client) StatusArray(ss []string) {
	c.Array(len(ss))
	for _, s := range ss {
		c.Status(s)
	}
}
