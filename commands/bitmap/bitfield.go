package bitmap

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/str"
	"github.com/shoal-db/shoal/config"
)

// BITFIELD key [GET type offset] [SET type offset value]
// [INCRBY type offset increment] [OVERFLOW WRAP|SAT|FAIL] ...
//
// Integers of 1..64 bits (signed) or 1..63 bits (unsigned) at any bit
// offset, most significant bit first, in the same bit order as SETBIT.

type bitfieldOpKind uint8

const (
	bitfieldGet bitfieldOpKind = iota
	bitfieldSet
	bitfieldIncrBy
)

// bitfieldOverflow is the OVERFLOW policy in force for an operation.
type bitfieldOverflow uint8

const (
	overflowWrap bitfieldOverflow = iota
	overflowSat
	overflowFail
)

type bitfieldOp struct {
	offset   uint64
	value    int64 // SET's value or INCRBY's increment
	kind     bitfieldOpKind
	overflow bitfieldOverflow
	width    uint // bits
	signed   bool
}

const msgBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

func cmdBitField(c *command.Ctx, args [][]byte)   { bitfieldCommand(c, args, false) }
func cmdBitFieldRO(c *command.Ctx, args [][]byte) { bitfieldCommand(c, args, true) }

// parseBitfieldType parses "i<bits>" (1..64) or "u<bits>" (1..63).
func parseBitfieldType(arg []byte) (signed bool, width uint, ok bool) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		return false, 0, false
	}
	signed = arg[0] == 'i'
	n, ok := command.ParseInt64(command.CBytes(arg[1:]))
	limit := int64(63)
	if signed {
		limit = 64
	}
	if !ok || n < 1 || n > limit {
		return false, 0, false
	}
	return signed, uint(n), true
}

// bitfieldCommand parses every operation first (any error leaves the key
// untouched), then looks the key up (for reading when there are only GETs,
// else creating/padding it up to the last bit written) and runs them in
// order.
func bitfieldCommand(c *command.Ctx, args [][]byte, readOnly bool) {
	var ops []bitfieldOp
	overflow := overflowWrap
	writes := false
	var highestBit uint64
	for j := 2; j < len(args); j++ {
		rest := len(args) - j - 1
		sub := args[j]
		var kind bitfieldOpKind
		switch {
		case command.ArgIs(sub, "get") && rest >= 2:
			kind = bitfieldGet
		case command.ArgIs(sub, "set") && rest >= 3:
			kind = bitfieldSet
		case command.ArgIs(sub, "incrby") && rest >= 3:
			kind = bitfieldIncrBy
		case command.ArgIs(sub, "overflow") && rest >= 1:
			j++
			switch {
			case command.ArgIs(args[j], "wrap"):
				overflow = overflowWrap
			case command.ArgIs(args[j], "sat"):
				overflow = overflowSat
			case command.ArgIs(args[j], "fail"):
				overflow = overflowFail
			default:
				c.Error("ERR Invalid OVERFLOW type specified")
				return
			}
			continue
		default:
			c.ErrSyntax()
			return
		}
		signed, width, ok := parseBitfieldType(args[j+1])
		if !ok {
			c.Error(msgBitfieldType)
			return
		}
		offset, ok := parseBitOffset(c, args[j+2], true, int(width))
		if !ok {
			return
		}
		var value int64
		if kind != bitfieldGet {
			writes = true
			highestBit = max(highestBit, offset+uint64(width)-1)
			if value, ok = command.ParseInt64(args[j+3]); !ok {
				c.ErrNotInteger()
				return
			}
			j++
		}
		ops = append(ops, bitfieldOp{offset: offset, value: value, kind: kind,
			overflow: overflow, width: width, signed: signed})
		j += 2
	}

	var p *[]byte
	var src []byte
	var grown bool
	if !writes {
		e, wrong := str.LookupString(c.DB(), args[1])
		if wrong {
			c.ErrWrongType()
			return
		}
		if e != nil {
			src = e.Bytes()
		}
	} else {
		if readOnly {
			c.Error("ERR BITFIELD_RO only supports the GET subcommand")
			return
		}
		if p, grown = bitTarget(c, args[1], highestBit); p == nil {
			return
		}
	}
	// Redis counts a write that stored a different value, or any write to
	// a key it created or grew; with none, nothing is propagated.
	changes := int64(0)
	defer func() {
		if writes {
			c.Dirty(changes)
			if changes == 0 {
				c.NoEffect()
			} else {
				c.Notify(config.NotifyString, "setbit", args[1])
			}
		}
	}()

	c.Array(len(ops))
	for i := range ops {
		op := &ops[i]
		if p != nil {
			src = *p
		}
		if op.kind == bitfieldGet {
			v := getBitfield(src, op.offset, op.width)
			if op.signed {
				c.Int(signExtend(v, op.width))
			} else {
				c.Int(int64(v))
			}
			continue
		}
		old := getBitfield(src, op.offset, op.width)
		var stored uint64
		var reply int64
		var failed bool
		if op.signed {
			oldVal := signExtend(old, op.width)
			var newVal int64
			if op.kind == bitfieldIncrBy {
				newVal, failed = signedFieldResult(oldVal, op.value, op.width, op.overflow)
				reply = newVal
			} else {
				newVal, failed = signedFieldResult(op.value, 0, op.width, op.overflow)
				reply = oldVal
			}
			stored = uint64(newVal)
		} else {
			var newVal uint64
			if op.kind == bitfieldIncrBy {
				newVal, failed = unsignedFieldResult(old, op.value, op.width, op.overflow)
				reply = int64(newVal)
			} else {
				newVal, failed = unsignedFieldResult(uint64(op.value), 0, op.width, op.overflow)
				reply = int64(old)
			}
			stored = newVal
		}
		if failed {
			c.Null() // OVERFLOW FAIL: nothing written
			continue
		}
		c.Int(reply)
		setBitfield(*p, op.offset, op.width, stored)
		if grown || stored&widthMask(op.width) != old {
			changes++
		}
	}
}

