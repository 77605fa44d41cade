package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/shoal-db/shoal/strconvx"
)

// Version is the RDB version Redis 7.0 writes (rdb.h RDB_VERSION) and
// stamps on DUMP payloads; payloads of a later version are refused.
const Version = 10

// Object type bytes (rdb.h RDB_TYPE_*).
const (
	TypeString           = 0
	TypeList             = 1
	TypeSet              = 2
	TypeZSet             = 3
	TypeHash             = 4
	TypeZSet2            = 5
	TypeModule           = 6
	TypeModule2          = 7
	TypeHashZipmap       = 9
	TypeListZiplist      = 10
	TypeSetIntset        = 11
	TypeZSetZiplist      = 12
	TypeHashZiplist      = 13
	TypeListQuicklist    = 14
	TypeStreamListpacks  = 15
	TypeHashListpack     = 16
	TypeZSetListpack     = 17
	TypeListQuicklist2   = 18
	TypeStreamListpacks2 = 19
)

// Length encodings (rdb.h RDB_6BITLEN ... RDB_ENCVAL) and the special
// string encodings of RDB_ENCVAL.
const (
	len6bit  = 0
	len14bit = 1
	len32bit = 0x80
	len64bit = 0x81
	lenEnc   = 3

	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// Quicklist node containers (quicklist.h QUICKLIST_NODE_CONTAINER_*).
const (
	containerPlain  = 1
	containerPacked = 2
)

// ErrBadData is returned for any payload that does not decode; RESTORE
// answers it with "Bad data format".
var ErrBadData = errors.New("rdb: bad data format")

// ErrShortRead is input that ends inside a value or before the file's
// end: bad data (errors.Is(err, ErrBadData)) that a file loader reports as
// Redis does, as an unexpected end of file.
var ErrShortRead error = shortRead{}

type shortRead struct{}

func (shortRead) Error() string        { return "rdb: unexpected EOF" }
func (shortRead) Is(target error) bool { return target == ErrBadData }

// FileChecksumError is a file whose CRC64 footer does not match its
// content: Expected is the checksum of the content, Got the footer's
// (Redis's "Wrong RDB checksum expected: (%llx) but got (%llx)"). It is an
// ErrChecksum (errors.Is).
type FileChecksumError struct {
	Expected, Got uint64
}

// Error is Redis's two log lines for such a file, in one.
func (e *FileChecksumError) Error() string {
	return "Wrong RDB checksum expected: (" + strconv.FormatUint(e.Expected, 16) + ") but got (" +
		strconv.FormatUint(e.Got, 16) + "). Aborting now. RDB CRC error"
}

func (e *FileChecksumError) Is(target error) bool { return target == ErrChecksum }

// ---------------------------------------------------------------- writing

// appendLen appends an RDB length (rdbSaveLen).
func appendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|len14bit<<6, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, len32bit), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(dst, len64bit), n)
	}
}

// appendIntEncoded appends v in the shortest integer string encoding, if
// one fits (rdbEncodeInteger).
func appendIntEncoded(dst []byte, v int64) ([]byte, bool) {
	switch {
	case v >= math.MinInt8 && v <= math.MaxInt8:
		return append(dst, lenEnc<<6|encInt8, byte(v)), true
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return binary.LittleEndian.AppendUint16(append(dst, lenEnc<<6|encInt16), uint16(v)), true
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return binary.LittleEndian.AppendUint32(append(dst, lenEnc<<6|encInt32), uint32(v)), true
	}
	return dst, false
}

// appendString appends s as rdbSaveRawString does with rdbcompression
// yes (Compressed.str): the file's own fields (aux, keys' names when the
// writer compresses, function code) use it.
func appendString(dst, s []byte) []byte { return Compressed.str(dst, s) }

