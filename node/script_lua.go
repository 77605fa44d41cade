package node

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/script"
	"github.com/shoal-db/shoal/strconvx"
	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 environment of scripts and functions (Redis 7.0's
// script_lua.c), on gopher-lua.
//
// Sandbox: only the base (less dofile, loadfile, print, module, require),
// table, string, math and coroutine libraries, plus bit, struct, cjson
// and cmsgpack (package script) and the redis table are reachable. There
// is no os, io, package or debug library, so no file, process or network
// access. Memory is bounded through the VM's call-stack and register
// limits and the proto-max-bulk-len bound on every argument a script
// passes to a command; time through busy-reply-threshold and SCRIPT KILL.
//
// Globals are read-only, as Redis 7.0.15's readonly tables: scripts run
// with an empty proxy table as their environment whose __index is the
// real globals table (which raises "Script attempted to access nonexistent
// global variable" for a missing name) and whose __newindex raises
// "Attempt to modify a readonly table"; the library tables are replaced by
// such proxies too, and setmetatable / rawset / getmetatable refuse or
// shield the protected tables. (An EVAL script with no instruction that
// assigns a global runs with the real globals as its environment, which
// it cannot write: evalFunction.) So nothing a script does survives it in
// the shared state, and scripts cannot break the API for the next one.

// luaChunkName is the chunk name of every script, as Redis's
// "@user_script" (errors read "user_script:LINE: ...").
const luaChunkName = "user_script"

// luaEnv is one Lua state with its protected globals.
type luaEnv struct {
	L         *lua.LState
	globals   *lua.LTable // the real globals (libraries, KEYS, ARGV)
	proxy     *lua.LTable // the environment scripts see as _G
	protected map[*lua.LTable]*lua.LTable
	deep      map[*lua.LTable]*lua.LTable // deepProxy cache
	errFunc   *lua.LFunction              // the pcall error handler
	// evalArrays are the KEYS and ARGV tables of the last EVAL run and
	// evalLens how many elements it was given (setEvalArray).
	evalArrays [2]*lua.LTable
	evalLens   [2]int
}

// maxReusedEvalArray bounds the KEYS or ARGV table kept for the next run.
const maxReusedEvalArray = 64

// setEvalArray sets the global KEYS (i 0) or ARGV (i 1) to vals for an EVAL
// run. Redis gives each run new tables; the last run's table is refilled
// instead when the script left it as given — no field beyond its elements,
// no metatable — so no script sees a difference (nothing else can refer to
// it: the globals are read-only and every EVAL run starts afresh), and the
// run costs no table and no write to the globals.
func (env *luaEnv) setEvalArray(i int, name string, vals [][]byte) {
	t, old := env.evalArrays[i], env.evalLens[i]
	if t == nil || len(vals) > maxReusedEvalArray || !plainArray(t, old) {
		t, old = env.L.CreateTable(len(vals), 0), 0
		env.globals.RawSetString(name, t)
	}
	for j, v := range vals {
		if j < old {
			// The same value as last run (a key or argument a client
			// sends each time) is kept: a Lua string is a value, and a
			// new one costs two allocations.
			if cur, ok := t.RawGetInt(j + 1).(lua.LString); ok && string(cur) == string(v) {
				continue
			}
		}
		t.RawSetInt(j+1, lua.LString(v))
	}
	for j := len(vals) + 1; j <= old; j++ {
		t.RawSetInt(j, lua.LNil)
	}
	env.evalArrays[i], env.evalLens[i] = t, len(vals)
	if len(vals) > maxReusedEvalArray {
		env.evalArrays[i] = nil
	}
}

// plainArray reports whether t holds nothing beyond the elements 1..n (nil
// or not) and has no metatable.
func plainArray(t *lua.LTable, n int) bool {
	if t.Metatable != lua.LNil {
		return false
	}
	from := lua.LValue(lua.LNil) // Next(0) would skip the first hashed key
	if n > 0 {
		from = lua.LNumber(n)
	}
	k, _ := t.Next(from)
	return k == lua.LNil
}

// newLuaEnv builds a sandboxed state. api registers the redis table's
// functions (they differ between EVAL and FUNCTION).
func newLuaEnv(api map[string]lua.LGFunction, consts map[string]lua.LValue) *luaEnv {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   1000,
		RegistrySize:    1024 * 20,
		RegistryMaxSize: 1024 * 1024,
	})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	script.Open(L) // bit, struct, cjson, cmsgpack
	env := &luaEnv{L: L, globals: L.G.Global, protected: map[*lua.LTable]*lua.LTable{}, deep: map[*lua.LTable]*lua.LTable{}}
	g := env.globals
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "_printregs", "channel"} {
		g.RawSetString(name, lua.LNil)
	}
	// No string.dump: binary chunks cannot be produced (nor loaded).
	// string.rep is bounded: one call must not allocate more than a bulk
	// string may hold (a huge allocation would end the process).
	if st, ok := g.RawGetString("string").(*lua.LTable); ok {
		st.RawSetString("dump", lua.LNil)
		st.RawSetString("rep", L.NewFunction(luaStringRep))
	}
	// table.insert writes with rawset: on a protected table (_G, redis, a
	// library, a metatable) it is refused, as by Redis's readonly tables,
	// or a script could leave elements in the shared API. (table.remove
	// and table.sort write only elements that are there, and a protected
	// table has none: as in Redis, they do nothing on one.)
	if tt, ok := g.RawGetString("table").(*lua.LTable); ok {
		if orig, ok := tt.RawGetString("insert").(*lua.LFunction); ok && orig.IsG {
			insert := orig.GFunction
			tt.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
				if t, ok := L.Get(1).(*lua.LTable); ok && env.isProtected(t) {
					luaReadonlyError(L)
				}
				return insert(L)
			}))
		}
	}
	redis := L.NewTable()
	for name, fn := range api {
		redis.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range consts {
		redis.RawSetString(name, v)
	}
	redis.RawSetString("sha1hex", L.NewFunction(luaSha1hex))
	redis.RawSetString("REDIS_VERSION", lua.LString(Version))
	redis.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum()))
	for name, lvl := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		redis.RawSetString(name, lua.LNumber(lvl))
	}
	g.RawSetString("redis", redis)

	// pcall returns the message of a Redis error table, as Redis 7.0.
	g.RawSetString("pcall", L.NewFunction(luaPcall))
	g.RawSetString("setmetatable", L.NewFunction(env.setmetatable))
	g.RawSetString("rawset", L.NewFunction(env.rawset))
	g.RawSetString("getmetatable", L.NewFunction(env.getmetatable))
	g.RawSetString("setfenv", L.NewFunction(env.setfenv))
	g.RawSetString("getfenv", L.NewFunction(env.getfenv))
	// Chunks compiled at run time get the scripts' environment (gopher-lua
	// gives them the real globals, where they could create globals).
	for _, name := range []string{"loadstring", "load"} {
		orig, _ := g.RawGetString(name).(*lua.LFunction)
		if orig == nil {
			continue
		}
		g.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			top := L.GetTop()
			L.Push(orig)
			for i := 1; i <= top; i++ {
				L.Push(L.Get(i))
			}
			L.Call(top, lua.MultRet)
			n := L.GetTop() - top
			if fn, ok := L.Get(top + 1).(*lua.LFunction); ok && n > 0 {
				fn.Env = env.proxy
			}
			return n
		}))
	}
	g.RawSetString("tostring", L.NewFunction(luaTostring))
	g.RawSetString("collectgarbage", L.NewFunction(luaCollectGarbage))
	g.RawSetString("gcinfo", L.NewFunction(luaGcinfo))

	// Protect: library tables become read-only proxies, globals are read
	// through the proxy environment.
	for _, name := range []string{"redis", "string", "math", "table", "coroutine", "bit", "struct", "cjson", "cmsgpack"} {
		if t, ok := g.RawGetString(name).(*lua.LTable); ok {
			g.RawSetString(name, env.readonlyProxy(t))
		}
	}
	missing := L.CreateTable(0, 2) // small: read on every global lookup that misses
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	missing.RawSetString("__newindex", L.NewFunction(luaReadonlyError)) // defence in depth
	L.SetMetatable(g, missing)
	env.protected[missing] = nil
	env.proxy = env.readonlyProxy(g)
	// The string metatable (whose __index is the string library) is
	// shielded like the library tables.
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		env.protected[smt] = nil
	}
	g.RawSetString("_G", env.proxy)
	env.errFunc = L.NewFunction(luaErrorHandler)
	return env
}

