package node

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// TestCallerTakesNoResults: gopher-lua's frame layout is found, and a Go
// function learns that its caller takes no result exactly when the call is
// a statement.
func TestCallerTakesNoResults(t *testing.T) {
	require.True(t, luaFrame.ok, "gopher-lua's LState.currentFrame / callFrame.NRet not found")
	L := lua.NewState()
	defer L.Close()
	var seen []bool
	L.SetGlobal("f", L.NewFunction(func(L *lua.LState) int {
		seen = append(seen, callerTakesNoResults(L))
		L.Push(lua.LNumber(1))
		return 1
	}))
	for _, tc := range []struct {
		chunk string
		none  bool
	}{
		{"f()", true},
		{"do f() end", true},
		{"for i = 1, 1 do f() end", true},
		{"local function g() f() end g()", true},
		{"local a = f()", false},
		{"local a, b = f()", false},
		{"local t = {f()}", false},
		{"local s = 'x' .. f()", false},
		{"return f()", false},
		{"local function g() return f() end local a = g()", false},
		{"local function g() return f() end g()", true}, // a tail call: g's caller takes none
		{"pcall(f)", false},                             // pcall takes them all
		{"local c = coroutine.wrap(f) c()", false},      // the coroutine's resume takes them all
	} {
		seen = seen[:0]
		require.NoError(t, L.DoString(tc.chunk), tc.chunk)
		require.Len(t, seen, 1, tc.chunk)
		require.Equal(t, tc.none, seen[0], tc.chunk)
	}
}

// TestEvalCallAsStatement: redis.call made as a statement still raises the
// command's error, redis.pcall's is dropped, and a used reply is as before.
func TestEvalCallAsStatement(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "+OK\r\n", tc.do("SET", "s", "abc"))
	r := tc.do("EVAL", "redis.call('INCR', KEYS[1]) return 1", "1", "s")
	require.Contains(t, r, "-ERR value is not an integer or out of range script:")
	require.Equal(t, ":1\r\n", tc.do("EVAL", "redis.pcall('INCR', KEYS[1]) return 1", "1", "s"))
	require.Equal(t, ":7\r\n", tc.do("EVAL", "redis.call('SET', KEYS[1], '6') redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1]) + 0", "1", "n"))
	require.Equal(t, "+OK\r\n", tc.do("EVAL", "local r = redis.call('SET', KEYS[1], 'x') return r", "1", "n"))
	require.Equal(t, "*2\r\n+OK\r\n$1\r\nx\r\n", tc.do("EVAL", "return {redis.call('SET', KEYS[1], 'x'), redis.call('GET', KEYS[1])}", "1", "n"))
	require.Contains(t, tc.do("INFO", "errorstats"), "errorstat_ERR:count=2")
}

// TestSetsGlobals: a chunk that may assign a global is found, in nested
// functions too; one that only reads globals is not.
func TestSetsGlobals(t *testing.T) {
	for chunk, want := range map[string]bool{
		"x = 1":                                          true,
		"function g() end":                               true,
		"local function f() y = 2 end":                   true,
		"if false then q = 1 end return 1":               true,
		"local x = 1 return x":                           false,
		"local function f() return KEYS end":             false,
		"return redis.call('GET', KEYS[1])":              false,
		"local t = {} t.x = 1 return t":                  false,
		"local t = {1, 2, 3, 4, 5, 6, 7, 8, 9} return t": false,
	} {
		proto, err := compileLua([]byte(chunk), luaChunkName)
		require.NoError(t, err, chunk)
		require.Equal(t, want, setsGlobals(proto), chunk)
	}
}