// str appends s as rdbSaveRawString does: an integer encoding for short
// canonical integers, then (with Compress) LZF for strings over 20 bytes
// that shrink by more than 4 bytes, else the raw bytes.
func (en Encoder) str(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := strconvx.ParseInt(s); ok {
			if out, ok := appendIntEncoded(dst, v); ok {
				return out
			}
		}
	}
	if en.Compress && len(s) > 20 {
		// Compressed in place after room for the longest header, which
		// then moves up against it.
		start := len(dst)
		var hdr [1 + 2*9]byte // encoding byte + two lengths of up to 9 bytes
		out, ok := lzfCompress(append(dst, hdr[:]...), s, len(s)-4)
		if ok {
			c := out[start+len(hdr):]
			h := appendLen(appendLen(append(hdr[:0], lenEnc<<6|encLZF), uint64(len(c))), uint64(len(s)))
			copy(out[start:], h)
			n := copy(out[start+len(h):], c)
			return out[:start+len(h)+n]
		}
		dst = out[:start]
	}
	dst = appendLen(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendBinaryDouble appends a little-endian IEEE 754 double
// (rdbSaveBinaryDoubleValue).
func appendBinaryDouble(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// appendMillis appends a little-endian int64 (rdbSaveMillisecondTime).
func appendMillis(dst []byte, ms int64) []byte {
	return binary.LittleEndian.AppendUint64(dst, uint64(ms))
}

// ---------------------------------------------------------------- reading

// reader decodes a payload. Every length it reads is checked against the
// bytes that remain before anything is allocated for it, and lengths that
// expand (LZF) are bounded by maxAlloc.
type reader struct {
	b        []byte
	pos      int
	maxAlloc int
}

func (r *reader) remaining() int { return len(r.b) - r.pos }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, ErrShortRead
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 {
		return nil, ErrBadData
	}
	if n > r.remaining() {
		return nil, ErrShortRead
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s, nil
}

// lenOrEnc reads an RDB length; isEnc reports a special string encoding,
// whose kind is then in n.
func (r *reader) lenOrEnc() (n uint64, isEnc bool, err error) {
	c, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case len6bit:
		return uint64(c & 0x3f), false, nil
	case len14bit:
		c2, err := r.byte()
		if err != nil {
			return 0, false, err
		}
		return uint64(c&0x3f)<<8 | uint64(c2), false, nil
	case lenEnc:
		return uint64(c & 0x3f), true, nil
	}
	switch c {
	case len32bit:
		b, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(b)), false, nil
	case len64bit:
		b, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(b), false, nil
	}
	return 0, false, ErrBadData
}

// length reads a plain RDB length.
func (r *reader) length() (uint64, error) {
	n, isEnc, err := r.lenOrEnc()
	if err != nil {
		return 0, err
	}
	if isEnc {
		return 0, ErrBadData
	}
	return n, nil
}

// count reads an element count, bounded by the bytes left: every element
// takes at least minBytes of payload, so a count that could not fit is
// corrupt and is refused before anything is sized from it.
func (r *reader) count(minBytes int) (int, error) {
	n, err := r.length()
	if err != nil {
		return 0, err
	}
	if n > uint64(r.remaining()/minBytes) {
		return 0, ErrBadData
	}
	return int(n), nil
}

// str reads an RDB string. The result may alias the payload; callers copy
// what they keep.
func (r *reader) str() ([]byte, error) {
	n, isEnc, err := r.lenOrEnc()
	if err != nil {
		return nil, err
	}
	if !isEnc {
		if n > uint64(r.remaining()) {
			return nil, ErrShortRead
		}
		return r.take(int(n))
	}
	switch n {
	case encInt8:
		b, err := r.take(1)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int8(b[0])), 10), nil
	case encInt16:
		b, err := r.take(2)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b))), 10), nil
	case encInt32:
		b, err := r.take(4)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b))), 10), nil
	case encLZF:
		clen, err := r.length()
		if err != nil {
			return nil, err
		}
		ulen, err := r.length()
		if err != nil {
			return nil, err
		}
		if clen > uint64(r.remaining()) {
			return nil, ErrShortRead
		}
		// Each 3 input bytes expand to at most 264 output bytes: a
		// declared length beyond that is a lie, refused before allocating.
		if ulen == 0 || ulen > clen*(lzfMaxRef+1) || ulen > uint64(r.maxAlloc) {
			return nil, ErrBadData
		}
		c, _ := r.take(int(clen))
		out, err := lzfDecompress(c, int(ulen))
		if err != nil {
			return nil, ErrBadData
		}
		return out, nil
	}
	return nil, ErrBadData
}

// binaryDouble reads rdbSaveBinaryDoubleValue's 8 bytes.
func (r *reader) binaryDouble() (float64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}

// textDouble reads the old string form of a double (rdbLoadDoubleValue):
// a length byte, with 253/254/255 for NaN/+inf/-inf.
func (r *reader) textDouble() (float64, error) {
	n, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, err := r.take(int(n))
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, ErrBadData
	}
	return f, nil
}

func (r *reader) millis() (int64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}
