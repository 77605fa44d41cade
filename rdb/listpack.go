package rdb

import (
	"encoding/binary"
	"strconv"

	"github.com/shoal-db/shoal/listpack"
	"github.com/shoal-db/shoal/strconvx"
)

// Listpacks (listpack.c), the blob inside RDB_TYPE_*_LISTPACK objects,
// quicklist-2 nodes and stream nodes:
//
//	<total bytes u32 LE> <count u16 LE, 65535 = unknown> <entry>... 0xFF
//
// and each entry is <encoding + data> <backlen> (package listpack encodes
// them), where backlen is the length of <encoding + data> in 1-5 bytes of
// 7 bits, readable backwards.

const (
	lpHeaderSize  = 6
	lpEOF         = 0xFF
	lpUnknownSize = 65535
)

// lpBuilder appends entries to a listpack under construction.
type lpBuilder struct {
	buf []byte
	n   int
}

func newLPBuilder(sizeHint int) lpBuilder {
	b := make([]byte, lpHeaderSize, lpHeaderSize+sizeHint+1)
	return lpBuilder{buf: b}
}

// size is the listpack's byte size if it were finished now.
func (b *lpBuilder) size() int { return len(b.buf) + 1 }

// appendString appends s, as an integer entry when s is a canonical
// integer (lpAppend → lpEncodeGetType).
func (b *lpBuilder) appendString(s []byte) {
	b.buf = listpack.AppendString(b.buf, s)
	b.n++
}

// appendInt appends an integer entry in its smallest encoding.
func (b *lpBuilder) appendInt(v int64) {
	b.buf = listpack.AppendInt(b.buf, v)
	b.n++
}

// finish terminates the listpack and fills in its header.
func (b *lpBuilder) finish() []byte {
	b.buf = append(b.buf, lpEOF)
	binary.LittleEndian.PutUint32(b.buf, uint32(len(b.buf)))
	count := b.n
	if count >= lpUnknownSize {
		count = lpUnknownSize
	}
	binary.LittleEndian.PutUint16(b.buf[4:], uint16(count))
	return b.buf
}

// lpEntry is one decoded listpack or ziplist entry: a string (s, aliasing
// the blob) or an integer.
type lpEntry struct {
	s     []byte
	v     int64
	isInt bool
}

// bytes returns the entry as a string: a string entry's own bytes (which
// alias the blob and must not be written), or an integer formatted into
// *scratch, which is reused from call to call.
func (e lpEntry) bytes(scratch *[]byte) []byte {
	if e.isInt {
		*scratch = strconv.AppendInt((*scratch)[:0], e.v, 10)
		return *scratch
	}
	return e.s
}

// owned returns the entry as a freshly allocated string.
func (e lpEntry) owned() []byte {
	if e.isInt {
		return strconv.AppendInt(nil, e.v, 10)
	}
	return append([]byte(nil), e.s...)
}

// int returns the entry as an integer (stream metadata fields are stored
// as integers; a string holding a canonical integer is accepted too).
func (e lpEntry) int() (int64, bool) {
	if e.isInt {
		return e.v, true
	}
	return strconvx.ParseInt(e.s)
}

// parseListpack validates a whole listpack and returns its entries. It
// checks the header's byte count and element count, every entry's bounds
// and its backlen, and the terminator.
func parseListpack(lp []byte, maxEntries int) ([]lpEntry, error) {
	if len(lp) < lpHeaderSize+1 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != lpEOF {
		return nil, ErrBadData
	}
	declared := int(binary.LittleEndian.Uint16(lp[4:]))
	var out []lpEntry
	if declared != lpUnknownSize {
		// A declared count must fit in the bytes (2 bytes per entry at
		// least): bounded before sizing the slice from it.
		if declared > (len(lp)-lpHeaderSize-1)/2 || declared > maxEntries {
			return nil, ErrBadData
		}
		out = make([]lpEntry, 0, declared)
	}
	p := lpHeaderSize
	end := len(lp) - 1
	for p < end {
		if len(out) >= maxEntries {
			return nil, ErrBadData
		}
		e, size, err := lpDecodeEntry(lp[p:end])
		if err != nil {
			return nil, err
		}
		bl := listpack.BacklenSize(size)
		if p+size+bl > end {
			return nil, ErrBadData
		}
		// Verify the backlen reads back as the entry size.
		if got, ok := listpack.ReadBacklen(lp[p+size : p+size+bl]); !ok || got != size {
			return nil, ErrBadData
		}
		out = append(out, e)
		p += size + bl
	}
	if p != end {
		return nil, ErrBadData
	}
	if declared != lpUnknownSize && declared != len(out) {
		return nil, ErrBadData
	}
	return out, nil
}

// lpDecodeEntry decodes the entry at the start of b (which excludes the
// terminator) and returns it with the size of its encoding + data.
func lpDecodeEntry(b []byte) (lpEntry, int, error) {
	if len(b) == 0 {
		return lpEntry{}, 0, ErrBadData
	}
	c := b[0]
	need := func(n int) error {
		if n > len(b) {
			return ErrBadData
		}
		return nil
	}
	switch {
	case c&0x80 == 0:
		return lpEntry{v: int64(c), isInt: true}, 1, nil
	case c&0xC0 == 0x80:
		n := int(c & 0x3f)
		if err := need(1 + n); err != nil {
			return lpEntry{}, 0, err
		}
		return lpEntry{s: b[1 : 1+n]}, 1 + n, nil
	case c&0xE0 == 0xC0:
		if err := need(2); err != nil {
			return lpEntry{}, 0, err
		}
		u := int64(c&0x1f)<<8 | int64(b[1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		return lpEntry{v: u, isInt: true}, 2, nil
	case c&0xF0 == 0xE0:
		if err := need(2); err != nil {
			return lpEntry{}, 0, err
		}
		n := int(c&0x0f)<<8 | int(b[1])
		if err := need(2 + n); err != nil {
			return lpEntry{}, 0, err
		}
		return lpEntry{s: b[2 : 2+n]}, 2 + n, nil
	}
	switch c {
	case 0xF0:
		if err := need(5); err != nil {
			return lpEntry{}, 0, err
		}
		n := uint64(binary.LittleEndian.Uint32(b[1:]))
		if n > uint64(len(b)-5) {
			return lpEntry{}, 0, ErrBadData
		}
		return lpEntry{s: b[5 : 5+n]}, 5 + int(n), nil
	case 0xF1:
		if err := need(3); err != nil {
			return lpEntry{}, 0, err
		}
		return lpEntry{v: int64(int16(binary.LittleEndian.Uint16(b[1:]))), isInt: true}, 3, nil
	case 0xF2:
		if err := need(4); err != nil {
			return lpEntry{}, 0, err
		}
		u := int32(uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24) >> 8
		return lpEntry{v: int64(u), isInt: true}, 4, nil
	case 0xF3:
		if err := need(5); err != nil {
			return lpEntry{}, 0, err
		}
		return lpEntry{v: int64(int32(binary.LittleEndian.Uint32(b[1:]))), isInt: true}, 5, nil
	case 0xF4:
		if err := need(9); err != nil {
			return lpEntry{}, 0, err
		}
		return lpEntry{v: int64(binary.LittleEndian.Uint64(b[1:])), isInt: true}, 9, nil
	}
	return lpEntry{}, 0, ErrBadData
}
