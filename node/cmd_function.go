package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/rdb"
	lua "github.com/yuin/gopher-lua"
)

// Redis 7.0 functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/
// KILL/HELP and FCALL/FCALL_RO (functions.c, function_lua.c).
//
// Libraries live in their own Lua state, created on first use, separate
// from EVAL's. Every library's code runs with the same environment table
// (a read-only proxy) whose __index is switched, as Redis switches its
// globals' metatable: while FUNCTION LOAD runs the library's top level it
// sees only the load API (redis.register_function, redis.log and the
// version), afterwards — when its functions are called — the whole API.
// LOAD, DELETE, FLUSH and RESTORE close the execution gate (they use the
// Lua state or replace functions a running FCALL may use); LIST and STATS
// read the library table under its mutex.

// functionLoadTimeout bounds a library's top-level code (LOAD_TIMEOUT_MS).
const functionLoadTimeout = 500 * time.Millisecond

// functionLib is one loaded library.
type functionLib struct {
	name  string
	code  []byte // the whole payload, shebang included (FUNCTION LIST WITHCODE, DUMP)
	funcs []*functionInfo
}

// functionInfo is one registered function.
type functionInfo struct {
	name  string
	desc  *string
	flags scriptFlags
	fn    *lua.LFunction
	lib   *functionLib
	roams atomic.Bool // it reached beyond its declared keys (node/script_locked.go)
}

// functionEngine is the server's function libraries.
type functionEngine struct {
	mu    sync.Mutex // guards libs and funcs
	libs  map[string]*functionLib
	funcs map[string]*functionInfo // by lower-case name

	// Owned by the gate's owner.
	env     *luaEnv
	envMT   *lua.LTable // the environment's metatable: __index flips between load API and globals
	loadAPI *lua.LTable
	loading *functionLib // the library whose top level is running (register_function)
}

// scriptingHandlers: the scripting group (EVAL and SCRIPT are registered
// from node/script.go).
func scriptingHandlers() map[string]HandlerFunc {
	h := map[string]HandlerFunc{
		"function|flush":   cmdFunctionFlush,
		"function|load":    cmdFunctionLoad,
		"function|delete":  cmdFunctionDelete,
		"function|list":    cmdFunctionList,
		"function|dump":    cmdFunctionDump,
		"function|restore": cmdFunctionRestore,
		"function|stats":   cmdFunctionStats,
		"function|kill":    func(c *Client, args [][]byte) { c.killScript(false) },
		"function|help":    cmdFunctionHelp,
		"fcall":            func(c *Client, args [][]byte) { c.fcall(args, false) },
		"fcall_ro":         func(c *Client, args [][]byte) { c.fcall(args, true) },
	}
	for name, fn := range scriptHandlers() {
		h[name] = fn
	}
	return h
}

// ensureEnv creates the functions' Lua state (gate held).
func (fe *functionEngine) ensureEnv(s *Server) *luaEnv {
	if fe.env != nil {
		return fe.env
	}
	env := s.tx.scripts.newEnv(s)
	L := env.L
	fe.envMT = L.GetMetatable(env.proxy).(*lua.LTable)
	missing := func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}
	errMT := L.NewTable()
	errMT.RawSetString("__index", L.NewFunction(missing))
	redis := L.NewTable()
	redis.RawSetString("register_function", L.NewFunction(fe.registerFunction))
	api := env.globals.RawGetString("redis").(*lua.LTable)
	real := L.GetMetatable(api).(*lua.LTable).RawGetString("__index").(*lua.LTable)
	for _, name := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
		redis.RawSetString(name, real.RawGetString(name))
	}
	L.SetMetatable(redis, errMT)
	loadAPI := L.NewTable()
	loadAPI.RawSetString("redis", env.readonlyProxy(redis))
	L.SetMetatable(loadAPI, errMT)
	fe.loadAPI = loadAPI
	env.protected[loadAPI] = nil
	env.protected[errMT] = nil
	fe.env = env
	return env
}