// readonlyProxy returns an empty table reading through to t and refusing
// writes (cached: one proxy per table).
func (env *luaEnv) readonlyProxy(t *lua.LTable) *lua.LTable {
	if p, ok := env.protected[t]; ok && p != nil {
		return p
	}
	L := env.L
	p, mt := proxyTables(L)
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(luaReadonlyError))
	env.protected[t] = p
	env.protected[p] = p
	env.protected[mt] = nil
	return p
}

// proxyTables returns an empty proxy table and its metatable, to hold
// __index and __newindex. Both are sized for what they hold: every global
// read and every library field read (redis.call) looks in a proxy and in
// its metatable, and a table made by L.NewTable holds its fields in a map
// sized for 32 (a table of groups behind a directory), where a map of a
// few fields is one group searched in place (and an empty table has no
// map): about 100 fewer instructions per global read.
func proxyTables(L *lua.LState) (proxy, mt *lua.LTable) {
	proxy = L.CreateTable(0, 0)
	mt = L.CreateTable(0, 2)
	L.SetMetatable(proxy, mt)
	return proxy, mt
}

// luaTostring is tostring with Lua 5.1's number format (%.14g); gopher-lua
// prints the shortest exact representation.
func luaTostring(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(script.FormatG(float64(n), 14)))
		return 1
	}
	if mt, ok := L.GetMetatable(v).(*lua.LTable); ok {
		if f := mt.RawGetString("__tostring"); f != lua.LNil {
			L.Push(f)
			L.Push(v)
			L.Call(1, 1)
			return 1
		}
	}
	L.Push(lua.LString(L.ToStringMeta(v).String()))
	return 1
}

