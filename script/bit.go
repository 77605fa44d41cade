package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// LuaBitOp 1.0 (the "bit" library Redis bundles): 32-bit operations on
// Lua numbers; results are signed 32-bit integers.

func bitFuncs() map[string]lua.LGFunction {
	unary := func(f func(int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			L.Push(lua.LNumber(f(bitArg(L, 1))))
			return 1
		}
	}
	fold := func(f func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			acc := bitArg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				acc = f(acc, bitArg(L, i))
			}
			L.Push(lua.LNumber(acc))
			return 1
		}
	}
	shift := func(f func(x int32, n uint) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			x := bitArg(L, 1)
			n := uint(bitArg(L, 2)) & 31
			L.Push(lua.LNumber(f(x, n)))
			return 1
		}
	}
	return map[string]lua.LGFunction{
		"tobit": unary(func(x int32) int32 { return x }),
		"bnot":  unary(func(x int32) int32 { return ^x }),
		"bswap": unary(func(x int32) int32 {
			u := uint32(x)
			return int32(u>>24 | (u>>8)&0xff00 | (u&0xff00)<<8 | u<<24)
		}),
		"band":    fold(func(a, b int32) int32 { return a & b }),
		"bor":     fold(func(a, b int32) int32 { return a | b }),
		"bxor":    fold(func(a, b int32) int32 { return a ^ b }),
		"lshift":  shift(func(x int32, n uint) int32 { return int32(uint32(x) << n) }),
		"rshift":  shift(func(x int32, n uint) int32 { return int32(uint32(x) >> n) }),
		"arshift": shift(func(x int32, n uint) int32 { return x >> n }),
		"rol": shift(func(x int32, n uint) int32 {
			u := uint32(x)
			return int32(u<<n | u>>((32-n)&31))
		}),
		"ror": shift(func(x int32, n uint) int32 {
			u := uint32(x)
			return int32(u>>n | u<<((32-n)&31))
		}),
		"tohex": func(L *lua.LState) int {
			x := uint32(bitArg(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = bitArg(L, 2)
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := int(n) - 1; i >= 0; i-- {
				buf[i] = digits[x&15]
				x >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
}

// bitArg normalises argument i as LuaBitOp does: the number is rounded to
// an integer (ties to even, through the 2^52+2^51 addition trick) and its
// low 32 bits are taken.
func bitArg(L *lua.LState, i int) int32 {
	f := float64(L.CheckNumber(i))
	f += 6755399441055744.0
	bits := math.Float64bits(f)
	return int32(uint32(bits))
}
