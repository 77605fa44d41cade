// Package bitmap holds the bit commands (Redis 7.0's "bitmap" group: SETBIT,
// GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) over string values.
package bitmap

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/str"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Handlers: the bit commands (Redis 7.0's "bitmap" group). Bitmaps
// are string values; bit 0 is the most significant bit of the first byte.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"setbit":      cmdSetBit,
		"getbit":      cmdGetBit,
		"bitcount":    cmdBitCount,
		"bitpos":      cmdBitPos,
		"bitop":       cmdBitOp,
		"bitfield":    cmdBitField,
		"bitfield_ro": cmdBitFieldRO,
	}
}

const msgBitOffset = "ERR bit offset is not an integer or out of range"

// parseBitOffset parses a bit offset argument as Redis's
// getBitOffsetFromArgument: a non-negative integer whose byte is below
// proto-max-bulk-len. With hash (BITFIELD) "#n" means n*bits; the
// multiplication wraps on overflow exactly as Redis's does.
func parseBitOffset(c *command.Ctx, arg []byte, hash bool, width int) (uint64, bool) {
	useHash := hash && width > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	off, ok := command.ParseInt64(arg)
	if ok && useHash {
		off *= int64(width)
	}
	if !ok || off < 0 || off>>3 >= c.Session().ProtoMaxBulkLen() {
		c.Error(msgBitOffset)
		return 0, false
	}
	return uint64(off), true
}

// bitTarget is Redis's lookupStringForBitCommand: the string at key, created
// or zero-padded so that bit maxBit exists, in the raw encoding. grown
// reports a new key or a longer string. On WRONGTYPE it replies and returns
// nil. Offsets are bounded by proto-max-bulk-len before this is called.
func bitTarget(c *command.Ctx, key []byte, maxBit uint64) (p *[]byte, grown bool) {
	db := c.DB()
	need := int(maxBit>>3) + 1
	e := command.LookupWrite(db, key)
	if e == nil {
		return db.SetRawString(key, make([]byte, need), false).MutableBytes(), true
	}
	if e.Type() != store.TypeString {
		c.ErrWrongType()
		return nil, false
	}
	p = e.MutableBytes()
	if old := len(*p); need > old {
		*p = slices.Grow(*p, need-old)[:need]
		clear((*p)[old:])
		grown = true
	}
	return p, grown
}

// cmdSetBit: SETBIT key offset 0|1, replying the bit's previous value.
func cmdSetBit(c *command.Ctx, args [][]byte) {
	off, ok := parseBitOffset(c, args[2], false, 0)
	if !ok {
		return
	}
	on, ok := command.ParseInt64(args[3])
	if !ok || on&^1 != 0 {
		c.Error("ERR bit is not an integer or out of range")
		return
	}
	p, grown := bitTarget(c, args[1], off)
	if p == nil {
		return
	}
	b := *p
	mask := byte(0x80) >> (off & 7)
	old := b[off>>3] & mask
	if on == 1 {
		b[off>>3] |= mask
	} else {
		b[off>>3] &^= mask
	}
	if !grown && (old != 0) == (on == 1) {
		c.NoEffect() // the bit already had that value: no change, as Redis
	} else {
		c.Notify(config.NotifyString, "setbit", args[1])
	}
	if old != 0 {
		c.Int(1)
	} else {
		c.Int(0)
	}
}

// cmdGetBit: GETBIT key offset; bits past the end read as zero.
func cmdGetBit(c *command.Ctx, args [][]byte) {
	off, ok := parseBitOffset(c, args[2], false, 0)
	if !ok {
		return
	}
	e, wrong := str.LookupString(c.DB(), args[1])
	if wrong {
		c.ErrWrongType()
		return
	}
	var b []byte
	if e != nil {
		b = e.Bytes()
	}
	if off>>3 < uint64(len(b)) && b[off>>3]&(0x80>>(off&7)) != 0 {
		c.Int(1)
		return
	}
	c.Int(0)
}

// bitRange is a BITCOUNT/BITPOS range resolved to bytes [start, end] of the
// string, with the masks of the bits of the first and last byte that lie
// outside a BIT-unit range (set bits are excluded).
type bitRange struct {
	start, end          int64
	firstMask, lastMask byte
}

