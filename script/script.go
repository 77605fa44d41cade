// Package script holds the Lua libraries Redis 7.0 gives scripts besides
// Lua 5.1's own — bit (LuaBitOp), struct, cjson and cmsgpack — written for
// gopher-lua, with the behaviour of the C libraries Redis bundles.
//
// The libraries keep no state outside the Lua state they are opened in.
package script

import lua "github.com/yuin/gopher-lua"

// Open registers the bit, struct, cjson and cmsgpack global tables in L.
func Open(L *lua.LState) {
	register := func(name string, funcs map[string]lua.LGFunction, consts map[string]lua.LValue) {
		t := L.NewTable()
		for n, f := range funcs {
			t.RawSetString(n, L.NewFunction(f))
		}
		for n, v := range consts {
			t.RawSetString(n, v)
		}
		L.SetGlobal(name, t)
	}
	register("bit", bitFuncs(), nil)
	register("struct", structFuncs(), nil)
	register("cjson", cjsonFuncs(), map[string]lua.LValue{"null": cjsonNull(L)})
	register("cmsgpack", msgpackFuncs(), nil)
}

// ForEach visits t's pairs in Lua's next() order (array part, then the
// hash part in insertion order), which is deterministic — LTable.ForEach
// walks Go maps in random order.
func ForEach(t *lua.LTable, fn func(k, v lua.LValue)) {
	k, v := t.Next(lua.LNil)
	for k != lua.LNil {
		fn(k, v)
		k, v = t.Next(k)
	}
}
