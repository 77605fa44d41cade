package generic

import (
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/store"
)

// KEYS and SCAN. They hold no dispatcher lock (no declared keys): the store
// locks one slot at a time while it walks the database, so they never see
// more than one slot in a consistent state, as SCAN's guarantees allow.

// KEYS pattern
func cmdKeys(c *command.Ctx, args [][]byte) {
	db := c.DB()
	pat := string(args[1])
	all := len(args[1]) == 1 && args[1][0] == '*'
	var keys []string
	replyLen := 0 // the reply's size so far, for the output limit (as Redis, KEYS stops mid-run)
	for slot := 0; slot < store.NumSlots; slot++ {
		db.ScanSlot(uint16(slot), func(e *store.Entry) bool {
			k := e.Key()
			if all || glob.Match(pat, k, false) {
				keys = append(keys, strings.Clone(k)) // the entry may be reused once its slot is unlocked
				replyLen += len(k) + 16               // "$<len>\r\n" ... "\r\n"
				if replyLen >= c.Session().OutputCheckAt() && c.Session().ReplyOverLimitWith(replyLen) {
					return false
				}
			}
			return true
		})
		if c.Session().Closing() {
			return
		}
	}
	c.StringArray(keys)
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *command.Ctx, args [][]byte) {
	cursor, ok := command.ParseScanCursor(args[1])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	pat, matchAll := "", true
	var typeName string
	hasType := false
	for i := 2; i < len(args); i += 2 {
		more := len(args) - i
		switch {
		case command.ArgIs(args[i], "count") && more >= 2:
			n, ok := command.ParseInt64(args[i+1])
			if !ok {
				c.ErrNotInteger()
				return
			}
			if n < 1 {
				c.ErrSyntax()
				return
			}
			count = n
		case command.ArgIs(args[i], "match") && more >= 2:
			p := args[i+1]
			pat, matchAll = string(p), len(p) == 1 && p[0] == '*' // "*" matches everything, "" too
		case command.ArgIs(args[i], "type") && more >= 2:
			typeName = command.CString(args[i+1])
			hasType = true
		default:
			c.ErrSyntax()
			return
		}
	}
	var keys []string
	var match func(key string) bool
	if !matchAll {
		match = func(key string) bool { return glob.Match(pat, key, false) }
	}
	next := c.DB().Scan(cursor, int(min(count, command.ScanMaxCount)), match, func(e *store.Entry) {
		k := e.Key()
		if match != nil && !match(k) {
			return
		}
		if hasType && !strings.EqualFold(typeName, e.Type().String()) {
			return
		}
		keys = append(keys, strings.Clone(k)) // the entry may be reused once its slot is unlocked
	})
	c.Array(2)
	var buf [24]byte
	c.Bulk(strconv.AppendUint(buf[:0], next, 10))
	c.StringArray(keys)
}
