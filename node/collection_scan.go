package node

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/store"
)

// HSCAN and SSCAN stay in node while the scan helpers they share with SCAN
// (parseScanCursor, argIs in keys_scan.go, keyGlob) live here; the other
// hash and set commands are in commands/hash and commands/set.

// collectionScanHandlers: HSCAN and SSCAN.
func collectionScanHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"hscan": cmdHScan,
		"sscan": cmdSScan,
	}
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
func cmdHScan(c *Client, args [][]byte) {
	cursor, ok := command.ParseScanCursor(args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	h, ok := command.LookupTyped(&c.Ctx, c.DB(), args[1], false, store.TypeHash, (*store.Entry).Hash)
	if !ok {
		return
	}
	if h == nil {
		replyEmptyScan(c)
		return
	}
	opts, ok := parseElemScanOpts(c, args[3:])
	if !ok {
		return
	}
	var res elemScanResult
	if h.IsListpack() {
		for f, v := range h.All() {
			res.addPair(&opts, f, v)
		}
		res.reply(c, 0)
		return
	}
	// Fields and values both count, as in Redis (COUNT is doubled).
	want := 2 * opts.count
	budget := want * 10
	for {
		cursor = h.ScanTable(cursor, func(f, v []byte) { res.addPair(&opts, f, v) })
		if cursor == 0 || budget == 0 || res.visited >= want {
			break
		}
		budget--
	}
	res.reply(c, cursor)
}

// SSCAN key cursor [MATCH pattern] [COUNT count]
func cmdSScan(c *Client, args [][]byte) {
	cursor, ok := command.ParseScanCursor(args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	s, ok := command.LookupTyped(&c.Ctx, c.DB(), args[1], false, store.TypeSet, (*store.Entry).Set)
	if !ok {
		return
	}
	if s == nil {
		replyEmptyScan(c)
		return
	}
	opts, ok := parseElemScanOpts(c, args[3:])
	if !ok {
		return
	}
	var res elemScanResult
	if s.IsIntset() {
		for m := range s.All() {
			res.addMember(&opts, m)
		}
		res.reply(c, 0)
		return
	}
	budget := opts.count * 10
	for {
		cursor = s.ScanTable(cursor, func(m []byte) { res.addMember(&opts, m) })
		if cursor == 0 || budget == 0 || res.visited >= opts.count {
			break
		}
		budget--
	}
	res.reply(c, cursor)
}

// elemScanOpts are HSCAN / SSCAN's options (Redis's scanGenericCommand on a
// collection: COUNT and MATCH; TYPE is a syntax error).
type elemScanOpts struct {
	count    int64
	pat      string
	matchAll bool // no MATCH, or MATCH *: every element, "" too
}

// elemScanMaxCount bounds COUNT so that the visit budget (COUNT * 2 * 10)
// cannot overflow: anything larger already means the whole collection.
const elemScanMaxCount = math.MaxInt32

func parseElemScanOpts(c *Client, args [][]byte) (elemScanOpts, bool) {
	o := elemScanOpts{count: 10, matchAll: true}
	for i := 0; i < len(args); i += 2 {
		more := len(args) - i
		switch {
		case command.ArgIs(args[i], "count") && more >= 2:
			n, ok := command.ParseInt64(args[i+1])
			if !ok {
				c.ErrNotInteger()
				return o, false
			}
			if n < 1 {
				c.ErrSyntax()
				return o, false
			}
			o.count = min(n, elemScanMaxCount)
		case command.ArgIs(args[i], "match") && more >= 2:
			p := args[i+1]
			o.pat, o.matchAll = string(p), len(p) == 1 && p[0] == '*'
		default:
			c.ErrSyntax()
			return o, false
		}
	}
	return o, true
}

// elemScanResult collects the elements a collection scan returns, copied
// into one buffer (intset members are formatted into a reused buffer).
type elemScanResult struct {
	buf     []byte
	ends    []int
	visited int64 // elements visited before filtering (what COUNT counts)
}

func (r *elemScanResult) add(b []byte) {
	r.buf = append(r.buf, b...)
	r.ends = append(r.ends, len(r.buf))
}

// addMember adds a set member that passes the pattern.
func (r *elemScanResult) addMember(o *elemScanOpts, m []byte) {
	r.visited++
	if o.matchAll || glob.Match(o.pat, command.Bstr(m), false) {
		r.add(m)
	}
}

// addPair adds a field and its value when the field passes the pattern.
func (r *elemScanResult) addPair(o *elemScanOpts, f, v []byte) {
	r.visited += 2
	if o.matchAll || glob.Match(o.pat, command.Bstr(f), false) {
		r.add(f)
		r.add(v)
	}
}

func (r *elemScanResult) reply(c *Client, cursor uint64) {
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
func replyEmptyScan(c *Client) {
	c.Out = append(c.Out, "*2\r\n$1\r\n0\r\n*0\r\n"...)
}