// registerFunction is redis.register_function, valid only while a
// library's top level runs.
func (fe *functionEngine) registerFunction(L *lua.LState) int {
	lib := fe.loading
	if lib == nil {
		luaRaise(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	fi := &functionInfo{lib: lib}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			luaRaise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var errMsg string
		named := false
		forEachPair(t, func(k, v lua.LValue) bool {
			ks, ok := k.(lua.LString)
			if !ok {
				errMsg = "named argument key given to redis.register_function is not a string"
				return false
			}
			switch strings.ToLower(string(ks)) {
			case "function_name":
				s, ok := luaStringArg(v)
				if !ok {
					errMsg = "function_name argument given to redis.register_function must be a string"
					return false
				}
				fi.name, named = s, true
			case "description":
				s, ok := luaStringArg(v)
				if !ok {
					errMsg = "description argument given to redis.register_function must be a string"
					return false
				}
				fi.desc = &s
			case "callback":
				fn, ok := v.(*lua.LFunction)
				if !ok {
					errMsg = "callback argument given to redis.register_function must be a function"
					return false
				}
				fi.fn = fn
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					errMsg = "flags argument to redis.register_function must be a table representing function flags"
					return false
				}
				for i := 1; ; i++ {
					f := ft.RawGetInt(i)
					if f == lua.LNil {
						break
					}
					fs, ok := luaStringArg(f)
					known := false
					for _, d := range scriptFlagNames {
						if ok && strings.EqualFold(d.name, fs) {
							fi.flags |= d.flag
							known = true
						}
					}
					if !known {
						errMsg = "unknown flag given"
						return false
					}
				}
			default:
				errMsg = "unknown argument given to redis.register_function"
				return false
			}
			return true
		})
		if errMsg != "" {
			luaRaise(L, errMsg)
		}
		if !named {
			luaRaise(L, "redis.register_function must get a function name argument")
		}
		if fi.fn == nil {
			luaRaise(L, "redis.register_function must get a callback argument")
		}
	case 2:
		name, ok := luaStringArg(L.Get(1))
		if !ok {
			luaRaise(L, "first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			luaRaise(L, "second argument to redis.register_function must be a function")
		}
		fi.name, fi.fn = name, fn
	default:
		luaRaise(L, "wrong number of arguments to redis.register_function")
	}
	if !validFunctionName(fi.name) {
		luaRaise(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	for _, f := range lib.funcs {
		if strings.EqualFold(f.name, fi.name) {
			luaRaise(L, "Function already exists in the library")
		}
	}
	lib.funcs = append(lib.funcs, fi)
	return 0
}

// forEachPair walks t in next() order until fn returns false.
func forEachPair(t *lua.LTable, fn func(k, v lua.LValue) bool) {
	k, v := t.Next(lua.LNil)
	for k != lua.LNil {
		if !fn(k, v) {
			return
		}
		k, v = t.Next(k)
	}
}

// luaStringArg is lua_isstring + tostring: strings and numbers.
func luaStringArg(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		return x.String(), true
	}
	return "", false
}

// validFunctionName: [a-zA-Z0-9_]+.
func validFunctionName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_') {
			return false
		}
	}
	return true
}

// parseLibraryMeta reads "#!<engine> name=<name>" (functionExtractLibMetaData);
// it returns the library name and the code after the shebang (its newline
// kept, so line numbers stay right).
func parseLibraryMeta(code []byte) (name string, body []byte, errMsg string) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return "", nil, "ERR Missing library metadata"
	}
	end := bytes.IndexByte(code, '\n')
	if end < 0 {
		return "", nil, "ERR Invalid library metadata"
	}
	parts, ok := splitArgs(string(code[:end]))
	if !ok || len(parts) == 0 {
		return "", nil, "ERR Invalid library metadata"
	}
	engine := parts[0][2:]
	named := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if named {
				return "", nil, "ERR Invalid metadata value, name argument was given multiple times"
			}
			name, named = p[5:], true
			continue
		}
		return "", nil, "ERR Invalid metadata value given: " + p
	}
	if !named {
		return "", nil, "ERR Library name was not given"
	}
	if !validFunctionName(name) {
		return "", nil, "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	if !strings.EqualFold(engine, "lua") {
		return "", nil, "ERR Engine '" + engine + "' not found"
	}
	return name, code[end:], ""
}

