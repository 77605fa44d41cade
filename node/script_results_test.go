package node

import (
	"testing"

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
