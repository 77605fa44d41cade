package rdb

import (
	"errors"
	"slices"
	"sync"
)

// LZF, the compression format of RDB strings (RDB_ENC_LZF).
//
// The format: a stream of literal runs and back references.
//
//	000LLLLL <L+1 bytes>            literal run of 1..32 bytes
//	LLLooooo oooooooo               back reference of L+2 = 3..8 bytes, offset o+1
//	111ooooo LLLLLLLL oooooooo      back reference of L+9 bytes, offset o+1
//
// lzfCompress makes the choices Redis's lzf_compress makes with its build
// settings (HLOG 16, VERY_FAST, a 3-byte rolling hash into a table of
// positions), so that a value compressed here is byte-identical to Redis's
// DUMP of it. The table starts empty on every call (Redis leaves it
// uninitialised, and stale slots only ever fail its validity checks).
//
// The 64 Ki-slot table is not allocated and cleared per call (that cost
// more than the compression of small values): tables are pooled, and each
// slot carries the number of the call that wrote it, so a slot from an
// earlier call reads as empty. A table is used by one call at a time.

const (
	lzfHashLog = 16
	lzfMaxLit  = 1 << 5
	lzfMaxOff  = 1 << 13
	lzfMaxRef  = 1<<8 + 1<<3
)

var errLZF = errors.New("rdb: bad LZF data")

// lzfTable is a compressor hash table: per slot, the call number (high
// 32 bits) and the input position + 1 (low 32 bits).
type lzfTable struct {
	slots [1 << lzfHashLog]uint64
	call  uint32
}

// lzfTables recycles tables between calls (package-level only as a cache:
// a table holds nothing between calls that a later call can observe).
var lzfTables = sync.Pool{New: func() any { return new(lzfTable) }}

// begin starts a call: slots written by earlier calls become empty.
func (t *lzfTable) begin() {
	t.call++
	if t.call == 0 {
		clear(t.slots[:])
		t.call = 1
	}
}

// swap stores pos (+1) in slot i and returns the previous position of
// this call, or -1.
func (t *lzfTable) swap(i uint32, pos int) int {
	old := t.slots[i]
	t.slots[i] = uint64(t.call)<<32 | uint64(pos+1)
	if uint32(old>>32) != t.call {
		return -1
	}
	return int(uint32(old)) - 1
}

func (t *lzfTable) set(i uint32, pos int) { t.slots[i] = uint64(t.call)<<32 | uint64(pos+1) }

// lzfHashIndex is the table slot of the three bytes packed in h (only the
// low 24 bits of h count).
func lzfHashIndex(h uint32) uint32 {
	return ((h >> (3*8 - lzfHashLog)) - h*5) & (1<<lzfHashLog - 1)
}

// lzfCompress appends in compressed into at most outLen bytes to dst; ok
// is false when the result would not fit (the caller then stores the data
// raw), and dst is then returned as it was (its capacity perhaps grown).
// Appending to the caller's buffer (an RDB's chunk) spares a snapshot an
// allocation per compressed value: garbage the collector paid for.
func lzfCompress(dst, in []byte, outLen int) (_ []byte, ok bool) {
	n := len(in)
	if n == 0 || outLen <= 0 {
		return dst, false
	}
	table := lzfTables.Get().(*lzfTable)
	defer lzfTables.Put(table)
	table.begin()
	base := len(dst)
	dst = slices.Grow(dst, outLen)
	out := dst[base : base+outLen]
	op := 1 // out[0] is the header of the first literal run
	lit := 0
	ip := 0
	hval := uint32(in[0])<<8 | uint32(in[1%n])
	if n < 2 {
		hval = 0
	}
	for ip < n-2 {
		hval = hval<<8 | uint32(in[ip+2])
		ref := table.swap(lzfHashIndex(hval), ip)
		if ref > 0 && ip-ref-1 < lzfMaxOff && ref < ip &&
			in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			off := ip - ref - 1
			length := 2
			maxLen := n - ip - length
			if maxLen > lzfMaxRef {
				maxLen = lzfMaxRef
			}
			if op+3+1 >= outLen {
				litAdj := 0
				if lit == 0 {
					litAdj = 1
				}
				if op-litAdj+3+1 >= outLen {
					return dst[:base], false
				}
			}
			out[op-lit-1] = byte(lit - 1) // close the literal run
			if lit == 0 {
				op-- // no run to close: reuse its header byte
			}
			// Extend the match the way lzf_compress does: an unbounded
			// check of up to 16 more bytes when more than 16 may match,
			// then a bounded scan.
			matched := false
			if maxLen > 16 {
				for k := 0; k < 16; k++ {
					length++
					if in[ref+length] != in[ip+length] {
						matched = true
						break
					}
				}
			}
			if !matched {
				for {
					length++
					if !(length < maxLen && in[ref+length] == in[ip+length]) {
						break
					}
				}
			}
			length -= 2 // now the stored length field: octets - 2... as encoded below
			ip++
			if length < 7 {
				out[op] = byte(off>>8) + byte(length<<5)
				op++
			} else {
				out[op] = byte(off>>8) + 7<<5
				out[op+1] = byte(length - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // header of the next literal run
			ip += length + 1
			if ip >= n-2 {
				break
			}
			// Hash the last two positions of the match (VERY_FAST).
			ip -= 2
			hval = uint32(in[ip])<<8 | uint32(in[ip+1])
			hval = hval<<8 | uint32(in[ip+2])
			table.set(lzfHashIndex(hval), ip)
			ip++
			hval = hval<<8 | uint32(in[ip+2])
			table.set(lzfHashIndex(hval), ip)
			ip++
			continue
		}
		if op >= outLen {
			return dst[:base], false
		}
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	if op+3 > outLen {
		return dst[:base], false
	}
	for ip < n {
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	out[op-lit-1] = byte(lit - 1)
	if lit == 0 {
		op--
	}
	return dst[:base+op], true
}

// lzfDecompress expands in, which must decode to exactly outLen bytes.
func lzfDecompress(in []byte, outLen int) ([]byte, error) {
	out := make([]byte, 0, outLen)
	ip := 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 {
			run := ctrl + 1
			if ip+run > len(in) || len(out)+run > outLen {
				return nil, errLZF
			}
			out = append(out, in[ip:ip+run]...)
			ip += run
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if ip >= len(in) {
				return nil, errLZF
			}
			length += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return nil, errLZF
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[ip]) - 1
		ip++
		length += 2
		if ref < 0 || len(out)+length > outLen {
			return nil, errLZF
		}
		if ref+length <= len(out) {
			out = append(out, out[ref:ref+length]...)
			continue
		}
		// The source overlaps what is being written (a run): byte by byte.
		for k := 0; k < length; k++ {
			out = append(out, out[ref+k])
		}
	}
	if len(out) != outLen {
		return nil, errLZF
	}
	return out, nil
}
