package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack: lua-cmsgpack 0.4 as bundled by Redis. Integral numbers use the
// smallest integer encoding, others float 32 when exact, else float 64;
// tables with keys 1..n (no holes) are arrays, others maps; nesting deeper
// than 16 levels (a table containing itself) is encoded as nil.

const msgpackMaxNesting = 16

func msgpackFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"pack": func(L *lua.LState) int {
			n := L.GetTop()
			if n == 0 {
				L.ArgError(0, "MessagePack pack needs input.")
			}
			var buf []byte
			for i := 1; i <= n; i++ {
				buf = msgpackEncode(buf, L.Get(i), 0)
			}
			L.Push(lua.LString(buf))
			return 1
		},
		"unpack": func(L *lua.LState) int {
			return msgpackUnpack(L, 0, 0, true)
		},
		"unpack_one": func(L *lua.LState) int {
			return msgpackUnpack(L, 1, L.OptInt(2, 0), false)
		},
		"unpack_limit": func(L *lua.LState) int {
			return msgpackUnpack(L, L.CheckInt(2), L.OptInt(3, 0), false)
		},
	}
}

func msgpackEncode(buf []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			buf = append(buf, 0xa0|byte(n))
		case n <= 0xff:
			buf = append(buf, 0xd9, byte(n))
		case n <= 0xffff:
			buf = append(buf, 0xda, byte(n>>8), byte(n))
		default:
			buf = append(buf, 0xdb)
			buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		}
		return append(buf, x...)
	case lua.LBool:
		if x {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && !math.IsNaN(f) && f >= -9.223372036854775808e18 && f < 9.223372036854775807e18 && float64(int64(f)) == f {
			return msgpackInt(buf, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			buf = append(buf, 0xca)
			return binary.BigEndian.AppendUint32(buf, math.Float32bits(f32))
		}
		buf = append(buf, 0xcb)
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
	case *lua.LTable:
		if level >= msgpackMaxNesting {
			return append(buf, 0xc0)
		}
		if n, ok := msgpackArrayLen(x); ok {
			switch {
			case n <= 15:
				buf = append(buf, 0x90|byte(n))
			case n <= 0xffff:
				buf = append(buf, 0xdc, byte(n>>8), byte(n))
			default:
				buf = append(buf, 0xdd)
				buf = binary.BigEndian.AppendUint32(buf, uint32(n))
			}
			for i := 1; i <= n; i++ {
				buf = msgpackEncode(buf, x.RawGetInt(i), level+1)
			}
			return buf
		}
		n := 0
		ForEach(x, func(_, _ lua.LValue) { n++ })
		switch {
		case n <= 15:
			buf = append(buf, 0x80|byte(n))
		case n <= 0xffff:
			buf = append(buf, 0xde, byte(n>>8), byte(n))
		default:
			buf = append(buf, 0xdf)
			buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		}
		ForEach(x, func(k, val lua.LValue) {
			buf = msgpackEncode(buf, k, level+1)
			buf = msgpackEncode(buf, val, level+1)
		})
		return buf
	}
	return append(buf, 0xc0)
}

func msgpackInt(buf []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(buf, byte(n))
		case n <= 0xff:
			return append(buf, 0xcc, byte(n))
		case n <= 0xffff:
			return append(buf, 0xcd, byte(n>>8), byte(n))
		case n <= 0xffffffff:
			buf = append(buf, 0xce)
			return binary.BigEndian.AppendUint32(buf, uint32(n))
		}
		buf = append(buf, 0xcf)
		return binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	switch {
	case n >= -32:
		return append(buf, byte(int8(n)))
	case n >= -128:
		return append(buf, 0xd0, byte(int8(n)))
	case n >= -32768:
		return append(buf, 0xd1, byte(n>>8), byte(n))
	case n >= -2147483648:
		buf = append(buf, 0xd2)
		return binary.BigEndian.AppendUint32(buf, uint32(n))
	}
	buf = append(buf, 0xd3)
	return binary.BigEndian.AppendUint64(buf, uint64(n))
}

// msgpackArrayLen reports whether t's keys are exactly 1..n.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	ok := true
	ForEach(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	return count, ok && max == count
}

type msgpackDecoder struct {
	L   *lua.LState
	b   []byte
	pos int
}

func msgpackUnpack(L *lua.LState, limit, offset int, all bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, limit)
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	d := &msgpackDecoder{L: L, b: []byte(s), pos: offset}
	var out []lua.LValue
	for cnt := 0; d.pos < len(d.b) && (all || cnt < limit); cnt++ {
		out = append(out, d.value())
	}
	if !all {
		next := d.pos
		if next == len(d.b) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range out {
		L.Push(v)
	}
	if all {
		return len(out)
	}
	return len(out) + 1
}

func (d *msgpackDecoder) need(n int) []byte {
	if d.pos+n > len(d.b) {
		d.L.RaiseError("Missing bytes in input.")
	}
	p := d.b[d.pos : d.pos+n]
	d.pos += n
	return p
}

func (d *msgpackDecoder) value() lua.LValue {
	t := d.need(1)[0]
	switch {
	case t <= 0x7f:
		return lua.LNumber(t)
	case t >= 0xe0:
		return lua.LNumber(int8(t))
	case t&0xe0 == 0xa0:
		return lua.LString(d.need(int(t & 0x1f)))
	case t&0xf0 == 0x90:
		return d.array(int(t & 0x0f))
	case t&0xf0 == 0x80:
		return d.mapOf(int(t & 0x0f))
	}
	switch t {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		return lua.LNumber(d.need(1)[0])
	case 0xcd:
		return lua.LNumber(binary.BigEndian.Uint16(d.need(2)))
	case 0xce:
		return lua.LNumber(binary.BigEndian.Uint32(d.need(4)))
	case 0xcf:
		return lua.LNumber(float64(binary.BigEndian.Uint64(d.need(8))))
	case 0xd0:
		return lua.LNumber(int8(d.need(1)[0]))
	case 0xd1:
		return lua.LNumber(int16(binary.BigEndian.Uint16(d.need(2))))
	case 0xd2:
		return lua.LNumber(int32(binary.BigEndian.Uint32(d.need(4))))
	case 0xd3:
		return lua.LNumber(float64(int64(binary.BigEndian.Uint64(d.need(8)))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(binary.BigEndian.Uint32(d.need(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64(d.need(8))))
	case 0xd9, 0xc4:
		return lua.LString(d.need(int(d.need(1)[0])))
	case 0xda, 0xc5:
		return lua.LString(d.need(int(binary.BigEndian.Uint16(d.need(2)))))
	case 0xdb, 0xc6:
		return lua.LString(d.need(int(binary.BigEndian.Uint32(d.need(4)))))
	case 0xdc:
		return d.array(int(binary.BigEndian.Uint16(d.need(2))))
	case 0xdd:
		return d.array(int(binary.BigEndian.Uint32(d.need(4))))
	case 0xde:
		return d.mapOf(int(binary.BigEndian.Uint16(d.need(2))))
	case 0xdf:
		return d.mapOf(int(binary.BigEndian.Uint32(d.need(4))))
	}
	d.L.RaiseError("Bad data format in input.")
	return lua.LNil
}

func (d *msgpackDecoder) array(n int) lua.LValue {
	if n > len(d.b)-d.pos { // every element takes at least one byte
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.value())
	}
	return t
}

func (d *msgpackDecoder) mapOf(n int) lua.LValue {
	if 2*n > len(d.b)-d.pos {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(0, n)
	for i := 0; i < n; i++ {
		k := d.value()
		v := d.value()
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
