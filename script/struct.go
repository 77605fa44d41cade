package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// struct: Roberto Ierusalimschy's struct library (pack, unpack, size) as
// bundled by Redis, for a 64-bit little-endian host: b/B 1, h/H 2, i/I 4
// (or In), l/L and T 8, f 4, d 8 bytes; s zero-terminated string; cn
// fixed string (c0: the whole string, or on unpack the length just read);
// x padding; < > = set the byte order and !n the maximum alignment.

const structMaxIntSize = 32

type structState struct {
	little   bool
	maxAlign int
}

func structFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	}
}

// structOpt reads one option at fmt[*i]; it returns the option byte and
// its size (0 for options without a fixed size).
func structOpt(L *lua.LState, fmt string, i *int, st *structState) (byte, int) {
	opt := fmt[*i]
	*i++
	num := func(def int) int {
		if *i >= len(fmt) || fmt[*i] < '0' || fmt[*i] > '9' {
			return def
		}
		n := 0
		for *i < len(fmt) && fmt[*i] >= '0' && fmt[*i] <= '9' {
			n = n*10 + int(fmt[*i]-'0')
			if n > math.MaxInt32/10 {
				L.RaiseError("integral size out of limits")
			}
			*i++
		}
		return n
	}
	switch opt {
	case 'b', 'B':
		return opt, 1
	case 'h', 'H':
		return opt, 2
	case 'l', 'L', 'T':
		return opt, 8
	case 'f':
		return opt, 4
	case 'd':
		return opt, 8
	case 'c':
		return opt, num(1)
	case 'i', 'I':
		n := num(4)
		if n > structMaxIntSize {
			L.RaiseError("integral size %d is larger than limit of %d", n, structMaxIntSize)
		}
		return opt, n
	case 'x':
		return opt, 1
	case 's', ' ':
		return opt, 0
	case '<':
		st.little = true
		return opt, 0
	case '>':
		st.little = false
		return opt, 0
	case '=':
		st.little = true
		return opt, 0
	case '!':
		st.maxAlign = num(8)
		return opt, 0
	}
	L.RaiseError("invalid format option '%c'", opt)
	return 0, 0
}

// structAlign returns the padding before an item of size at pos.
func structAlign(st *structState, opt byte, size, pos int) int {
	if opt == 'c' || opt == 's' || opt == 'x' || size <= 1 {
		return 0
	}
	a := size
	if a > st.maxAlign {
		a = st.maxAlign
	}
	if a <= 1 || a&(a-1) != 0 {
		return 0
	}
	return (a - pos&(a-1)) & (a - 1)
}

func structPutInt(buf []byte, v uint64, size int, little bool) []byte {
	b := make([]byte, size)
	for k := 0; k < size && k < 8; k++ {
		idx := k
		if !little {
			idx = size - 1 - k
		}
		b[idx] = byte(v >> (8 * k))
	}
	if size > 8 && int64(v) < 0 { // sign-extend wide integers
		for k := 8; k < size; k++ {
			idx := k
			if !little {
				idx = size - 1 - k
			}
			b[idx] = 0xff
		}
	}
	return append(buf, b...)
}

func structPack(L *lua.LState) int {
	fmt := L.CheckString(1)
	st := &structState{little: true, maxAlign: 1}
	var buf []byte
	arg := 2
	for i := 0; i < len(fmt); {
		opt, size := structOpt(L, fmt, &i, st)
		for n := structAlign(st, opt, size, len(buf)); n > 0; n-- {
			buf = append(buf, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			f := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if f < 0 {
				v = uint64(int64(f))
			} else {
				v = uint64(f)
			}
			buf = structPutInt(buf, v, size, st.little)
		case 'x':
			buf = append(buf, 0)
		case 'f':
			bits := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if st.little {
				buf = binary.LittleEndian.AppendUint32(buf, bits)
			} else {
				buf = binary.BigEndian.AppendUint32(buf, bits)
			}
		case 'd':
			bits := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if st.little {
				buf = binary.LittleEndian.AppendUint64(buf, bits)
			} else {
				buf = binary.BigEndian.AppendUint64(buf, bits)
			}
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			l := len(s)
			if opt == 'c' && size != 0 {
				if l < size {
					L.ArgError(arg-1, "string too short")
				}
				l = size
			}
			buf = append(buf, s[:l]...)
			if opt == 's' {
				buf = append(buf, 0)
			}
		}
	}
	L.Push(lua.LString(buf))
	return 1
}

func structGetInt(b []byte, little, signed bool) lua.LValue {
	size := len(b)
	var v uint64
	for k := 0; k < size && k < 8; k++ {
		idx := k
		if !little {
			idx = size - 1 - k
		}
		v |= uint64(b[idx]) << (8 * k)
	}
	if signed && size < 8 {
		shift := uint(64 - 8*size)
		return lua.LNumber(float64(int64(v<<shift) >> shift))
	}
	if signed {
		return lua.LNumber(float64(int64(v)))
	}
	return lua.LNumber(float64(v))
}

func structUnpack(L *lua.LState) int {
	fmt := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset out of bounds")
	}
	st := &structState{little: true, maxAlign: 1}
	n := 0
	need := func(size int) {
		if pos+size > len(data) || pos+size < pos {
			L.ArgError(2, "data string too short")
		}
	}
	for i := 0; i < len(fmt); {
		opt, size := structOpt(L, fmt, &i, st)
		pos += structAlign(st, opt, size, pos)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			need(size)
			signed := opt == 'b' || opt == 'h' || opt == 'l' || opt == 'i'
			L.Push(structGetInt([]byte(data[pos:pos+size]), st.little, signed))
			n++
		case 'x':
		case 'f':
			need(4)
			var bits uint32
			if st.little {
				bits = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				bits = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			L.Push(lua.LNumber(math.Float32frombits(bits)))
			n++
		case 'd':
			need(8)
			var bits uint64
			if st.little {
				bits = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				bits = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			L.Push(lua.LNumber(math.Float64frombits(bits)))
			n++
		case 'c':
			if size == 0 {
				if n == 0 || L.Get(-1).Type() != lua.LTNumber {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(L.CheckNumber(-1))
				L.Pop(1)
				n--
			}
			need(size)
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			end := pos
			for end < len(data) && data[end] != 0 {
				end++
			}
			if end >= len(data) {
				L.RaiseError("unfinished string in data")
			}
			L.Push(lua.LString(data[pos:end]))
			n++
			size = end - pos + 1
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	fmt := L.CheckString(1)
	st := &structState{little: true, maxAlign: 1}
	pos := 0
	for i := 0; i < len(fmt); {
		opt, size := structOpt(L, fmt, &i, st)
		if opt == 's' || (opt == 'c' && size == 0) {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		pos += structAlign(st, opt, size, pos) + size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