// compileLibrary runs a library's top level in the functions' state and
// returns the library with its registered functions (gate held).
func (fe *functionEngine) compileLibrary(s *Server, code []byte) (*functionLib, string) {
	name, body, errMsg := parseLibraryMeta(code)
	if errMsg != "" {
		return nil, errMsg
	}
	proto, err := compileLua(body, "user_function")
	if err != nil {
		msg := luaCompileError(err)
		msg = strings.Replace(msg, luaChunkName+":", "user_function:", 1)
		return nil, "ERR Error compiling function: " + msg
	}
	env := fe.ensureEnv(s)
	L := env.L
	lib := &functionLib{name: name, code: bytes.Clone(code)}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = env.proxy
	fe.envMT.RawSetString("__index", fe.loadAPI)
	fe.loading = lib
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	L.SetContext(ctx)
	top := L.GetTop()
	L.Push(fn)
	err = L.PCall(0, 0, nil)
	L.RemoveContext()
	timedOut := ctx.Err() != nil
	cancel()
	L.SetTop(top)
	fe.loading = nil
	fe.envMT.RawSetString("__index", env.globals)
	if err != nil {
		msg := "ERR " + err.Error()
		if ae, ok := err.(*lua.ApiError); ok {
			switch o := ae.Object.(type) {
			case *lua.LTable:
				if e, ok := o.RawGetString("err").(lua.LString); ok {
					msg = string(e)
				}
			case lua.LString:
				msg = "ERR " + string(o)
			}
		}
		if timedOut {
			msg = "ERR FUNCTION LOAD timeout"
		}
		return nil, "ERR Error registering functions: " + msg
	}
	if len(lib.funcs) == 0 {
		return nil, "ERR No functions registered"
	}
	return lib, ""
}

// install adds libs to the current set (replace: a library of the same name
// is replaced; otherwise it is an error) and checks that no function name
// is taken by another library. All or nothing.
func (fe *functionEngine) install(libs []*functionLib, replace, flush bool) string {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	next := map[string]*functionLib{}
	if !flush {
		for n, l := range fe.libs {
			next[n] = l
		}
	}
	for _, l := range libs {
		if _, ok := next[l.name]; ok && !replace {
			return "ERR Library '" + l.name + "' already exists"
		}
		next[l.name] = l
	}
	funcs := map[string]*functionInfo{}
	names := make([]string, 0, len(next))
	for n := range next {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, f := range next[n].funcs {
			key := strings.ToLower(f.name) // function names are case-insensitive
			if _, ok := funcs[key]; ok {
				return "ERR Function " + f.name + " already exists"
			}
			funcs[key] = f
		}
	}
	fe.libs, fe.funcs = next, funcs
	return ""
}

// FUNCTION LOAD [REPLACE] code
func cmdFunctionLoad(c *Client, args [][]byte) {
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if !command.EqualFoldASCII(args[i], "replace") {
			c.Error("ERR Unknown option given: " + string(args[i]))
			return
		}
		replace = true
	}
	if i >= len(args) {
		c.Error("ERR Function code is missing")
		return
	}
	code := args[i]
	fe := &c.srv.tx.functions
	release := c.closeGate()
	defer release()
	name, _, errMsg := parseLibraryMeta(code)
	if errMsg == "" && !replace {
		fe.mu.Lock()
		_, exists := fe.libs[name]
		fe.mu.Unlock()
		if exists {
			errMsg = "ERR Library '" + name + "' already exists"
		}
	}
	if errMsg != "" {
		c.Error(errMsg)
		return
	}
	lib, errMsg := fe.compileLibrary(c.srv, code)
	if errMsg == "" {
		errMsg = fe.install([]*functionLib{lib}, replace, false)
	}
	if errMsg != "" {
		c.Error(errMsg)
		return
	}
	c.BulkString(lib.name)
}

