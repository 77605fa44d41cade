// Package hll is Redis's HyperLogLog: the dense and sparse encodings, adding
// elements, merging and counting, on the string values PFADD, PFCOUNT,
// PFMERGE and PFDEBUG work on.
package hll

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// HyperLogLog values are plain strings in Redis's exact representation, so
// that a value written by Redis (GET/SET, DUMP/RESTORE, replication) is read
// by shoal and the other way round:
//
//	+------+----------+---------+-----------+-----------------------+
//	| HYLL | encoding | 3 × \0  | card (8B) | registers (dense) or  |
//	|      | 0/1      | unused  | LE, bit63 | opcodes (sparse)      |
//	|      |          |         | = invalid |                       |
//	+------+----------+---------+-----------+-----------------------+
//
// Dense: 16384 registers of 6 bits, register i at bit offset 6i, least
// significant bits first. Sparse: a run-length sequence of opcodes covering
// all 16384 registers:
//
//	ZERO  00xxxxxx           1..64 zero registers
//	XZERO 01xxxxxx yyyyyyyy  1..16384 zero registers (14-bit length - 1)
//	VAL   1vvvvvxx           1..4 registers of value 1..32
//
// A register holds the longest run of zeros (plus one) seen in the hash bits
// of the elements mapped to it; the cardinality estimate is Ertl's improved
// estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", arXiv:1702.01284), as in Redis 7.

const (
	pBits = 14
	qBits = 64 - pBits
	// NumRegisters is the number of registers of every HyperLogLog.
	NumRegisters = 1 << pBits
	pMask        = NumRegisters - 1
	regBits      = 6
	// RegisterMax is the largest value a dense register holds.
	RegisterMax = 1<<regBits - 1
	// HdrSize is the size of the header before the registers or opcodes.
	HdrSize = 16
	// DenseSize is the size of a dense HyperLogLog.
	DenseSize  = HdrSize + (NumRegisters*regBits+7)/8
	encOffset  = 4  // header byte holding the encoding
	cardOffset = 8  // header bytes 8..15: cached cardinality, little endian
	cardFlag   = 15 // header byte whose top bit marks the cache invalid

	encDense          = 0
	encSparse         = 1
	maxEncoding       = encSparse
	sparseValMax      = 32 // largest value a VAL opcode holds
	sparseValRunMax   = 4  // longest run of a VAL opcode
	sparseZeroRunMax  = 64
	sparseXZeroRunMax = 16384

	hashSeed = 0xadc83b19
	alphaInf = 0.721347520444481703680 // 0.5/ln(2)
)

