// Package listpack is the entry encoding of Redis's listpacks (listpack.c):
// what rdb writes into RDB_TYPE_*_LISTPACK objects and stream nodes, and
// what store counts when it reports a stream node's size as Redis would.
//
// An entry is <encoding + data> <backlen>: integers take 1 to 9 bytes by
// magnitude, strings a 1, 2 or 5-byte length before their bytes (a string
// that reads as a canonical 64-bit integer is stored as that integer), and
// backlen is the length of <encoding + data> again in 1 to 5 bytes of 7
// bits, so that the listpack can be walked backwards.
package listpack

import (
	"encoding/binary"
	"math"

	"github.com/shoal-db/shoal/strconvx"
)

// intEncodedSize is the size of an integer's encoding and data
// (lpEncodeIntegerGetType).
func intEncodedSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1 // 7-bit unsigned
	case v >= -4096 && v <= 4095:
		return 2 // 13-bit signed
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 3
	case v >= -(1<<23) && v <= 1<<23-1:
		return 4 // 24-bit signed
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 5
	}
	return 9
}

// stringEncodedSize is the size of the encoding and data of a string of n
// bytes (lpEncodeGetType / lpEncodeString).
func stringEncodedSize(n int) int {
	switch {
	case n < 64:
		return 1 + n // 6-bit length
	case n < 4096:
		return 2 + n // 12-bit length
	}
	return 5 + n // 32-bit length
}

// BacklenSize is the size of the backlen of an entry whose encoding and
// data take l bytes (lpEncodeBacklen; its bounds are Redis's, one short of
// the powers of 128).
func BacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// AppendBacklen appends the backlen of an entry of l bytes: the most
// significant group first without the continuation flag, then 7 bits a byte
// with 128 set.
func AppendBacklen(dst []byte, l int) []byte {
	n := BacklenSize(l)
	dst = append(dst, byte(l>>(7*uint(n-1))))
	for i := n - 2; i >= 0; i-- {
		dst = append(dst, byte(l>>(7*uint(i)))&127|128)
	}
	return dst
}

// ReadBacklen decodes a backlen from its bytes, left to right; false if
// the continuation flags are not where AppendBacklen puts them.
func ReadBacklen(b []byte) (int, bool) {
	v := 0
	for i, c := range b {
		if i > 0 {
			if c&128 == 0 {
				return 0, false
			}
			c &= 127
		} else if len(b) > 1 && c&128 != 0 {
			return 0, false
		}
		v = v<<7 | int(c)
	}
	return v, true
}

// IntEntrySize is the size of the entry holding integer v, backlen
// included.
func IntEntrySize(v int64) int {
	n := intEncodedSize(v)
	return n + BacklenSize(n)
}

// StringEntrySize is the size of the entry holding s, backlen included: s
// is stored as an integer when it reads as one (string2ll).
func StringEntrySize(s []byte) int {
	if v, ok := strconvx.ParseInt(s); ok {
		return IntEntrySize(v)
	}
	n := stringEncodedSize(len(s))
	return n + BacklenSize(n)
}

// AppendInt appends the entry holding integer v in its smallest encoding.
func AppendInt(dst []byte, v int64) []byte {
	start := len(dst)
	switch intEncodedSize(v) {
	case 1:
		dst = append(dst, byte(v))
	case 2:
		u := uint64(v)
		if v < 0 {
			u = uint64(1<<13 + v)
		}
		dst = append(dst, 0xC0|byte(u>>8), byte(u))
	case 3:
		dst = binary.LittleEndian.AppendUint16(append(dst, 0xF1), uint16(v))
	case 4:
		u := uint32(v)
		dst = append(dst, 0xF2, byte(u), byte(u>>8), byte(u>>16))
	case 5:
		dst = binary.LittleEndian.AppendUint32(append(dst, 0xF3), uint32(v))
	default:
		dst = binary.LittleEndian.AppendUint64(append(dst, 0xF4), uint64(v))
	}
	return AppendBacklen(dst, len(dst)-start)
}

// AppendString appends the entry holding s: an integer entry when s reads
// as a canonical integer (lpAppend's lpEncodeGetType), else a string entry.
func AppendString(dst []byte, s []byte) []byte {
	if v, ok := strconvx.ParseInt(s); ok {
		return AppendInt(dst, v)
	}
	start := len(dst)
	switch n := len(s); stringEncodedSize(n) - n {
	case 1:
		dst = append(dst, 0x80|byte(n))
	case 2:
		dst = append(dst, 0xE0|byte(n>>8), byte(n))
	default:
		dst = binary.LittleEndian.AppendUint32(append(dst, 0xF0), uint32(n))
	}
	dst = append(dst, s...)
	return AppendBacklen(dst, len(dst)-start)
}