// luaCollectGarbage is collectgarbage without the full Go collection
// gopher-lua's runs on every call (a stop-the-world a script could repeat
// in a loop): Lua's memory is the Go heap, collected by Go. "count"
// answers the heap in use, in KB as Lua 5.1.
func luaCollectGarbage(L *lua.LState) int {
	switch L.OptString(1, "collect") {
	case "count":
		L.Push(lua.LNumber(float64(luaHeapBytes()) / 1024))
	default:
		L.Push(lua.LNumber(0))
	}
	return 1
}

func luaGcinfo(L *lua.LState) int {
	L.Push(lua.LNumber(luaHeapBytes() / 1024))
	return 1
}

func luaHeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// luaMaxString bounds the strings string.rep builds (proto-max-bulk-len's
// default).
const luaMaxString = 512 << 20

func luaStringRep(L *lua.LState) int {
	str := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(str) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(str))*int64(n) > luaMaxString {
		L.RaiseError("resulting string too large")
	}
	L.Push(lua.LString(strings.Repeat(str, n)))
	return 1
}

func luaReadonlyError(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

func (env *luaEnv) isProtected(t *lua.LTable) bool {
	_, ok := env.protected[t]
	return ok
}

func (env *luaEnv) setmetatable(L *lua.LState) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && env.isProtected(t) {
		luaReadonlyError(L)
	}
	obj := L.CheckTable(1)
	mt := L.Get(2)
	if cur, ok := L.GetMetatable(obj).(*lua.LTable); ok && cur.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	if mt != lua.LNil {
		if _, ok := mt.(*lua.LTable); !ok {
			L.ArgError(2, "nil or table expected")
		}
	}
	L.SetMetatable(obj, mt)
	L.SetTop(1)
	return 1
}

