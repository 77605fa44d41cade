package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const testLib = "#!lua name=mylib\n" +
	"redis.register_function('setget', function(keys, args) redis.call('SET', keys[1], args[1]) return redis.call('GET', keys[1]) end)\n" +
	"redis.register_function{function_name='ro', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads'}\n"

func TestFunctionLoadCallListDelete(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "$5\r\nmylib\r\n", tc.do("FUNCTION", "LOAD", testLib))
	require.Equal(t, "-ERR Library 'mylib' already exists\r\n", tc.do("FUNCTION", "LOAD", testLib))
	require.Equal(t, "$5\r\nmylib\r\n", tc.do("FUNCTION", "LOAD", "REPLACE", testLib))
	require.Equal(t, "$1\r\nv\r\n", tc.do("FCALL", "setget", "1", "k", "v"))
	require.Equal(t, "$1\r\nv\r\n", tc.do("FCALL", "SETGET", "1", "k", "v"), "function names are case-insensitive")
	require.Equal(t, "$1\r\nv\r\n", tc.do("FCALL_RO", "ro", "1", "k"))
	require.Equal(t, "-ERR Can not execute a script with write flag using *_ro command.\r\n", tc.do("FCALL_RO", "setget", "1", "k", "v"))
	require.Equal(t, "-ERR Function not found\r\n", tc.do("FCALL", "nosuch", "0"))
	require.Equal(t, "*1\r\n*6\r\n$12\r\nlibrary_name\r\n$5\r\nmylib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*2\r\n"+
		"*6\r\n$4\r\nname\r\n$6\r\nsetget\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n"+
		"*6\r\n$4\r\nname\r\n$2\r\nro\r\n$11\r\ndescription\r\n$5\r\nreads\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n",
		tc.do("FUNCTION", "LIST"))
	// Load-time code sees only the load API.
	require.Contains(t, tc.do("FUNCTION", "LOAD", "#!lua name=bad\nredis.call('ping')"), "attempted to access nonexistent global variable 'call'")
	require.Equal(t, "-ERR No functions registered\r\n", tc.do("FUNCTION", "LOAD", "#!lua name=empty\nlocal x = 1"))
	require.Equal(t, "-ERR Missing library metadata\r\n", tc.do("FUNCTION", "LOAD", "return 1"))

	// DUMP / RESTORE round trip, with the three policies.
	dump := bulkBody(t, tc.do("FUNCTION", "DUMP"))
	require.Equal(t, "+OK\r\n", tc.do("FUNCTION", "DELETE", "mylib"))
	require.Equal(t, "-ERR Library not found\r\n", tc.do("FUNCTION", "DELETE", "mylib"))
	require.Equal(t, "+OK\r\n", tc.do("FUNCTION", "RESTORE", dump))
	require.Equal(t, "-ERR Library mylib already exists\r\n", tc.do("FUNCTION", "RESTORE", dump))
	require.Equal(t, "+OK\r\n", tc.do("FUNCTION", "RESTORE", dump, "REPLACE"))
	require.Equal(t, "+OK\r\n", tc.do("FUNCTION", "RESTORE", dump, "FLUSH"))
	require.Equal(t, "-ERR DUMP payload version or checksum are wrong\r\n", tc.do("FUNCTION", "RESTORE", dump[:len(dump)-1]+"x"))
	require.Equal(t, "$1\r\nv\r\n", tc.do("FCALL", "ro", "1", "k"))
	require.Equal(t, "+OK\r\n", tc.do("FUNCTION", "FLUSH"))
	require.Equal(t, "*0\r\n", tc.do("FUNCTION", "LIST"))
}

// TestFunctionDumpRestoreWithRedis: FUNCTION DUMP payloads cross between
// shoal and redis-server both ways (redis-cli --cluster add-node copies
// functions with them).
func TestFunctionDumpRestoreWithRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	s := startTestServer(t)
	sh, rd := dialTest(t, s), dialTestAddr(t, redisAddr)
	require.Equal(t, "$5\r\nmylib\r\n", rd.do("FUNCTION", "LOAD", testLib))
	require.Equal(t, "+OK\r\n", sh.do("FUNCTION", "RESTORE", bulkBody(t, rd.do("FUNCTION", "DUMP"))))
	require.Equal(t, "$1\r\nx\r\n", sh.do("FCALL", "setget", "1", "k", "x"))
	require.Equal(t, "+OK\r\n", rd.do("FUNCTION", "FLUSH"))
	require.Equal(t, "+OK\r\n", rd.do("FUNCTION", "RESTORE", bulkBody(t, sh.do("FUNCTION", "DUMP"))))
	require.Equal(t, "$1\r\ny\r\n", rd.do("FCALL", "setget", "1", "k", "y"))
}

// FUNCTION LIST LIBRARYNAME matches without case, as Redis's functions.c
// (stringmatchlen with nocase=1).
func TestFunctionListLibraryNameIgnoresCase(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "$5\r\nMyLib\r\n", tc.do("FUNCTION", "LOAD", "#!lua name=MyLib\nredis.register_function('f1', function() return 1 end)"))
	require.Contains(t, tc.do("FUNCTION", "LIST", "LIBRARYNAME", "mylib"), "MyLib")
	require.Contains(t, tc.do("FUNCTION", "LIST", "LIBRARYNAME", "MY*"), "MyLib")
	require.Equal(t, "*0\r\n", tc.do("FUNCTION", "LIST", "LIBRARYNAME", "other"))
}
