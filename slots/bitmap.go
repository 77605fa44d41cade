package slots

import (
	"math/bits"
	"strconv"
)

// Bitmap is a set of hash slots, one bit per slot (2 KiB). The zero value is
// the empty set. It is a plain value: copy it to snapshot it.
type Bitmap [Count / 64]uint64

// Range is a run of consecutive slots, both ends included.
type Range struct {
	Start, End uint16
}

// Len is the number of slots in the range.
func (r Range) Len() int { return int(r.End) - int(r.Start) + 1 }

// Set adds slot to the set and reports whether it was absent. Slots out of
// range are ignored.
func (b *Bitmap) Set(slot int) bool {
	if slot < 0 || slot >= Count {
		return false
	}
	w, m := slot>>6, uint64(1)<<(slot&63)
	was := b[w]&m != 0
	b[w] |= m
	return !was
}

// Clear removes slot from the set and reports whether it was present.
func (b *Bitmap) Clear(slot int) bool {
	if slot < 0 || slot >= Count {
		return false
	}
	w, m := slot>>6, uint64(1)<<(slot&63)
	was := b[w]&m != 0
	b[w] &^= m
	return was
}

// Has reports whether slot is in the set.
func (b *Bitmap) Has(slot int) bool {
	if slot < 0 || slot >= Count {
		return false
	}
	return b[slot>>6]&(uint64(1)<<(slot&63)) != 0
}

// SetRange adds the slots start..end (inclusive), a word at a time (every
// bus message carrying a master's slots decodes into one). Slots out of
// range are ignored.
func (b *Bitmap) SetRange(start, end int) {
	start, end = max(start, 0), min(end, Count-1)
	for start <= end {
		w, lo := start>>6, start&63
		hi := 63
		if end>>6 == w {
			hi = end & 63
		}
		b[w] |= (^uint64(0) >> (63 - hi)) &^ (uint64(1)<<lo - 1)
		start = (w + 1) << 6
	}
}

// Count returns the number of slots in the set.
func (b *Bitmap) Count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether the set has no slot.
func (b *Bitmap) IsEmpty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

// Reset empties the set.
func (b *Bitmap) Reset() { *b = Bitmap{} }

// Each calls fn for every slot in the set, in ascending order.
func (b *Bitmap) Each(fn func(slot int)) {
	for i, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			fn(i<<6 | t)
			w &= w - 1
		}
	}
}

// Ranges returns the maximal runs of consecutive slots, ascending.
func (b *Bitmap) Ranges() []Range {
	var out []Range
	b.eachRange(func(r Range) { out = append(out, r) })
	return out
}

// eachRange walks the maximal runs word by word (a full cluster's 16384
// slots in a few hundred steps, not 16384).
func (b *Bitmap) eachRange(fn func(Range)) {
	start := -1
	for i, w := range b {
		base := i << 6
		switch {
		case w == ^uint64(0):
			if start < 0 {
				start = base
			}
			continue
		case w == 0:
			if start >= 0 {
				fn(Range{uint16(start), uint16(base - 1)})
				start = -1
			}
			continue
		}
		for bit := 0; bit < 64; bit++ {
			on := w&(uint64(1)<<bit) != 0
			if on && start < 0 {
				start = base + bit
			} else if !on && start >= 0 {
				fn(Range{uint16(start), uint16(base + bit - 1)})
				start = -1
			}
		}
	}
	if start >= 0 {
		fn(Range{uint16(start), Count - 1})
	}
}

// AppendRanges appends the set as CLUSTER NODES prints it: maximal runs,
// ascending, separated by single spaces, a run of one slot as "N", longer
// runs as "A-B" (e.g. "0-5460 10923"). Nothing is appended for an empty set.
func (b *Bitmap) AppendRanges(dst []byte) []byte {
	first := true
	b.eachRange(func(r Range) {
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		dst = AppendRange(dst, r)
	})
	return dst
}

// String formats the set like AppendRanges.
func (b *Bitmap) String() string { return string(b.AppendRanges(nil)) }

// AppendRange appends "N" or "A-B".
func AppendRange(dst []byte, r Range) []byte {
	dst = strconv.AppendUint(dst, uint64(r.Start), 10)
	if r.End != r.Start {
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, uint64(r.End), 10)
	}
	return dst
}