func (env *luaEnv) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if env.isProtected(t) {
		luaReadonlyError(L)
	}
	t.RawSet(L.CheckAny(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

func (env *luaEnv) getmetatable(L *lua.LState) int {
	mt := L.GetMetatable(L.CheckAny(1))
	t, ok := mt.(*lua.LTable)
	if !ok {
		L.Push(mt)
		return 1
	}
	if field := t.RawGetString("__metatable"); field != lua.LNil {
		L.Push(field)
		return 1
	}
	if env.isProtected(t) {
		L.Push(env.deepProxy(t))
		return 1
	}
	L.Push(t)
	return 1
}

// deepProxy is a read-only view of t whose table values are read-only
// views too: what getmetatable hands out for a protected table, so that
// mt.__index (the real globals) cannot be written through.
func (env *luaEnv) deepProxy(t *lua.LTable) *lua.LTable {
	if p, ok := env.deep[t]; ok {
		return p
	}
	L := env.L
	p, mt := proxyTables(L)
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		v := L.GetTable(t, L.Get(2))
		if vt, ok := v.(*lua.LTable); ok {
			v = env.deepProxy(vt)
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(luaReadonlyError))
	env.deep[t] = p
	env.protected[p] = p
	env.protected[mt] = nil
	return p
}

// setfenv may change a function's environment but not the thread's
// (level 0), which would outlive the script.
func (env *luaEnv) setfenv(L *lua.LState) int {
	if n, ok := L.Get(1).(lua.LNumber); ok && n == 0 {
		luaReadonlyError(L)
	}
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		if n, isNum := L.Get(1).(lua.LNumber); isNum {
			dbg, found := L.GetStack(int(n))
			if !found {
				L.ArgError(1, "invalid level")
			}
			v, _ := L.GetInfo("f", dbg, lua.LNil)
			fn, ok = v.(*lua.LFunction)
		}
	}
	env2 := L.CheckTable(2)
	if !ok || fn.IsG {
		L.RaiseError("'setfenv' cannot change environment of given object")
	}
	fn.Env = env2
	L.Push(fn)
	return 1
}

// getfenv hands out the read-only view of a protected environment (the
// thread's and the library functions' environment is the real globals).
func (env *luaEnv) getfenv(L *lua.LState) int {
	var fn *lua.LFunction
	switch v := L.Get(1).(type) {
	case *lua.LFunction:
		fn = v
	case *lua.LNilType, lua.LNumber:
		level := 1
		if n, ok := v.(lua.LNumber); ok {
			level = int(n)
		}
		if level == 0 {
			L.Push(env.proxy)
			return 1
		}
		dbg, ok := L.GetStack(level)
		if !ok {
			L.ArgError(1, "invalid level")
		}
		f, _ := L.GetInfo("f", dbg, lua.LNil)
		fn, _ = f.(*lua.LFunction)
	default:
		L.ArgError(1, "number or function expected")
	}
	if fn == nil || fn.Env == nil {
		L.Push(env.proxy)
		return 1
	}
	if env.isProtected(fn.Env) {
		L.Push(env.readonlyProxy(fn.Env))
		return 1
	}
	L.Push(fn.Env)
	return 1
}

// luaPcall is Redis 7.0's pcall: when the error is a Redis error table,
// pcall returns its message (compatibility with scripts written for the
// string errors of older versions).
func luaPcall(L *lua.LState) int {
	top := L.GetTop()
	if top < 1 {
		L.ArgError(1, "value expected")
	}
	fn := L.Get(1)
	err := L.PCall(top-1, lua.MultRet, nil)
	if err != nil {
		obj := lua.LValue(lua.LString(err.Error()))
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	_ = fn
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaErrorHandler turns any error into Redis's error table {err, source,
// line}, taking the position from the Lua code that raised it (the
// caller's, when a Go function raised it), as __redis__err__handler.
func luaErrorHandler(L *lua.LState) int {
	e := L.Get(1)
	t, isTable := e.(*lua.LTable)
	if !isTable {
		msg := "nil"
		if s, ok := e.(lua.LString); ok {
			msg = string(s)
		} else if e != lua.LNil {
			msg = e.String()
		}
		t = luaFieldTable(L, "err", lua.LString("ERR "+msg), 3)
	}
	for level := 1; level < 4; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" {
			continue
		}
		t.RawSetString("source", lua.LString("@"+dbg.Source))
		t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		break
	}
	L.Push(t)
	return 1
}

func luaSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("wrong number of arguments")
	}
	sum := sha1.Sum([]byte(L.ToString(1)))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

