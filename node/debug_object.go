package node

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// DEBUG OBJECT, SDSLEN, LISTPACK / QUICKLIST and QUICKLIST-PACKED-THRESHOLD:
// what the debugging commands show of one key.

// lookupPeek finds a live key without side effects: a logically expired
// key is missing but stays, and neither the LRU clock nor the hit/miss
// counters change.
const lookupPeek = store.LookupNoExpire | store.LookupNoTouch | store.LookupNoStats

// lookupDictFind finds a key as Redis's dictFind does for DEBUG OBJECT and
// MEMORY USAGE: a logically expired key is still there (a replica keeps it
// until its master's DEL), without side effects.
const lookupDictFind = store.LookupExpired | store.LookupNoTouch | store.LookupNoStats

// peekDebugKey locks key's slot and finds the key as the debugging
// commands do (lookupDictFind). When the key is absent it answers "no such
// key" and returns nil. The caller releases the lock with unlock.
func peekDebugKey(c *Client, key []byte) (e *store.Entry, unlock func()) {
	unlock = lockKeySlot(c, key)
	if e = c.DB().Lookup(key, lookupDictFind); e == nil {
		c.Error("ERR no such key")
	}
	return e, unlock
}

// debugObject writes Redis's DEBUG OBJECT line for a key.
func debugObject(c *Client, key []byte) {
	e, unlock := peekDebugKey(c, key)
	defer unlock()
	if e == nil {
		return
	}
	ks := c.srv.ks
	idle := ks.IdleMillis(e) / 1000
	lru := (ks.Now()/1000 - idle) & (1<<24 - 1)
	extra := ""
	if e.Type() == store.TypeList {
		extra = listDebugObjectExtra(c, e.List())
	}
	c.Status(fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		e, store.EncodingOf(e), serializedLength(e), lru, idle, extra))
}

// debugSdsLen reports a string key's lengths in Redis's DEBUG SDSLEN format
// (shoal strings have no sds header: "avail" is the spare capacity of a
// mutable value, and the allocation sizes are Go size classes).
func debugSdsLen(c *Client, key []byte) {
	e, unlock := peekDebugKey(c, key)
	defer unlock()
	if e == nil {
		return
	}
	if e.Type() != store.TypeString || e.Encoding() == "int" {
		c.Error("ERR Not an sds encoded string.")
		return
	}
	v := e.Bytes()
	c.Status(fmt.Sprintf("key_sds_len:%d, key_sds_avail:0, key_zmalloc: %d, val_sds_len:%d, val_sds_avail:%d, val_zmalloc: %d",
		len(key), store.AllocSize(int64(len(key))), len(v), cap(v)-len(v), store.AllocSize(int64(cap(v)))))
}

// debugEncodingDump answers DEBUG LISTPACK / QUICKLIST for a key whose
// encoding matches (shoal prints no structure dump).
func debugEncodingDump(c *Client, sub string, key []byte) {
	e, unlock := peekDebugKey(c, key)
	defer unlock()
	if e == nil {
		return
	}
	if store.EncodingOf(e) != sub {
		c.Error("ERR Not a " + sub + " encoded object.")
		return
	}
	title := strings.ToUpper(sub[:1]) + sub[1:]
	c.Status(title + " structure printed on stdout")
}

// serializedLength estimates the RDB size of a value (DEBUG OBJECT's
// serializedlength): Redis's integer encodings and length-prefixed strings,
// without LZF compression.
func serializedLength(e *store.Entry) int64 {
	if e.Type() != store.TypeString {
		return 0
	}
	v := e.Bytes()
	if len(v) <= 11 && e.Encoding() == "int" {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		switch {
		case n >= math.MinInt8 && n <= math.MaxInt8:
			return 2
		case n >= math.MinInt16 && n <= math.MaxInt16:
			return 3
		case n >= math.MinInt32 && n <= math.MaxInt32:
			return 5
		}
	}
	l := int64(len(v))
	switch {
	case l < 1<<6:
		return 1 + l
	case l < 1<<14:
		return 2 + l
	case l <= math.MaxUint32:
		return 5 + l
	}
	return 9 + l
}

// debugQuicklistPackedThreshold implements DEBUG QUICKLIST-PACKED-THRESHOLD
// size: list elements of at least size bytes get a node of their own (0
// restores the 1 GiB default). size is a memory amount as Redis's memtoull
// reads it ("1b", "100", "5kb", ...). DEBUG's dispatcher calls it.
func debugQuicklistPackedThreshold(c *Client, arg []byte) {
	sz, ok := config.MemToULL(string(arg))
	if !ok || !store.SetListPackedThreshold(sz) {
		c.Error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
		return
	}
	c.OK()
}

// listDebugObjectExtra is the quicklist part of DEBUG OBJECT's reply for a
// list (appended after lru_seconds_idle, as Redis does).
func listDebugObjectExtra(c *Client, l *store.List) string {
	nodes, fill, size := l.QuicklistInfo()
	avg := 0.0
	if nodes > 0 {
		avg = float64(l.Len()) / float64(nodes)
	}
	compressed := 0
	if c.Config().Int("list-compress-depth") != 0 {
		compressed = 1
	}
	return fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
		nodes, avg, fill, compressed, size)
}
