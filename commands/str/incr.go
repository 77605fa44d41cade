package str

import (
	"bytes"
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

func cmdIncr(c *command.Ctx, args [][]byte) { incrDecr(c, args[1], 1) }
func cmdDecr(c *command.Ctx, args [][]byte) { incrDecr(c, args[1], -1) }

func cmdIncrBy(c *command.Ctx, args [][]byte) {
	by, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	incrDecr(c, args[1], by)
}

func cmdDecrBy(c *command.Ctx, args [][]byte) {
	by, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if by == math.MinInt64 { // its negation does not exist
		c.Error("ERR decrement would overflow")
		return
	}
	incrDecr(c, args[1], -by)
}

// incrDecr adds by to the integer at key (0 if missing). The value must be
// the canonical decimal form of an int64; the key keeps its TTL.
func incrDecr(c *command.Ctx, key []byte, by int64) {
	db := c.DB()
	e := command.LookupWrite(db, key)
	var v int64
	if e != nil {
		if e.Type() != store.TypeString {
			c.ErrWrongType()
			return
		}
		var ok bool
		if v, ok = command.ParseInt64(e.Bytes()); !ok {
			c.ErrNotInteger()
			return
		}
	}
	if by < 0 && v < 0 && by < math.MinInt64-v || by > 0 && v > 0 && by > math.MaxInt64-v {
		c.ErrOverflow()
		return
	}
	v += by
	var buf [24]byte
	db.SetString(key, strconv.AppendInt(buf[:0], v, 10), true)
	c.ChargedExactly() // a compact string, whatever the value's encoding was
	c.Notify(config.NotifyString, "incrby", key)
	c.Int(v)
}

// cmdIncrByFloat adds a float to the number at key in the precision Redis
// uses (C long double, see strconvx.LongDouble) and stores the result formatted as
// Redis formats it; the key keeps its TTL.
func cmdIncrByFloat(c *command.Ctx, args [][]byte) {
	db := c.DB()
	key := args[1]
	e := command.LookupWrite(db, key)
	var cur strconvx.LongDouble // +0
	if e != nil {
		if e.Type() != store.TypeString {
			c.ErrWrongType()
			return
		}
		var ok bool
		if cur, ok = strconvx.ParseLongDouble(e.Bytes()); !ok {
			c.ErrNotFloat()
			return
		}
	}
	incr, ok := strconvx.ParseLongDouble(args[2])
	if !ok {
		c.ErrNotFloat()
		return
	}
	sum, finite := cur.Add(incr)
	if !finite {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	var buf [64]byte
	out := sum.AppendHuman(buf[:0])
	// Redis stores the result as a plain string, never int-encoded.
	db.SetString(key, out, true).KeepStringEncoding()
	c.Notify(config.NotifyString, "incrbyfloat", key)
	c.Bulk(out)
	// The final value, not the increment: float formatting may differ.
	c.ReplaceEffect(argSET, key, bytes.Clone(out), argKEEPTTL)
}
