package rdb

import (
	"encoding/binary"
)

// Decoders of the compact encodings older Redis versions wrote and Redis
// 7.0 still loads: ziplists (lists, hashes and sorted sets before 7.0,
// quicklist v1 nodes), zipmaps (hashes before 2.6) and intsets.

const (
	zlHeaderSize = 10
	zlEnd        = 0xFF
)

// parseZiplist validates a ziplist and returns its entries:
//
//	<zlbytes u32> <zltail u32> <zllen u16> <entry>... 0xFF
//	entry: <prevlen: 1 byte, or 0xFE + u32> <encoding> <data>
func parseZiplist(zl []byte, maxEntries int) ([]lpEntry, error) {
	if len(zl) < zlHeaderSize+1 || int(binary.LittleEndian.Uint32(zl)) != len(zl) || zl[len(zl)-1] != zlEnd {
		return nil, ErrBadData
	}
	tail := int(binary.LittleEndian.Uint32(zl[4:]))
	declared := int(binary.LittleEndian.Uint16(zl[8:]))
	var out []lpEntry
	if declared != 0xFFFF {
		if declared > (len(zl)-zlHeaderSize-1)/2 || declared > maxEntries {
			return nil, ErrBadData
		}
		out = make([]lpEntry, 0, declared)
	}
	p := zlHeaderSize
	end := len(zl) - 1
	prevSize := 0
	lastStart := zlHeaderSize
	for p < end {
		if len(out) >= maxEntries {
			return nil, ErrBadData
		}
		start := p
		// prevlen
		var prev int
		if zl[p] < 254 {
			prev = int(zl[p])
			p++
		} else if zl[p] == 254 {
			if p+5 > end {
				return nil, ErrBadData
			}
			prev = int(binary.LittleEndian.Uint32(zl[p+1:]))
			p += 5
		} else {
			return nil, ErrBadData
		}
		if prev != prevSize {
			return nil, ErrBadData
		}
		if p >= end {
			return nil, ErrBadData
		}
		c := zl[p]
		var e lpEntry
		need := func(n int) bool { return p+n <= end }
		switch c >> 6 {
		case 0:
			n := int(c & 0x3f)
			if !need(1 + n) {
				return nil, ErrBadData
			}
			e.s = zl[p+1 : p+1+n]
			p += 1 + n
		case 1:
			if !need(2) {
				return nil, ErrBadData
			}
			n := int(c&0x3f)<<8 | int(zl[p+1])
			if !need(2 + n) {
				return nil, ErrBadData
			}
			e.s = zl[p+2 : p+2+n]
			p += 2 + n
		case 2:
			if c != 0x80 || !need(5) {
				return nil, ErrBadData
			}
			n := uint64(binary.BigEndian.Uint32(zl[p+1:]))
			if n > uint64(end-p-5) {
				return nil, ErrBadData
			}
			e.s = zl[p+5 : p+5+int(n)]
			p += 5 + int(n)
		default:
			e.isInt = true
			switch {
			case c == 0xC0:
				if !need(3) {
					return nil, ErrBadData
				}
				e.v = int64(int16(binary.LittleEndian.Uint16(zl[p+1:])))
				p += 3
			case c == 0xD0:
				if !need(5) {
					return nil, ErrBadData
				}
				e.v = int64(int32(binary.LittleEndian.Uint32(zl[p+1:])))
				p += 5
			case c == 0xE0:
				if !need(9) {
					return nil, ErrBadData
				}
				e.v = int64(binary.LittleEndian.Uint64(zl[p+1:]))
				p += 9
			case c == 0xF0:
				if !need(4) {
					return nil, ErrBadData
				}
				e.v = int64(int32(uint32(zl[p+1])<<8|uint32(zl[p+2])<<16|uint32(zl[p+3])<<24) >> 8)
				p += 4
			case c == 0xFE:
				if !need(2) {
					return nil, ErrBadData
				}
				e.v = int64(int8(zl[p+1]))
				p += 2
			case c >= 0xF1 && c <= 0xFD:
				e.v = int64(c&0x0f) - 1
				p++
			default:
				return nil, ErrBadData
			}
		}
		out = append(out, e)
		prevSize = p - start
		lastStart = start
	}
	if p != end {
		return nil, ErrBadData
	}
	if len(out) > 0 && tail != lastStart || len(out) == 0 && tail != zlHeaderSize {
		return nil, ErrBadData
	}
	if declared != 0xFFFF && declared != len(out) {
		return nil, ErrBadData
	}
	return out, nil
}

// parseIntset validates an intset (intset.h) and returns its values:
//
//	<encoding u32 LE: 2, 4 or 8> <length u32 LE> <values, LE, strictly ascending>
func parseIntset(is []byte, maxEntries int) ([]int64, error) {
	if len(is) < 8 {
		return nil, ErrBadData
	}
	width := int(binary.LittleEndian.Uint32(is))
	n := uint64(binary.LittleEndian.Uint32(is[4:]))
	if width != 2 && width != 4 && width != 8 {
		return nil, ErrBadData
	}
	if n == 0 || uint64(len(is)-8) != n*uint64(width) || n > uint64(maxEntries) {
		return nil, ErrBadData
	}
	out := make([]int64, n)
	for i := range out {
		b := is[8+i*width:]
		switch width {
		case 2:
			out[i] = int64(int16(binary.LittleEndian.Uint16(b)))
		case 4:
			out[i] = int64(int32(binary.LittleEndian.Uint32(b)))
		default:
			out[i] = int64(binary.LittleEndian.Uint64(b))
		}
		if i > 0 && out[i] <= out[i-1] {
			return nil, ErrBadData
		}
	}
	return out, nil
}

// parseZipmap validates a zipmap and returns its keys and values in turn:
//
//	<zmlen u8> (<len> key <len> <free u8> value <free bytes>)... 0xFF
//	len: one byte < 254, or 254 + u32 LE
func parseZipmap(zm []byte, maxEntries int) ([][]byte, error) {
	if len(zm) < 2 || zm[len(zm)-1] != 0xFF {
		return nil, ErrBadData
	}
	p := 1
	readLen := func() (int, bool) {
		if p >= len(zm) {
			return 0, false
		}
		c := zm[p]
		if c < 254 {
			p++
			return int(c), true
		}
		if c == 254 && p+5 <= len(zm) {
			n := binary.LittleEndian.Uint32(zm[p+1:])
			p += 5
			if uint64(n) > uint64(len(zm)) {
				return 0, false
			}
			return int(n), true
		}
		return 0, false
	}
	var out [][]byte
	for {
		if p >= len(zm) {
			return nil, ErrBadData
		}
		if zm[p] == 0xFF {
			p++
			break
		}
		if len(out)/2 >= maxEntries {
			return nil, ErrBadData
		}
		klen, ok := readLen()
		if !ok || p+klen > len(zm) {
			return nil, ErrBadData
		}
		key := zm[p : p+klen]
		p += klen
		vlen, ok := readLen()
		if !ok || p >= len(zm) {
			return nil, ErrBadData
		}
		free := int(zm[p])
		p++
		if p+vlen+free > len(zm) {
			return nil, ErrBadData
		}
		out = append(out, key, zm[p:p+vlen])
		p += vlen + free
	}
	if p != len(zm) {
		return nil, ErrBadData
	}
	return out, nil
}