// redisVersionNum is REDIS_VERSION_NUM: 0x00MMmmpp.
func redisVersionNum() int {
	parts := strings.Split(Version, ".")
	n := 0
	for _, p := range parts {
		v, _ := strconv.Atoi(p)
		n = n<<8 | v
	}
	return n
}

// luaErrorTable returns Redis's error table for msg ("-CODE text" or a
// bare text, which gets the ERR code), as luaPushErrorBuff.
func luaErrorTable(L *lua.LState, msg string) *lua.LTable {
	var code, text string
	if strings.HasPrefix(msg, "-") {
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			code, text = msg[1:i], msg[i+1:]
		} else {
			code, text = "ERR", msg[1:]
		}
	} else {
		code, text = "ERR", msg
	}
	text = strings.TrimRight(text, "\r\n")
	return luaFieldTable(L, "err", lua.LString(code+" "+text), 2)
}

// luaReplyErrorTable is the error table of an error a command replied or
// a call the script's state refused: counted in errorstats already, so the
// script's reply does not count it again.
func luaReplyErrorTable(L *lua.LState, msg string) *lua.LTable {
	t := luaErrorTable(L, msg)
	t.RawSetString("ignore_error_stats_update", lua.LTrue)
	return t
}

// luaFieldTable returns a table holding field name = v, sized for fields
// string fields in all: the tables Redis hands scripts for replies ({ok=},
// {err=}, {double=}...) have one or two. L.NewTable would size each for 32
// array slots and 32 fields, the main cost of converting a command's reply.
func luaFieldTable(L *lua.LState, name string, v lua.LValue, fields int) *lua.LTable {
	t := L.CreateTable(0, fields)
	t.RawSetString(name, v)
	return t
}

// ------------------------------------------------------ RESP → Lua

// respToLua converts one reply produced by a command (trusted, complete
// RESP2 or RESP3) into a Lua value, as Redis's redisProtocolToLuaType; it
// returns the value and the rest of the buffer.
func respToLua(L *lua.LState, b []byte) (lua.LValue, []byte) {
	line, rest := respLine(b)
	switch b[0] {
	case ':':
		n, _ := strconv.ParseInt(string(line[1:]), 10, 64)
		return lua.LNumber(n), rest
	case '$':
		n, _ := strconv.Atoi(string(line[1:]))
		if n < 0 {
			return lua.LFalse, rest
		}
		return lua.LString(rest[:n]), rest[n+2:]
	case '+':
		status := lua.LValue(lua.LString("OK")) // a constant: no allocation
		if string(line[1:]) != "OK" {
			status = lua.LString(line[1:])
		}
		return luaFieldTable(L, "ok", status, 1), rest
	case '-':
		return luaReplyErrorTable(L, string(line)), rest
	case '*', '~', '%', '>', '|':
		n, _ := strconv.Atoi(string(line[1:]))
		if n < 0 {
			return lua.LFalse, rest
		}
		switch b[0] {
		case '%':
			m := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				var k, v lua.LValue
				k, rest = respToLua(L, rest)
				v, rest = respToLua(L, rest)
				m.RawSet(k, v)
			}
			return luaFieldTable(L, "map", m, 1), rest
		case '~':
			s := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				var k lua.LValue
				k, rest = respToLua(L, rest)
				s.RawSet(k, lua.LTrue)
			}
			return luaFieldTable(L, "set", s, 1), rest
		case '|':
			for i := 0; i < 2*n; i++ {
				_, rest = respToLua(L, rest)
			}
			return respToLua(L, rest)
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			var v lua.LValue
			v, rest = respToLua(L, rest)
			t.RawSetInt(i, v)
		}
		return t, rest
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(line[1] == 't'), rest
	case ',':
		f := parseRESPDouble(string(line[1:]))
		return luaFieldTable(L, "double", lua.LNumber(f), 1), rest
	case '(':
		return luaFieldTable(L, "big_number", lua.LString(line[1:]), 1), rest
	case '=':
		n, _ := strconv.Atoi(string(line[1:]))
		body := rest[:n]
		v := luaFieldTable(L, "string", lua.LString(body[4:]), 2)
		v.RawSetString("format", lua.LString(body[:3]))
		return luaFieldTable(L, "verbatim_string", v, 1), rest[n+2:]
	}
	return lua.LNil, rest
}