// resolveBitRange turns a BYTE or BIT range with Redis's negative-index
// rules into a byte range of a string of n bytes: indexes count from the end
// when negative and are clamped to the string; start > end means empty.
func resolveBitRange(start, end, n int64, isBit bool) bitRange {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= total {
		end = total - 1
	}
	r := bitRange{start: start, end: end}
	if isBit && start <= end {
		r.firstMask = ^byte(0xff >> (start & 7))
		r.lastMask = byte(1<<(7-(end&7))) - 1
		r.start >>= 3
		r.end >>= 3
	}
	return r
}

// parseBitUnit parses BITCOUNT/BITPOS's unit argument: BIT or BYTE.
func parseBitUnit(c *command.Ctx, arg []byte) (isBit, ok bool) {
	switch {
	case command.ArgIs(arg, "bit"):
		return true, true
	case command.ArgIs(arg, "byte"):
		return false, true
	}
	c.ErrSyntax()
	return false, false
}

// cmdBitCount: BITCOUNT key [start end [BYTE|BIT]].
func cmdBitCount(c *command.Ctx, args [][]byte) {
	e, wrong := str.LookupString(c.DB(), args[1])
	if wrong {
		c.ErrWrongType()
		return
	}
	if e == nil {
		c.Int(0) // before the arguments are even looked at, as in Redis
		return
	}
	b := e.Bytes()
	r := bitRange{start: 0, end: int64(len(b)) - 1}
	switch len(args) {
	case 2:
	case 4, 5:
		start, ok := command.ParseInt64(args[2])
		if !ok {
			c.ErrNotInteger()
			return
		}
		end, ok := command.ParseInt64(args[3])
		if !ok {
			c.ErrNotInteger()
			return
		}
		if start < 0 && end < 0 && start > end {
			c.Int(0)
			return
		}
		isBit := false
		if len(args) == 5 {
			if isBit, ok = parseBitUnit(c, args[4]); !ok {
				return
			}
		}
		r = resolveBitRange(start, end, int64(len(b)), isBit)
	default:
		c.ErrSyntax()
		return
	}
	if r.start > r.end {
		c.Int(0)
		return
	}
	n := popcount(b[r.start : r.end+1])
	n -= int64(bits.OnesCount8(b[r.start]&r.firstMask) + bits.OnesCount8(b[r.end]&r.lastMask))
	c.Int(n)
}

// popcount counts the set bits of b, a word at a time.
func popcount(b []byte) int64 {
	n := 0
	for len(b) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return int64(n)
}

// firstBit returns the position of the first bit of b equal to bit; when
// there is none it returns -1 for a set bit and len(b)*8 for a clear one
// (the string reads as zero-padded on the right). This is Redis's
// redisBitpos.
func firstBit(b []byte, bit int) int64 {
	skip := byte(0)
	if bit == 0 {
		skip = 0xff
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if w := binary.LittleEndian.Uint64(b[i:]); w != uint64(skip)*0x0101010101010101 {
			break
		}
	}
	for ; i < len(b); i++ {
		if x := b[i]; x != skip {
			if bit == 0 {
				x = ^x
			}
			return int64(i)*8 + int64(bits.LeadingZeros8(x))
		}
	}
	if bit == 1 {
		return -1
	}
	return int64(len(b)) * 8
}

// cmdBitPos: BITPOS key bit [start [end [BYTE|BIT]]]. Looking for a clear
// bit without an explicit end treats the string as zero-padded on the
// right, so past its end the answer is the first bit after it; with an end
// given, a range of set bits answers -1.
func cmdBitPos(c *command.Ctx, args [][]byte) {
	bit, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if bit != 0 && bit != 1 {
		c.Error("ERR The bit argument must be 1 or 0.")
		return
	}
	e, wrong := str.LookupString(c.DB(), args[1])
	if wrong {
		c.ErrWrongType()
		return
	}
	if e == nil {
		// A missing key is an infinite run of zeros.
		if bit == 1 {
			c.Int(-1)
		} else {
			c.Int(0)
		}
		return
	}
	b := e.Bytes()
	n := int64(len(b))
	r := bitRange{start: 0, end: n - 1}
	endGiven := false
	switch len(args) {
	case 3:
	case 4, 5, 6:
		start, ok := command.ParseInt64(args[3])
		if !ok {
			c.ErrNotInteger()
			return
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = parseBitUnit(c, args[5]); !ok {
				return
			}
		}
		var end int64
		if len(args) >= 5 {
			if end, ok = command.ParseInt64(args[4]); !ok {
				c.ErrNotInteger()
				return
			}
			endGiven = true
		} else if isBit {
			end = n<<3 + 7
		} else {
			end = n - 1
		}
		r = resolveBitRange(start, end, n, isBit)
	default:
		c.ErrSyntax()
		return
	}
	if r.start > r.end {
		c.Int(-1) // an empty range holds neither a 0 nor a 1
		return
	}
	c.Int(bitPosInRange(b, r, int(bit), endGiven))
}

