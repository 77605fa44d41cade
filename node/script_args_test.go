package node

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEvalKeysArgvFreshEachRun: whatever a script does to KEYS and ARGV
// (fields, elements past its own, metatables, fewer arguments next time,
// an error half-way), the next run sees exactly its own arguments, as with
// Redis's new tables per run (the tables are refilled when left as given:
// setEvalArray).
func TestEvalKeysArgvFreshEachRun(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	const look = `return {#KEYS, #ARGV, tostring(KEYS[1]), tostring(KEYS[2]), tostring(KEYS[3]), tostring(KEYS.extra),
		tostring(ARGV[1]), tostring(ARGV[2]), tostring(ARGV[7]), tostring(getmetatable(KEYS)), tostring(getmetatable(ARGV))}`
	want := func(keys, argv int, k1, k2, k3, a1, a2 string) string {
		out := "*11\r\n:" + strconv.Itoa(keys) + "\r\n:" + strconv.Itoa(argv) + "\r\n"
		for _, v := range []string{k1, k2, k3, "nil", a1, a2, "nil", "nil", "nil"} {
			out += "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
		}
		return out
	}
	require.Equal(t, want(3, 2, "a", "b", "c", "x", "y"), tc.do("EVAL", look, "3", "a", "b", "c", "x", "y"))
	// Fewer arguments: the elements past them are gone.
	require.Equal(t, want(1, 0, "d", "nil", "nil", "nil", "nil"), tc.do("EVAL", look, "1", "d"))

	for _, spoil := range []string{
		"KEYS.extra = 'left'",
		"KEYS[3] = 'left'",
		"ARGV[7] = 'left'",
		"setmetatable(KEYS, {__index = function() return 'meta' end})",
		"setmetatable(ARGV, {})",
		"KEYS[1] = nil; KEYS[2] = 'moved'",
		"KEYS.extra = 'left'; error('half-way')",
		"table.insert(ARGV, 'more')",
	} {
		got := tc.do("EVAL", spoil+"; return 1", "2", "k1", "k2", "a1")
		if strings.Contains(spoil, "error(") {
			require.Contains(t, got, "half-way", spoil)
		} else {
			require.Equal(t, ":1\r\n", got, spoil)
		}
		require.Equal(t, want(2, 2, "p", "q", "nil", "r", "s"), tc.do("EVAL", look, "2", "p", "q", "r", "s"), "after %s", spoil)
	}
}

// TestScriptCallArgsDoNotPinLargeValues: redis.call's reused argument
// buffers (luaCallArgs) let a large value go when its call ends, not at the
// next call, which may never come.
func TestScriptCallArgsDoNotPinLargeValues(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	big := strings.Repeat("x", 1<<20)
	require.Equal(t, ":1\r\n", tc.do("EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return 1", "1", "big", big))
	eng := &s.tx.scripts
	eng.runMu.Lock() // the script's goroutine let go of it: its writes are visible
	bytesCap, argvCap := cap(eng.args.bytes), cap(eng.args.argv)
	eng.runMu.Unlock()
	require.LessOrEqual(t, bytesCap, maxKeptCallArgBytes)
	require.LessOrEqual(t, argvCap, maxKeptCallArgs)
	require.Equal(t, ":1048576\r\n", tc.do("STRLEN", "big"))
}
