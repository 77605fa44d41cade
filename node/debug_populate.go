package node

import (
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// debugPopulate implements DEBUG POPULATE count [prefix] [size]: keys
// prefix:N (default "key") holding "value:N", zero-padded or truncated to
// size bytes when size is given; existing keys are left alone.
func debugPopulate(c *Client, args [][]byte) {
	const msg = "ERR value is out of range, must be positive"
	count, ok := command.ParseInt64(args[2])
	if !ok || count < 0 {
		c.Error(msg)
		return
	}
	size := int64(0)
	if len(args) == 5 {
		size, ok = command.ParseInt64(args[4])
		if !ok || size < 0 {
			c.Error(msg)
			return
		}
		// The value is allocated at once: refuse what proto-max-bulk-len
		// would refuse from a client.
		if size > c.srv.cfg.Int("proto-max-bulk-len") {
			c.Error("ERR value is out of range, size is larger than proto-max-bulk-len")
			return
		}
	}
	prefix := "key"
	if len(args) >= 4 {
		prefix = string(args[3])
	}
	db := c.DB()
	var key, val []byte
	for j := int64(0); j < count; j++ {
		if j%1024 == 0 && c.srv.stopping() {
			break
		}
		key = append(key[:0], prefix...)
		key = append(key, ':')
		key = strconv.AppendInt(key, j, 10)
		if len(key) > 127 { // Redis formats the name into a 128-byte buffer
			key = key[:127]
		}
		val = append(val[:0], "value:"...)
		val = strconv.AppendInt(val, j, 10)
		if size > 0 {
			if int64(len(val)) > size {
				val = val[:size]
			} else {
				val = append(val, make([]byte, size-int64(len(val)))...)
			}
		}
		unlock := lockKeySlot(c, key)
		if db.Lookup(key, store.LookupNoTouch|store.LookupNoStats) == nil {
			db.SetString(key, val, false)
		}
		unlock()
	}
	c.OK()
}