// bitPosInRange searches the resolved range r of b for the first bit equal
// to bit, following Redis's three steps (the masked first byte, the whole
// bytes, the masked last byte) so that every edge case answers as Redis
// does.
func bitPosInRange(b []byte, r bitRange, bit int, endGiven bool) int64 {
	start, end := r.start, r.end
	bytes := end - start + 1
	// mask sets the out-of-range bits of x to the value not searched for.
	mask := func(x, m byte) byte {
		if bit == 1 {
			return x &^ m
		}
		return x | m
	}
	var pos int64
	found := false
	if r.firstMask != 0 {
		x := mask(b[start], r.firstMask)
		if r.lastMask != 0 && bytes == 1 {
			x = mask(x, r.lastMask)
		}
		pos = firstBit([]byte{x}, bit)
		if bytes == 1 || (pos != -1 && pos != 8) {
			found = true
		} else {
			start++
			bytes--
		}
	}
	if !found {
		whole := bytes
		if r.lastMask != 0 {
			whole--
		}
		if whole > 0 {
			pos = firstBit(b[start:start+whole], bit)
			if bytes == whole || (pos != -1 && pos != whole<<3) {
				found = true
			} else {
				start += whole
				bytes -= whole
			}
		}
	}
	if !found {
		pos = firstBit([]byte{mask(b[end], r.lastMask)}, bit)
	}
	if endGiven && bit == 0 && pos == bytes<<3 {
		// No clear bit inside an explicit range.
		return -1
	}
	if pos != -1 {
		pos += start << 3
	}
	return pos
}

// bitOp is BITOP's operation.
type bitOp int

const (
	bitOpAnd bitOp = iota
	bitOpOr
	bitOpXor
	bitOpNot
)

// cmdBitOp: BITOP AND|OR|XOR|NOT destkey key [key ...]. Shorter sources
// read as zero-padded; an all-empty result deletes destkey. The reply is the
// result's length.
func cmdBitOp(c *command.Ctx, args [][]byte) {
	var op bitOp
	switch {
	case command.ArgIs(args[1], "and"):
		op = bitOpAnd
	case command.ArgIs(args[1], "or"):
		op = bitOpOr
	case command.ArgIs(args[1], "xor"):
		op = bitOpXor
	case command.ArgIs(args[1], "not"):
		op = bitOpNot
	default:
		c.ErrSyntax()
		return
	}
	if op == bitOpNot && len(args) != 4 {
		c.Error("ERR BITOP NOT must be called with a single source key.")
		return
	}
	db := c.DB()
	srcs := make([][]byte, len(args)-3)
	maxLen := 0
	for i, key := range args[3:] {
		e, wrong := str.LookupString(db, key)
		if wrong {
			c.ErrWrongType()
			return
		}
		if e != nil {
			srcs[i] = e.Bytes()
			maxLen = max(maxLen, len(srcs[i]))
		}
	}
	dest := args[2]
	if maxLen == 0 {
		if db.Delete(dest) {
			c.Notify(config.NotifyGeneric, "del", dest)
		}
		c.Int(0)
		return
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	if op == bitOpNot {
		for i := range res {
			res[i] = ^res[i]
		}
	}
	for _, src := range srcs[1:] {
		applyBitOp(op, res, src)
	}
	db.SetRawString(dest, res, false)
	c.Notify(config.NotifyString, "set", dest)
	c.Int(int64(maxLen))
}

// applyBitOp combines src into res (len(res) >= len(src)), src reading as
// zero past its end.
func applyBitOp(op bitOp, res, src []byte) {
	if op == bitOpAnd {
		clear(res[len(src):])
	}
	i := 0
	for ; i+8 <= len(src); i += 8 {
		a, b := binary.LittleEndian.Uint64(res[i:]), binary.LittleEndian.Uint64(src[i:])
		switch op {
		case bitOpAnd:
			a &= b
		case bitOpOr:
			a |= b
		case bitOpXor:
			a ^= b
		}
		binary.LittleEndian.PutUint64(res[i:], a)
	}
	for ; i < len(src); i++ {
		switch op {
		case bitOpAnd:
			res[i] &= src[i]
		case bitOpOr:
			res[i] |= src[i]
		case bitOpXor:
			res[i] ^= src[i]
		}
	}
}
