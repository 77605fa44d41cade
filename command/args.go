package command

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// Helpers every command family shares: argument parsing with Redis's error
// replies, the typed lookups, HELP and subcommand errors.

// ErrKeySpec: the arguments do not fit the command's key specification
// (e.g. a numkeys that is not a number); the command's own argument checks
// then report the error.
var ErrKeySpec = errors.New("invalid arguments for the command's key specification")

// ArgEquals reports whether an argument equals word, ignoring ASCII case.
func ArgEquals(arg []byte, word string) bool {
	return EqualFoldASCII(arg, word)
}

// EqualFoldASCII is Redis's strcasecmp on equal lengths: only A-Z fold, so
// a keyword never matches through Unicode folding ("ſet" is not "set", the
// Kelvin sign is not "k"), as bytes.EqualFold would have it.
func EqualFoldASCII(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], word[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Bstr views b as a string without copying; the string must not outlive b's
// contents (use it for lookups and comparisons only).
func Bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ParseInt64 parses a command argument as Redis's string2ll does.
func ParseInt64(b []byte) (int64, bool) { return strconvx.ParseInt(b) }

// IsRangeErr reports whether err is strconv's out-of-range error.
func IsRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ReplyHelp writes Redis's HELP reply (addReplyHelp): a header naming the
// command as the client spelled it, the given lines, and the HELP entry,
// all as status replies.
func (c *Ctx) ReplyHelp(args [][]byte, lines []string) {
	c.Array(len(lines) + 3)
	c.Status(strings.ToUpper(string(args[0])) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.Status(l)
	}
	c.Status("HELP")
	c.Status("    Prints this help.")
}

// ErrSubcommandSyntax writes Redis's addReplySubcommandSyntaxError text.
func (c *Ctx) ErrSubcommandSyntax(args [][]byte) {
	c.Error("ERR unknown subcommand or wrong number of arguments for '" + Truncate128(args[1]) +
		"'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

// Truncate128 returns at most the first 128 bytes of b, as Redis's "%.128s".
func Truncate128(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// LookupWrite is Redis's lookupKeyWrite: no keyspace hit/miss is counted; a
// logically expired key is deleted on the way.
func LookupWrite(db DB, key []byte) *store.Entry {
	return db.Lookup(key, store.LookupNoStats)
}

// LookupTyped is the lookup every collection command starts with (Redis's
// lookupKeyRead/lookupKeyWrite + checkType): a read counts a keyspace hit
// or miss, a write does not. It returns (value, true) when the key holds a
// value of type t, (nil, true) when the key is missing, and (nil, false)
// after replying WRONGTYPE.
func LookupTyped[T any](c *Ctx, db DB, key []byte, write bool, t store.Type, value func(*store.Entry) *T) (*T, bool) {
	var e *store.Entry
	if write {
		e = LookupWrite(db, key)
	} else {
		e = db.Find(key)
	}
	if e == nil {
		return nil, true
	}
	if e.Type() != t {
		c.ErrWrongType()
		return nil, false
	}
	return value(e), true
}

// LockWholeDBs locks every slot of the given databases (in the store's
// database order) and returns the unlock. FLUSHALL, FLUSHDB and SWAPDB hold
// them while they change the data and put their effect in the stream, so
// no write to a slot they cleared can enter the stream between the two.
func LockWholeDBs(dbs ...*store.DB) (unlock func()) {
	sorted := slices.Clone(dbs)
	slices.SortFunc(sorted, func(a, b *store.DB) int {
		switch {
		case a == b:
			return 0
		case store.LockOrderLess(a, b):
			return -1
		}
		return 1
	})
	sorted = slices.Compact(sorted)
	for _, db := range sorted {
		db.LockAll()
	}
	return func() {
		for i := len(sorted) - 1; i >= 0; i-- {
			sorted[i].UnlockAll()
		}
	}
}

// ParseMillisTimeout parses a timeout given in integer milliseconds (WAIT,
// CLIENT PAUSE, XREAD BLOCK) as Redis's getTimeoutFromObjectOrReply with
// UNIT_MILLISECONDS: an integer that is not negative. It writes the error
// reply and returns false on bad input.
func (c *Ctx) ParseMillisTimeout(arg []byte) (int64, bool) {
	ms, ok := ParseInt64(arg)
	if !ok {
		c.Error("ERR timeout is not an integer or out of range")
		return 0, false
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return 0, false
	}
	return ms, true
}

// ParseBlockTimeout parses a blocking command's timeout in seconds (a
// double; 0 = forever) as Redis's getTimeoutFromObjectOrReply does: the
// value is parsed as a long double, converted to milliseconds rounding up,
// and must not be negative. It writes the error reply and returns false on
// bad input.
func (c *Ctx) ParseBlockTimeout(arg []byte) (time.Duration, bool) {
	ms, ok := timeoutMillis(arg)
	if !ok {
		c.Error("ERR timeout is not a float or out of range")
		return 0, false
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return 0, false
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		// Redis adds the timeout to the current unix time in ms; past
		// that nobody waits anyway.
		ms = math.MaxInt64 / int64(time.Millisecond)
	}
	return time.Duration(ms) * time.Millisecond, true
}

// timeoutMillis is (long long) ceill(value * 1000.0) in C's long double:
// values out of the range of a long long (and ±inf) convert to LLONG_MIN
// on x86-64, which is why Redis calls them negative.
func timeoutMillis(arg []byte) (int64, bool) {
	if n, ok := ParseInt64(arg); ok {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return math.MinInt64, true
		}
		return n * 1000, true
	}
	ld, ok := strconvx.ParseLongDouble(arg)
	if !ok {
		return 0, false
	}
	return ld.CeilMulInt64(1000), true
}

// ArgIs compares an option argument with a lower-case keyword as Redis's
// strcasecmp on the argument's C string does (a NUL byte ends it).
func ArgIs(b []byte, kw string) bool {
	return EqualFoldASCII(CBytes(b), kw)
}

// CString returns b up to its first NUL byte, as a C string would print.
func CString(b []byte) string { return string(CBytes(b)) }

// CBytes is b up to its first NUL byte (CString without the copy).
func CBytes(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