func parseRESPDouble(s string) float64 {
	switch s {
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	case "nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// respLine splits off the first CRLF-terminated line.
func respLine(b []byte) (line, rest []byte) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:]
		}
	}
	return b, nil
}

// ------------------------------------------------------ Lua → RESP

// luaToReply writes a script's return value to c, as Redis's
// luaReplyToRedisReply; scriptResp is the protocol the script set with
// redis.setresp (booleans depend on it). depth bounds recursion (a table
// that contains itself).
func luaToReply(c *Client, v lua.LValue, scriptResp int, depth int) {
	if depth > 1000 {
		c.Error("ERR reached lua stack limit")
		return
	}
	switch x := v.(type) {
	case lua.LString:
		c.Bulk([]byte(x))
	case lua.LBool:
		if scriptResp == 2 {
			if x {
				c.Out = append(c.Out, ":1\r\n"...)
			} else {
				c.Null()
			}
		} else {
			c.Bool(bool(x))
		}
	case lua.LNumber:
		c.Int(luaNumberToInt(float64(x)))
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			msg := string(e)
			if !strings.HasPrefix(msg, "-") {
				msg = "-" + msg
			}
			if x.RawGetString("ignore_error_stats_update") == lua.LTrue {
				c.errorCountedAlready(msg) // a redis.pcall error returned as is
				return
			}
			c.Error(msg)
			return
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			c.Status(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := x.RawGetString("double").(lua.LNumber); ok {
			c.Double(float64(d))
			return
		}
		if s, ok := x.RawGetString("big_number").(lua.LString); ok {
			c.BigNumber(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if vt, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(lua.LString)
			s, ok2 := vt.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				c.Verbatim(string(s), string(f))
				return
			}
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			var keys, vals []lua.LValue
			script.ForEach(m, func(k, v lua.LValue) {
				keys = append(keys, k)
				vals = append(vals, v)
			})
			c.Map(len(keys))
			for i := range keys {
				luaToReply(c, keys[i], scriptResp, depth+1)
				luaToReply(c, vals[i], scriptResp, depth+1)
			}
			return
		}
		if s, ok := x.RawGetString("set").(*lua.LTable); ok {
			var keys []lua.LValue
			script.ForEach(s, func(k, _ lua.LValue) { keys = append(keys, k) })
			c.Set(len(keys))
			for _, k := range keys {
				luaToReply(c, k, scriptResp, depth+1)
			}
			return
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		c.Array(n)
		for i := 1; i <= n; i++ {
			luaToReply(c, x.RawGetInt(i), scriptResp, depth+1)
		}
	default:
		c.Null()
	}
}

// luaNumberToInt is C's (long long) cast of a double.
func luaNumberToInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= 9.223372036854775807e18, f < -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

// appendLuaArg appends a redis.call argument (a string or a number: the
// caller checked) to buf: strings as they are, numbers with C's %.17g, as
// Redis's snprintf (Lua's own conversion would lose precision; Go's 'g'
// would spell infinity "+Inf" where C writes "inf").
func appendLuaArg(buf []byte, v lua.LValue) []byte {
	switch x := v.(type) {
	case lua.LString:
		return append(buf, x...)
	case lua.LNumber:
		return strconvx.AppendDouble(buf, float64(x))
	}
	return buf
}
