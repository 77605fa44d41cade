package node

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Whether a script uses what redis.call returns.
//
// Most scripts call commands as statements (redis.call('SET', k, v)) and
// drop the reply. Converting it anyway costs a Lua table with its maps for
// a status reply ({ok='OK'}: about 9 allocations) and a string or number
// for others, the largest part of a call after the command itself. Lua
// knows how many results the caller takes: gopher-lua keeps it in the
// call frame of the running Go function (callFrame.NRet, 0 for a
// statement), which its API does not expose. callerTakesNoResults reads
// it there, at field offsets found by reflection once and checked against
// the field names and kinds, so that a gopher-lua whose frames differ
// only turns the shortcut off (TestCallerTakesNoResults fails then).

// luaFrameLayout locates LState.currentFrame and callFrame.NRet.
type luaFrameLayout struct {
	ok          bool
	frame, nret uintptr // field offsets
}

// luaFrame is gopher-lua's layout, read once.
var luaFrame = findLuaFrameLayout()

func findLuaFrameLayout() luaFrameLayout {
	cur, ok := reflect.TypeFor[lua.LState]().FieldByName("currentFrame")
	if !ok || cur.Type.Kind() != reflect.Pointer || cur.Type.Elem().Kind() != reflect.Struct {
		return luaFrameLayout{}
	}
	nret, ok := cur.Type.Elem().FieldByName("NRet")
	if !ok || nret.Type.Kind() != reflect.Int {
		return luaFrameLayout{}
	}
	return luaFrameLayout{ok: true, frame: cur.Offset, nret: nret.Offset}
}

// callerTakesNoResults reports whether the code that called the running Go
// function takes none of its results (a call made as a statement): then
// nothing can see them, and the function may return none.
func callerTakesNoResults(L *lua.LState) bool {
	if !luaFrame.ok {
		return false
	}
	frame := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), luaFrame.frame))
	return frame != nil && *(*int)(unsafe.Add(frame, luaFrame.nret)) == 0
}
