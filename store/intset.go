package store

import (
	"encoding/binary"
	"math"
	"strconv"
)

// intset is the "intset" encoding of sets whose members are all integers:
// a sorted array of little-endian integers of one width, 2, 4 or 8 bytes,
// the smallest that holds every member, as Redis's intset.c does. Adding a
// member that needs a wider type rewrites the array at the new width; a
// removal never narrows it (nor does Redis's). Lookups are binary searches.
type intset struct {
	width uint8 // bytes per member: 2, 4 or 8 (0 while empty and never used)
	data  []byte
}

// intWidth returns the smallest width that holds v.
func intWidth(v int64) uint8 {
	switch {
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 2
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 4
	}
	return 8
}

func (s *intset) len() int {
	if s.width == 0 {
		return 0
	}
	return len(s.data) / int(s.width)
}

// get returns member i (0 <= i < len).
func (s *intset) get(i int) int64 {
	switch s.width {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(s.data[2*i:])))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(s.data[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(s.data[8*i:]))
}

func putInt(b []byte, width uint8, v int64) {
	switch width {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, uint64(v))
	}
}

// search returns v's position, or where it would be inserted.
func (s *intset) search(v int64) (int, bool) {
	lo, hi := 0, s.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := s.get(m)
		switch {
		case x < v:
			lo = m + 1
		case x > v:
			hi = m
		default:
			return m, true
		}
	}
	return lo, false
}

func (s *intset) contains(v int64) bool {
	if s.width == 0 || intWidth(v) > s.width {
		return false
	}
	_, ok := s.search(v)
	return ok
}

// add inserts v and reports whether it was absent.
func (s *intset) add(v int64) bool {
	if w := intWidth(v); w > s.width {
		s.upgrade(w)
	} else if _, ok := s.search(v); ok {
		return false
	}
	i, _ := s.search(v)
	w := int(s.width)
	s.data = append(s.data, make([]byte, w)...)
	copy(s.data[(i+1)*w:], s.data[i*w:len(s.data)-w])
	putInt(s.data[i*w:], s.width, v)
	return true
}

// upgrade rewrites the members at width w.
func (s *intset) upgrade(w uint8) {
	n := s.len()
	nd := make([]byte, n*int(w), (n+1)*int(w))
	for i := range n {
		putInt(nd[i*int(w):], w, s.get(i))
	}
	s.width, s.data = w, nd
}

// remove deletes v and reports whether it was present.
func (s *intset) remove(v int64) bool {
	if s.width == 0 || intWidth(v) > s.width {
		return false
	}
	i, ok := s.search(v)
	if !ok {
		return false
	}
	w := int(s.width)
	copy(s.data[i*w:], s.data[(i+1)*w:])
	s.data = s.data[:len(s.data)-w]
	if cap(s.data) > 64 && cap(s.data) > 4*len(s.data) {
		s.data = append([]byte(nil), s.data...)
	}
	return true
}

func (s *intset) clone() intset {
	return intset{width: s.width, data: append([]byte(nil), s.data...)}
}

// appendInt formats v in decimal (what Redis replies for intset members).
func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }
