package zset

import (
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// ZSCAN key cursor [MATCH pattern] [COUNT count]
func cmdZScan(c *command.Ctx, args [][]byte) {
	cursor, ok := command.ParseScanCursor(args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	z, ok := Read(c, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.Array(2)
		c.BulkString("0")
		c.Array(0)
		return
	}
	count := int64(10)
	pat, matchAll := "", true
	for i := 3; i < len(args); {
		left := len(args) - i
		switch {
		case command.ArgIs(args[i], "count") && left >= 2:
			n, ok := ParseLongOrReply(c, args[i+1])
			if !ok {
				return
			}
			if n < 1 {
				c.ErrSyntax()
				return
			}
			count = n
			i += 2
		case command.ArgIs(args[i], "match") && left >= 2:
			p := args[i+1]
			pat, matchAll = string(p), len(p) == 1 && p[0] == '*'
			i += 2
		default:
			c.ErrSyntax()
			return
		}
	}
	listpack := z.IsListpack()
	type pair struct {
		member []byte
		score  float64
	}
	var found []pair
	next := z.Scan(cursor, int(min(count, command.ScanMaxCount)), func(m []byte, s float64) {
		if !matchAll && !glob.Match(pat, command.Bstr(m), false) {
			return
		}
		found = append(found, pair{m, s})
	})
	c.Array(2)
	c.BulkString(strconv.FormatUint(next, 10))
	c.Array(2 * len(found))
	var buf [32]byte
	for _, p := range found {
		c.Bulk(p.member)
		if listpack {
			c.Bulk(store.ListpackScoreText(buf[:0], p.score))
		} else {
			c.Bulk(strconvx.AppendDouble(buf[:0], p.score))
		}
	}
}