// murmurHash64A is Austin Appleby's 64-bit MurmurHash2 as Redis uses it
// (little-endian word reads).
func murmurHash64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(data)) * m)
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		data = data[8:]
	}
	if len(data) > 0 {
		for i := len(data) - 1; i >= 0; i-- {
			h ^= uint64(data[i]) << (8 * uint(i))
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// patLen maps an element to its register and the length of the run of
// zeros (plus one) in the hash bits above the register index: at most Q+1.
func patLen(ele []byte) (index int, count uint8) {
	h := murmurHash64A(ele, hashSeed)
	index = int(h & pMask)
	h >>= pBits
	h |= 1 << qBits // a sentinel so the count never exceeds Q+1
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// Valid reports whether a string value is a HyperLogLog Redis accepts: long
// enough for the header, the magic, a known encoding, and the exact size
// when dense. A sparse value is validated only while it is decoded.
func Valid(b []byte) bool {
	if len(b) < HdrSize || string(b[:4]) != "HYLL" {
		return false
	}
	enc := b[encOffset]
	return enc <= maxEncoding && (enc != encDense || len(b) == DenseSize)
}

// CachedCard returns the cached cardinality and whether it is valid.
func CachedCard(b []byte) (uint64, bool) {
	return binary.LittleEndian.Uint64(b[cardOffset:]), b[cardFlag]&0x80 == 0
}

// SetCachedCard caches card in the header (PFCOUNT of one key).
func SetCachedCard(b []byte, card uint64) {
	binary.LittleEndian.PutUint64(b[cardOffset:], card)
}

// InvalidateCache marks the cached cardinality stale (after a change).
func InvalidateCache(b []byte) { b[cardFlag] |= 0x80 }

// IsDense reports whether the HyperLogLog b (already checked with Valid) is
// dense; otherwise it is sparse.
func IsDense(b []byte) bool { return b[encOffset] == encDense }

// NewDense returns a dense HyperLogLog holding regs (each at most
// RegisterMax), its cached cardinality marked stale.
func NewDense(regs *Registers) []byte {
	b := make([]byte, DenseSize)
	copy(b, "HYLL")
	InvalidateCache(b)
	for i, v := range regs {
		denseSetReg(b[HdrSize:], i, v)
	}
	return b
}

// Register returns register i of the dense HyperLogLog b.
func Register(b []byte, i int) uint8 { return denseGet(b[HdrSize:], i) }

// NewSparse returns an empty HyperLogLog as Redis creates it: sparse, one
// XZERO opcode covering every register, a zero (valid) cached cardinality.
func NewSparse() []byte {
	b := make([]byte, HdrSize, 64)
	copy(b, "HYLL")
	b[encOffset] = encSparse
	for left := NumRegisters; left > 0; {
		n := min(left, sparseXZeroRunMax)
		b = appendXZero(b, n)
		left -= n
	}
	return b
}

// ---- dense registers -------------------------------------------------------

func denseGet(regs []byte, i int) uint8 {
	pos := i * regBits
	at, shift := pos>>3, uint(pos&7)
	v := uint(regs[at]) >> shift
	if shift > 8-regBits { // the register continues in the next byte
		v |= uint(regs[at+1]) << (8 - shift)
	}
	return uint8(v & RegisterMax)
}

func denseSetReg(regs []byte, i int, val uint8) {
	pos := i * regBits
	at, shift := pos>>3, uint(pos&7)
	v := uint(val)
	regs[at] = byte(uint(regs[at])&^(RegisterMax<<shift) | v<<shift)
	if shift > 8-regBits {
		regs[at+1] = byte(uint(regs[at+1])&^(RegisterMax>>(8-shift)) | v>>(8-shift))
	}
}

// denseSet raises register i to count; it reports whether it changed.
func denseSet(regs []byte, i int, count uint8) bool {
	if count > denseGet(regs, i) {
		denseSetReg(regs, i, count)
		return true
	}
	return false
}

// denseHisto counts the registers of each value, four registers (three
// bytes) at a time.
func denseHisto(regs []byte, histo *[64]int32) {
	for i := 0; i+2 < NumRegisters*regBits/8; i += 3 {
		b0, b1, b2 := regs[i], regs[i+1], regs[i+2]
		histo[b0&63]++
		histo[(b0>>6|b1<<2)&63]++
		histo[(b1>>4|b2<<4)&63]++
		histo[b2>>2]++
	}
}

// ---- sparse opcodes --------------------------------------------------------

func sparseIsZero(op byte) bool  { return op&0xc0 == 0 }
func sparseIsXZero(op byte) bool { return op&0xc0 == 0x40 }
func sparseIsVal(op byte) bool   { return op&0x80 != 0 }

func sparseVal(op byte) uint8  { return (op>>2)&0x1f + 1 }
func sparseValLen(op byte) int { return int(op&3) + 1 }
func sparseValOp(val uint8, n int) byte {
	return byte(int(val-1)<<2|(n-1)) | 0x80
}

func appendXZero(b []byte, n int) []byte {
	return append(b, byte((n-1)>>8)|0x40, byte(n-1))
}

// appendZeros appends the opcode Redis uses for a run of n zero registers:
// ZERO up to 64, XZERO beyond.
func appendZeros(b []byte, n int) []byte {
	if n > sparseZeroRunMax {
		return appendXZero(b, n)
	}
	return append(b, byte(n-1))
}

// sparseOp decodes the opcode at data[i]: the registers it covers, their
// value (0 for ZERO/XZERO) and its size in bytes. An XZERO cut short by the
// end of the string reads its missing second byte as zero, as Redis does
// (it reads the string's terminator).
func sparseOp(data []byte, i int) (run int, val uint8, size int) {
	op := data[i]
	switch {
	case sparseIsZero(op):
		return int(op&0x3f) + 1, 0, 1
	case sparseIsXZero(op):
		lo := 0
		if i+1 < len(data) {
			lo = int(data[i+1])
		}
		return (int(op&0x3f)<<8 | lo) + 1, 0, 2
	default:
		return sparseValLen(op), sparseVal(op), 1
	}
}

// The sparse decoders reject opcodes running past register 16383, whatever
// follows: that is Redis 7.0.15 with the CVE-2025-32023 fix (the Debian
// build shoal is checked against), whose runs can no longer overflow.

// sparseHisto counts the registers of each value of a sparse HLL's
// opcodes; invalid reports opcodes not covering exactly 16384 registers.
func sparseHisto(data []byte, histo *[64]int32) (invalid bool) {
	idx := 0
	for i := 0; i < len(data); {
		run, val, size := sparseOp(data, i)
		if idx+run > NumRegisters {
			return true
		}
		idx += run
		histo[val] += int32(run)
		i += size
	}
	return idx != NumRegisters
}

// sparseEach calls fn(register, value) for every register of a VAL
// opcode; it reports false if the opcodes do not cover exactly 16384
// registers.
func sparseEach(data []byte, fn func(i int, val uint8)) bool {
	idx := 0
	for i := 0; i < len(data); {
		run, val, size := sparseOp(data, i)
		if idx+run > NumRegisters {
			return false
		}
		if val != 0 {
			for k := idx; k < idx+run; k++ {
				fn(k, val)
			}
		}
		idx += run
		i += size
	}
	return idx == NumRegisters
}

// sparseToDense returns the dense form of a sparse HLL, keeping its
// header (magic, reserved bytes, cached cardinality); ok is false if the
// sparse opcodes are corrupted.
func sparseToDense(b []byte) (dense []byte, ok bool) {
	dense = make([]byte, DenseSize)
	copy(dense, b[:HdrSize])
	dense[encOffset] = encDense
	regs := dense[HdrSize:]
	if !sparseEach(b[HdrSize:], func(i int, val uint8) { denseSetReg(regs, i, val) }) {
		return nil, false
	}
	return dense, true
}

// Merge raises max[i] to each register of the HLL b (already checked with
// Valid); it reports false if b's sparse opcodes are corrupted.
func (max *Registers) Merge(b []byte) bool {
	if b[encOffset] == encDense {
		regs := b[HdrSize:]
		for i := range max {
			if v := denseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	return sparseEach(b[HdrSize:], func(i int, val uint8) {
		if val > max[i] {
			max[i] = val
		}
	})
}

// sparseSet raises register index to count in the sparse HLL *p, in
// place: it splits the opcode covering the register, merges equal adjacent
// VAL opcodes around it, and converts the HLL to dense when count does not
// fit a VAL opcode or the string would outgrow maxBytes
// (hll-sparse-max-bytes). It returns 1 if the register changed, 0 if not,
// -1 if the opcodes are corrupted. The result is byte for byte what Redis
// produces, so that the same PFADDs give the same string.
func sparseSet(p *[]byte, index int, count uint8, maxBytes int64) int {
	if count > sparseValMax {
		return promote(p, index, count)
	}
	b := *p
	// Find the opcode covering index: it starts at register first, spans
	// span registers and takes size bytes at pos; prev is the opcode before.
	pos, prev, first, span, size := HdrSize, -1, 0, 0, 0
	for pos < len(b) {
		span, _, size = sparseOp(b, pos)
		if index <= first+span-1 {
			break
		}
		prev = pos
		pos += size
		first += span
	}
	if span == 0 || pos >= len(b) {
		return -1
	}
	op := b[pos]
	isVal := sparseIsVal(op)
	switch {
	case isVal && sparseVal(op) >= count:
		return 0
	case isVal && span == 1, sparseIsZero(op) && span == 1:
		b[pos] = sparseValOp(count, 1) // a one-register opcode: rewrite it
	default:
		// Split the opcode into up to three: the registers before index,
		// index itself, the registers after.
		var seqBuf [5]byte
		seq := seqBuf[:0]
		last := first + span - 1
		if isVal {
			cur := sparseVal(op)
			if index != first {
				seq = append(seq, sparseValOp(cur, index-first))
			}
			seq = append(seq, sparseValOp(count, 1))
			if index != last {
				seq = append(seq, sparseValOp(cur, last-index))
			}
		} else {
			if index != first {
				seq = appendZeros(seq, index-first)
			}
			seq = append(seq, sparseValOp(count, 1))
			if index != last {
				seq = appendZeros(seq, last-index)
			}
		}
		delta := len(seq) - size
		if delta > 0 && int64(len(b)+delta) > maxBytes {
			return promote(p, index, count)
		}
		b = spliceOpcode(b, pos, size, seq)
	}

	// Merge adjacent VAL opcodes of equal value whose runs fit one opcode,
	// looking at up to five opcodes from the one before the change.
	q := prev
	if q < 0 {
		q = HdrSize
	}
	for scan := 5; q < len(b) && scan > 0; scan-- {
		op := b[q]
		if sparseIsXZero(op) {
			q += 2
			continue
		}
		if sparseIsZero(op) {
			q++
			continue
		}
		if q+1 < len(b) && sparseIsVal(b[q+1]) && sparseVal(op) == sparseVal(b[q+1]) {
			if n := sparseValLen(op) + sparseValLen(b[q+1]); n <= sparseValRunMax {
				b[q+1] = sparseValOp(sparseVal(op), n)
				b = append(b[:q], b[q+1:]...)
				continue // try merging the result with its right neighbour
			}
		}
		q++
	}
	InvalidateCache(b)
	*p = b
	return 1
}

// spliceOpcode replaces the size-byte opcode at pos with seq, moving the
// opcodes after it. The new length is always len(b)+len(seq)-size: for an
// XZERO cut short by the end of the string (one byte where two are due)
// that drops seq's last byte, exactly as Redis's in-place update does.
func spliceOpcode(b []byte, pos, size int, seq []byte) []byte {
	newLen := len(b) + len(seq) - size
	rest := min(pos+size, len(b))
	tail := len(b) - rest
	need := max(pos+len(seq)+tail, len(b))
	if cap(b) < need {
		nb := make([]byte, len(b), need+need/4+8)
		copy(nb, b)
		b = nb
	}
	b = b[:need]
	copy(b[pos+len(seq):], b[rest:rest+tail])
	copy(b[pos:], seq)
	return b[:newLen]
}

// promote converts the sparse HLL *p to dense and raises register index.
func promote(p *[]byte, index int, count uint8) int {
	dense, ok := sparseToDense(*p)
	if !ok {
		return -1
	}
	*p = dense
	if denseSet(dense[HdrSize:], index, count) {
		return 1
	}
	return 0
}

// Add adds one element to the HLL *p (already checked with Valid); it
// returns 1 if a register changed, 0 if not, -1 if the HLL is corrupted.
func Add(p *[]byte, ele []byte, maxBytes int64) int {
	index, count := patLen(ele)
	return Set(p, index, count, maxBytes)
}

// Set raises register index of the HLL *p (already checked with Valid) to
// count (hllSet), turning a sparse HLL dense when count does not fit its
// opcodes or it would outgrow maxBytes (hll-sparse-max-bytes). It returns
// 1 if the register changed, 0 if not, -1 if the HLL is corrupted.
func Set(p *[]byte, index int, count uint8, maxBytes int64) int {
	switch (*p)[encOffset] {
	case encDense:
		if denseSet((*p)[HdrSize:], index, count) {
			return 1
		}
		return 0
	case encSparse:
		return sparseSet(p, index, count, maxBytes)
	}
	return -1
}

// ToDense turns the HLL *p (already checked with Valid) dense if it is
// sparse, keeping its header; it reports false, leaving *p as it was, if
// the sparse opcodes are corrupted.
func ToDense(p *[]byte) bool {
	if IsDense(*p) {
		return true
	}
	dense, ok := sparseToDense(*p)
	if !ok {
		return false
	}
	*p = dense
	return true
}

// Count estimates the cardinality of the HLL b (already checked with
// Valid); invalid reports corrupted sparse opcodes.
func Count(b []byte) (card uint64, invalid bool) {
	var histo [64]int32
	if b[encOffset] == encDense {
		denseHisto(b[HdrSize:], &histo)
	} else if sparseHisto(b[HdrSize:], &histo) {
		return 0, true
	}
	return estimate(&histo), false
}

// Registers holds every register of a HyperLogLog one byte each: what
// PFCOUNT of several keys and PFMERGE merge their sources into.
type Registers [NumRegisters]uint8

// Count estimates the cardinality of the registers.
func (regs *Registers) Count() uint64 {
	var histo [64]int32
	for _, v := range regs {
		histo[v&63]++
	}
	return estimate(&histo)
}

// estimate is Ertl's estimator over the register histogram. The
// explicit float64 conversions keep the compiler from fusing multiply-adds,
// so that every platform rounds as Redis's C does and gives its numbers.
func estimate(histo *[64]int32) uint64 {
	const m = float64(NumRegisters)
	z := float64(m * tau((m-float64(histo[qBits+1]))/m))
	for j := qBits; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(histo[0])/m))
	return uint64(llround(alphaInf * m * m / z))
}

// llround rounds half away from zero to an int64; like x86's conversion a
// value out of range (or NaN) gives the minimum int64.
func llround(x float64) int64 {
	r := math.Round(x)
	if math.IsNaN(r) || r >= 1<<63 || r < -(1<<63) {
		return math.MinInt64
	}
	return int64(r)
}

// seriesMaxTerms bounds the series below. For register histograms they
// converge within about 60 terms (the float64 precision); the bound only
// guarantees termination whatever the input.
const seriesMaxTerms = 4096

// sigma is σ(x) from Ertl's paper.
func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for range seriesMaxTerms {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if z == prev {
			break
		}
	}
	return z
}

// tau is τ(x) from Ertl's paper.
func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for range seriesMaxTerms {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if z == prev {
			break
		}
	}
	return z / 3
}

// DecodeSparse renders the opcodes of the sparse HLL b as PFDEBUG DECODE
// does:
// "z:<len>" (ZERO), "Z:<len>" (XZERO), "v:<value>,<len>" (VAL).
func DecodeSparse(b []byte) string {
	data := b[HdrSize:]
	var sb strings.Builder
	for i := 0; i < len(data); {
		run, val, size := sparseOp(data, i)
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		switch {
		case val != 0:
			sb.WriteString("v:")
			sb.WriteString(strconv.Itoa(int(val)))
			sb.WriteByte(',')
		case size == 2:
			sb.WriteString("Z:")
		default:
			sb.WriteString("z:")
		}
		sb.WriteString(strconv.Itoa(run))
		i += size
	}
	return sb.String()
}

// SelfTest checks the register packing and the estimator as Redis's
// PFSELFTEST does: random register values must read back unchanged, and ten
// million distinct elements added to a dense and a sparse HLL must give
// equal estimates within six standard errors. It returns "" or what failed.
func SelfTest(sparseMaxBytes int64) string {
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	regs := dense[HdrSize:]
	var want [NumRegisters]uint8
	for range 1000 {
		for i := range want {
			want[i] = uint8(rand.IntN(RegisterMax + 1))
			denseSetReg(regs, i, want[i])
		}
		for i := range want {
			if v := denseGet(regs, i); v != want[i] {
				return "Register " + strconv.Itoa(i) + " should be " + strconv.Itoa(int(want[i])) +
					" but is " + strconv.Itoa(int(v))
			}
		}
	}

	clear(regs)
	sparse := NewSparse()
	relErr := 1.04 / 128 // 1.04/sqrt(registers)
	seed := rand.Uint64()
	var ele [8]byte
	checkpoint := int64(1)
	for j := int64(1); j <= 10_000_000; j++ {
		v := uint64(j) ^ seed
		for k := range ele {
			ele[k] = byte(v >> (8 * k))
		}
		index, count := patLen(ele[:])
		denseSet(regs, index, count)
		Add(&sparse, ele[:], sparseMaxBytes)
		if j != checkpoint {
			continue
		}
		if j < sparseMaxBytes/2 && sparse[encOffset] != encSparse {
			return "sparse encoding not used"
		}
		dcard, _ := Count(dense)
		if scard, _ := Count(sparse); dcard != scard {
			return "dense/sparse disagree"
		}
		absErr := checkpoint - int64(dcard)
		if absErr < 0 {
			absErr = -absErr
		}
		maxErr := int64(math.Ceil(relErr * 6 * float64(checkpoint)))
		if j == 10 {
			maxErr = 1 // collisions make small cardinalities noisy
		}
		if absErr > maxErr {
			return "Too big error. card:" + strconv.FormatInt(checkpoint, 10) +
				" abserr:" + strconv.FormatInt(absErr, 10)
		}
		checkpoint *= 10
	}
	return ""
}