// TestEvalGlobalsReadOnly: a script that assigns no global reads the
// globals directly; what it can reach stays read-only, and one that does
// assign is refused when it runs, as before.
func TestEvalGlobalsReadOnly(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	readonly := "Attempt to modify a readonly table"
	require.Equal(t, ":1\r\n", tc.do("EVAL", "if false then q = 1 end return 1", "0"))
	require.Contains(t, tc.do("EVAL", "return x", "0"), "Script attempted to access nonexistent global variable 'x'")
	require.Equal(t, "$4\r\ntrue\r\n", tc.do("EVAL", "return tostring(getfenv(1) == _G and getfenv(0) == _G)", "0"))
	require.Contains(t, tc.do("EVAL", "local t = getfenv(1) t.z = 1", "0"), readonly)
	require.Contains(t, tc.do("EVAL", "rawset(getfenv(), 'a', 1)", "0"), readonly)
	require.Contains(t, tc.do("EVAL", "local m = getmetatable(_G) m.__index.redis = 1", "0"), readonly)
	require.Contains(t, tc.do("EVAL", "return {pcall(loadstring('y = 1'))}", "0"), readonly)
	require.Contains(t, tc.do("EVAL", "return {pcall(function() KEYS = {} end)}", "0"), readonly)
	require.Contains(t, tc.do("EVAL", "redis = 1", "0"), readonly)
	require.Equal(t, "$2\r\nk1\r\n", tc.do("EVAL", "return KEYS[1]", "1", "k1"))
}

// TestEvalshaAfterFlush: the script EVALSHA found last is not found after
// SCRIPT FLUSH, and is found again once loaded again.
func TestEvalshaAfterFlush(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	sha := sha1Hex([]byte("return 7"))
	require.Contains(t, tc.do("SCRIPT", "LOAD", "return 7"), sha)
	require.Equal(t, ":7\r\n", tc.do("EVALSHA", sha, "0"))
	require.Equal(t, ":7\r\n", tc.do("EVALSHA", strings.ToUpper(sha), "0"))
	require.Equal(t, "+OK\r\n", tc.do("SCRIPT", "FLUSH"))
	require.Equal(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n", tc.do("EVALSHA", sha, "0"))
	require.Contains(t, tc.do("SCRIPT", "LOAD", "return 7"), sha)
	require.Equal(t, ":7\r\n", tc.do("EVALSHA", sha, "0"))
	require.Equal(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n", tc.do("EVALSHA", sha1Hex([]byte("return 8")), "0"))
}

// TestScriptMemoryWatch: a script that grows the heap past the limit is
// stopped; the watch sleeps once no script runs, and a script wakes it.
func TestScriptMemoryWatch(t *testing.T) {
	s := startTestServer(t)
	eng := &s.tx.scripts
	eng.memLimit = 16 << 20 // before the first script starts the watch
	tc := dialTest(t, s)
	grow := "local t = {} for i = 1, 1e6 do t[i] = string.rep('x', 100) .. i end return #t"
	tooMuch := "-ERR Script used too much memory and was stopped"
	require.Contains(t, tc.readWithinDo(3*testIOTimeout, "EVAL", grow, "0"), tooMuch)
	deadline := time.Now().Add(testIOTimeout)
	for !eng.watchIdle.Load() {
		require.True(t, time.Now().Before(deadline), "the memory watch did not go to sleep")
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, ":1\r\n", tc.do("EVAL", "return 1", "0"))
	require.Contains(t, tc.readWithinDo(3*testIOTimeout, "EVAL", grow, "0"), tooMuch)
}

// TestEvalTableLibraryOnProtectedTables: table.insert (which writes with
// rawset) refuses the protected tables, as Redis's readonly tables do, so
// no script leaves an element in the shared API; table.remove and
// table.sort find nothing to write there (Redis answers them alike); on a
// script's own tables they all work as before.
func TestEvalTableLibraryOnProtectedTables(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	readonly := "Attempt to modify a readonly table"
	for _, script := range []string{
		"table.insert(_G, 1)",
		"table.insert(redis, 1)",
		"table.insert(redis, 1, 'x')",
		"table.insert(getmetatable(_G), 1)",
	} {
		require.Contains(t, tc.do("EVAL", script, "0"), readonly, script)
	}
	require.Equal(t, "$-1\r\n", tc.do("EVAL", "return redis[1]", "0"))
	require.Equal(t, "$-1\r\n", tc.do("EVAL", "table.remove(redis)", "0"))
	require.Equal(t, "$-1\r\n", tc.do("EVAL", "table.sort(string)", "0"))
	require.Equal(t, "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
		tc.do("EVAL", "local t = {} table.insert(t, 'b') table.insert(t, 1, 'c') table.insert(t, 'a') table.remove(t, 1) table.sort(t) return t", "0"))
}
