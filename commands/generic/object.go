package generic

import (
	"math"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT | HELP (Redis 7.0's object.c).
// The lookups leave the LRU clock alone but, like Redis's objectCommandLookup
// (LOOKUP_NOTOUCH), delete a logically expired key and count a keyspace hit
// or miss.

// objectLookup finds the key of OBJECT <sub> key, replying null if missing.
func objectLookup(c *command.Ctx, args [][]byte) *store.Entry {
	e := c.DB().Lookup(args[2], store.LookupNoTouch|store.LookupNoNotify) // Redis: LOOKUP_NONOTIFY
	if e == nil {
		c.Null()
	}
	return e
}

func maxmemoryPolicy(c *command.Ctx) int64 { return c.Config().Int("maxmemory-policy") }

// OBJECT ENCODING key
func cmdObjectEncoding(c *command.Ctx, args [][]byte) {
	if e := objectLookup(c, args); e != nil {
		c.BulkString(store.EncodingOf(e))
	}
}

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS: the values 0..9999 stored
// as strings are one shared object, whose refcount is INT_MAX.
const (
	sharedIntegers = 10000
	sharedRefcount = math.MaxInt32
)

// OBJECT REFCOUNT key. shoal shares nothing, but answers what Redis would:
// Redis stores small integer strings as its shared integer objects unless a
// maxmemory LRU / LFU policy needs per-key access clocks.
func cmdObjectRefCount(c *command.Ctx, args [][]byte) {
	e := objectLookup(c, args)
	if e == nil {
		return
	}
	if e.Type() == store.TypeString && e.Encoding() == "int" && integersShared(c) {
		if v, err := strconv.ParseInt(string(e.Bytes()), 10, 64); err == nil && v >= 0 && v < sharedIntegers {
			c.Int(sharedRefcount)
			return
		}
	}
	c.Int(1)
}

// integersShared reports whether Redis would use its shared integers now
// (object.c: maxmemory is 0 or the policy is neither LRU nor LFU).
func integersShared(c *command.Ctx) bool {
	return c.Config().Uint("maxmemory") == 0 ||
		maxmemoryPolicy(c)&(config.MaxmemoryFlagLRU|config.MaxmemoryFlagLFU) == 0
}

// OBJECT IDLETIME key
func cmdObjectIdleTime(c *command.Ctx, args [][]byte) {
	e := objectLookup(c, args)
	if e == nil {
		return
	}
	if maxmemoryPolicy(c)&config.MaxmemoryFlagLFU != 0 {
		c.Error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.Int(c.Keyspace().IdleMillis(e) / 1000)
}

// OBJECT FREQ key: the key's LFU counter, decayed by the minutes since its
// last decrement (LFUDecrAndReturn).
func cmdObjectFreq(c *command.Ctx, args [][]byte) {
	e := objectLookup(c, args)
	if e == nil {
		return
	}
	if maxmemoryPolicy(c)&config.MaxmemoryFlagLFU == 0 {
		c.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.Int(int64(c.Keyspace().LFUCounter(e)))
}

var objectHelpLines = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// OBJECT HELP
func cmdObjectHelp(c *command.Ctx, args [][]byte) { c.StatusArray(objectHelpLines) }