// getBitfield reads a width-bit unsigned integer at bit offset; bits past
// the end of b read as zero.
func getBitfield(b []byte, offset uint64, width uint) uint64 {
	var v uint64
	for j := uint64(0); j < uint64(width); j++ {
		pos := offset + j
		bit := uint64(0)
		if pos>>3 < uint64(len(b)) {
			bit = uint64(b[pos>>3]>>(7-pos&7)) & 1
		}
		v = v<<1 | bit
	}
	return v
}

// setBitfield writes the low width bits of v at bit offset; b is long
// enough (bitTarget padded it).
func setBitfield(b []byte, offset uint64, width uint, v uint64) {
	for j := uint64(0); j < uint64(width); j++ {
		pos := offset + j
		mask := byte(0x80) >> (pos & 7)
		if v>>(uint64(width)-1-j)&1 != 0 {
			b[pos>>3] |= mask
		} else {
			b[pos>>3] &^= mask
		}
	}
}

// signExtend turns the low width bits of v, a two's complement value, into
// an int64.
func signExtend(v uint64, width uint) int64 {
	if width < 64 {
		high := ^uint64(0) << width
		if v&(1<<(width-1)) != 0 {
			v |= high
		} else {
			v &^= high
		}
	}
	return int64(v)
}

// unsignedFieldResult returns value+incr stored in a width-bit unsigned
// field under the overflow policy; failed is true when the policy is FAIL
// and the result does not fit. It decides overflow exactly as Redis's
// checkUnsignedBitfieldOverflow, in wrapping int64 arithmetic, so that a
// negative SET value counts as an overflow past the maximum.
func unsignedFieldResult(value uint64, incr int64, width uint, policy bitfieldOverflow) (uint64, bool) {
	maxVal := uint64(1)<<width - 1
	maxIncr := int64(maxVal - value)
	minIncr := -int64(value)
	over := value > maxVal || (incr > 0 && incr > maxIncr)
	under := !over && incr < 0 && incr < minIncr
	sum := value + uint64(incr)
	if !over && !under {
		return sum, false
	}
	switch policy {
	case overflowSat:
		if over {
			return maxVal, false
		}
		return 0, false
	case overflowFail:
		return 0, true
	}
	return sum & maxVal, false
}

// signedFieldResult is unsignedFieldResult for a width-bit signed field,
// deciding overflow as Redis's checkSignedBitfieldOverflow (wrapping
// arithmetic included: e.g. SET of the minimum int64 into an i8 counts as
// an overflow past the maximum, as in Redis).
func signedFieldResult(value, incr int64, width uint, policy bitfieldOverflow) (int64, bool) {
	maxVal := int64(uint64(1)<<(width-1) - 1)
	minVal := -maxVal - 1
	maxIncr := int64(uint64(maxVal) - uint64(value))
	minIncr := minVal - value
	over := value > maxVal || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr)
	under := !over && (value < minVal || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr))
	if !over && !under {
		return value + incr, false
	}
	switch policy {
	case overflowSat:
		if over {
			return maxVal, false
		}
		return minVal, false
	case overflowFail:
		return 0, true
	}
	return signExtend(uint64(value)+uint64(incr), width), false
}

// widthMask is the low width bits set (width 1..64).
func widthMask(width uint) uint64 {
	if width >= 64 {
		return ^uint64(0)
	}
	return 1<<width - 1
}
