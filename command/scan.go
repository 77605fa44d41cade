package command

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/glob"
)

// The collection scans' shared parts: HSCAN and SSCAN parse the same options
// and build the same reply (Redis's scanGenericCommand on a collection).

// ElemScanOpts are HSCAN / SSCAN's options (COUNT and MATCH; TYPE is a
// syntax error on a collection).
type ElemScanOpts struct {
	Count    int64
	pat      string
	matchAll bool // no MATCH, or MATCH *: every element, "" too
}

// elemScanMaxCount bounds COUNT so that the visit budget (COUNT * 2 * 10)
// cannot overflow: anything larger already means the whole collection.
const elemScanMaxCount = math.MaxInt32

// StartElemScan is the start HSCAN and SSCAN share, in Redis's order: the
// cursor (args[2]), the collection at args[1] found by lookup, the options.
// It replies the error, or the empty scan of a missing key, itself; ok is
// false then.
func StartElemScan[T comparable](c *Ctx, args [][]byte, lookup func(*Ctx, []byte) (T, bool)) (cursor uint64, coll T, opts ElemScanOpts, ok bool) {
	var missing T
	if cursor, ok = ParseScanCursor(args[2]); !ok {
		c.Error("ERR invalid cursor")
		return
	}
	if coll, ok = lookup(c, args[1]); !ok {
		return
	}
	if coll == missing {
		c.replyEmptyScan()
		return cursor, coll, opts, false
	}
	opts, ok = parseElemScanOpts(c, args[3:])
	return
}

// parseElemScanOpts parses HSCAN / SSCAN's options, replying the error
// itself when they are wrong.
func parseElemScanOpts(c *Ctx, args [][]byte) (ElemScanOpts, bool) {
	o := ElemScanOpts{Count: 10, matchAll: true}
	for i := 0; i < len(args); i += 2 {
		more := len(args) - i
		switch {
		case ArgIs(args[i], "count") && more >= 2:
			n, ok := ParseInt64(args[i+1])
			if !ok {
				c.ErrNotInteger()
				return o, false
			}
			if n < 1 {
				c.ErrSyntax()
				return o, false
			}
			o.Count = min(n, elemScanMaxCount)
		case ArgIs(args[i], "match") && more >= 2:
			p := args[i+1]
			o.pat, o.matchAll = string(p), len(p) == 1 && p[0] == '*'
		default:
			c.ErrSyntax()
			return o, false
		}
	}
	return o, true
}

// ElemScanResult collects the elements a collection scan returns, copied
// into one buffer (intset members are formatted into a reused buffer).
type ElemScanResult struct {
	buf     []byte
	ends    []int
	Visited int64 // elements visited before filtering (what COUNT counts)
}

func (r *ElemScanResult) add(b []byte) {
	r.buf = append(r.buf, b...)
	r.ends = append(r.ends, len(r.buf))
}

// AddMember adds a set member that passes the pattern.
func (r *ElemScanResult) AddMember(o *ElemScanOpts, m []byte) {
	r.Visited++
	if o.matchAll || glob.Match(o.pat, Bstr(m), false) {
		r.add(m)
	}
}

// AddPair adds a field and its value when the field passes the pattern.
func (r *ElemScanResult) AddPair(o *ElemScanOpts, f, v []byte) {
	r.Visited += 2
	if o.matchAll || glob.Match(o.pat, Bstr(f), false) {
		r.add(f)
		r.add(v)
	}
}

// Reply writes the scan's reply: the next cursor and the elements.
func (r *ElemScanResult) Reply(c *Ctx, cursor uint64) {
	c.Array(2)
	var nb [24]byte
	c.Bulk(strconv.AppendUint(nb[:0], cursor, 10))
	c.Array(len(r.ends))
	start := 0
	for _, end := range r.ends {
		c.Bulk(r.buf[start:end])
		start = end
	}
}

// replyEmptyScan is Redis's shared.emptyscan: cursor 0, no elements.
func (c *Ctx) replyEmptyScan() {
	c.Out = append(c.Out, "*2\r\n$1\r\n0\r\n*0\r\n"...)
}