// FUNCTION DELETE library
func cmdFunctionDelete(c *Client, args [][]byte) {
	fe := &c.srv.tx.functions
	release := c.closeGate()
	defer release()
	fe.mu.Lock()
	lib := fe.libs[string(args[2])]
	if lib != nil {
		delete(fe.libs, lib.name)
		for _, f := range lib.funcs {
			delete(fe.funcs, strings.ToLower(f.name))
		}
	}
	fe.mu.Unlock()
	if lib == nil {
		c.Error("ERR Library not found")
		return
	}
	c.OK()
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 3 && !command.EqualFoldASCII(args[2], "async") && !command.EqualFoldASCII(args[2], "sync") {
		c.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	fe := &c.srv.tx.functions
	release := c.closeGate()
	defer release()
	fe.mu.Lock()
	fe.libs, fe.funcs = nil, nil
	fe.mu.Unlock()
	if fe.env != nil {
		fe.env.L.Close()
		fe.env = nil
	}
	c.OK()
}

// sortedLibs returns the libraries by name.
func (fe *functionEngine) sortedLibs() []*functionLib {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	out := make([]*functionLib, 0, len(fe.libs))
	for _, l := range fe.libs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *functionLib) int { return strings.Compare(a.name, b.name) })
	return out
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
func cmdFunctionList(c *Client, args [][]byte) {
	withCode := false
	var pattern []byte
	hasPattern := false
	for i := 2; i < len(args); i++ {
		switch {
		case !withCode && command.EqualFoldASCII(args[i], "withcode"):
			withCode = true
		case !hasPattern && command.EqualFoldASCII(args[i], "libraryname"):
			if i >= len(args)-1 {
				c.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern, hasPattern = args[i], true
		default:
			c.Error("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	var libs []*functionLib
	for _, l := range c.srv.tx.functions.sortedLibs() {
		// nocase: Redis matches library names without case (functions.c).
		if hasPattern && !glob.Match(string(pattern), l.name, true) {
			continue
		}
		libs = append(libs, l)
	}
	c.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.Map(n)
		c.BulkString("library_name")
		c.BulkString(l.name)
		c.BulkString("engine")
		c.BulkString("LUA")
		c.BulkString("functions")
		c.Array(len(l.funcs))
		for _, f := range l.funcs {
			c.Map(3)
			c.BulkString("name")
			c.BulkString(f.name)
			c.BulkString("description")
			if f.desc != nil {
				c.BulkString(*f.desc)
			} else {
				c.Null()
			}
			c.BulkString("flags")
			var flags []string
			for _, d := range scriptFlagNames {
				if f.flags&d.flag != 0 {
					flags = append(flags, d.name)
				}
			}
			c.Set(len(flags))
			for _, fl := range flags {
				c.Status(fl)
			}
		}
		if withCode {
			c.BulkString("library_code")
			c.Bulk(l.code)
		}
	}
}

// rdbOpcodeFunction2 precedes each library in an RDB file and a FUNCTION
// DUMP payload; rdbOpcodeFunction is 7.0-rc's pre-GA format.
const (
	rdbOpcodeFunction2 = 245
	rdbOpcodeFunction  = 246
)

// FUNCTION DUMP: every library as RDB_OPCODE_FUNCTION2 + its code as an RDB
// string, then the RDB version and the CRC64, as a DUMP payload.
func cmdFunctionDump(c *Client, args [][]byte) {
	var p []byte
	for _, l := range c.srv.tx.functions.sortedLibs() {
		p = append(p, rdbOpcodeFunction2)
		p = appendRDBString(p, l.code)
	}
	p = binary.LittleEndian.AppendUint16(p, rdb.Version)
	p = binary.LittleEndian.AppendUint64(p, rdb.CRC64(p))
	c.Bulk(p)
}

// appendRDBString writes a plain (uncompressed) RDB string.
func appendRDBString(dst, s []byte) []byte {
	n := uint64(len(s))
	switch {
	case n < 1<<6:
		dst = append(dst, byte(n))
	case n < 1<<14:
		dst = append(dst, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		dst = append(dst, 0x80)
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	default:
		dst = append(dst, 0x81)
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	return append(dst, s...)
}

// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.Error("ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.")
		return
	}
	flush, replace := false, false
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "append":
		case "replace":
			replace = true
		case "flush":
			flush = true
		default:
			c.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	data := args[2]
	if rdb.VerifyPayload(data) != nil {
		c.Error("ERR DUMP payload version or checksum are wrong")
		return
	}
	body := data[:len(data)-10]
	var codes [][]byte
	for len(body) > 0 {
		switch body[0] {
		case rdbOpcodeFunction2:
		case rdbOpcodeFunction:
			c.Error("ERR Pre-GA function format not supported")
			return
		default:
			c.Error("ERR given type is not a function")
			return
		}
		// Decode the code string as a string value (type 0): plain,
		// integer-encoded or LZF-compressed, as Redis writes it.
		o, n, err := rdb.DecodeValue(append([]byte{0}, body[1:]...), rdb.DefaultLimits())
		if err != nil || n < 1 {
			c.Error("ERR failed loading the given functions payload")
			return
		}
		codes = append(codes, o.Str)
		body = body[n:] // n counts the type byte we added, as the opcode
	}
	fe := &c.srv.tx.functions
	release := c.closeGate()
	defer release()
	libs := make([]*functionLib, 0, len(codes))
	seen := map[string]bool{}
	for _, code := range codes {
		lib, errMsg := fe.compileLibrary(c.srv, code)
		if errMsg == "" && seen[lib.name] {
			errMsg = "ERR Library '" + lib.name + "' already exists"
		}
		if errMsg != "" {
			c.Error(errMsg)
			return
		}
		seen[lib.name] = true
		libs = append(libs, lib)
	}
	if flush {
		replace = true
	}
	if errMsg := fe.install(libs, replace, flush); errMsg != "" {
		if strings.HasPrefix(errMsg, "ERR Library '") && !replace {
			name := strings.TrimSuffix(strings.TrimPrefix(errMsg, "ERR Library '"), "' already exists")
			errMsg = "ERR Library " + name + " already exists"
		}
		c.Error(errMsg)
		return
	}
	c.OK()
}

// FUNCTION STATS
func cmdFunctionStats(c *Client, args [][]byte) {
	run := c.srv.tx.scripts.runningVisible()
	if run != nil && run.eval {
		c.Error(busyScriptError(true))
		return
	}
	fe := &c.srv.tx.functions
	fe.mu.Lock()
	nlibs, nfuncs := len(fe.libs), len(fe.funcs)
	fe.mu.Unlock()
	c.Map(2)
	c.BulkString("running_script")
	if run == nil {
		c.Null()
	} else {
		c.Map(3)
		c.BulkString("name")
		c.BulkString(run.name)
		c.BulkString("command")
		c.Array(len(run.argv))
		for _, a := range run.argv {
			c.Bulk(a)
		}
		c.BulkString("duration_ms")
		c.Int(time.Since(run.start).Milliseconds())
	}
	c.BulkString("engines")
	c.Map(1)
	c.BulkString("LUA")
	c.Map(2)
	c.BulkString("libraries_count")
	c.Int(int64(nlibs))
	c.BulkString("functions_count")
	c.Int(int64(nfuncs))
}

func cmdFunctionHelp(c *Client, args [][]byte) {
	c.StatusArray([]string{
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
		"HELP",
		"    Prints this help.",
	})
}

// fcall: FCALL / FCALL_RO function numkeys [key ...] [arg ...]
func (c *Client) fcall(args [][]byte, ro bool) {
	fe := &c.srv.tx.functions
	name := strings.ToLower(string(args[1]))
	fe.mu.Lock()
	fi := fe.funcs[name]
	fe.mu.Unlock()
	if fi == nil {
		c.Error("ERR Function not found")
		return
	}
	numkeys, ok := scriptNumKeys(c, args, "ERR Bad number of keys provided")
	if !ok {
		return
	}
	if !c.prepareScript(fi.flags, ro) {
		return
	}
	run := &scriptRun{name: fi.name, flags: fi.flags, readOnly: ro || fi.flags&sfNoWrites != 0, argv: cloneArgs(args), roams: &fi.roams} // FUNCTION STATS reads it from other connections
	c.runLua(run, func(*scriptEngine) (*luaEnv, *lua.LFunction) {
		fe.mu.Lock()
		cur := fe.funcs[name]
		fe.mu.Unlock()
		if cur == nil || fe.env == nil {
			c.Error("ERR Function not found")
			return nil, nil
		}
		return fe.env, cur.fn
	}, args[3:3+numkeys], args[3+numkeys:])
}
