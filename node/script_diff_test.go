package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScriptRepliesMatchRedis runs the same scripts on redis-server 7.0 and
// shoal and compares the replies byte for byte: the Lua <-> RESP
// conversions (RESP2 and RESP3), the redis.* helpers and errors, and the
// bit, struct, cjson and cmsgpack libraries.
func TestScriptRepliesMatchRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	s := startTestServer(t)
	rd, sh := dialTestAddr(t, redisAddr), dialTest(t, s)
	scripts := []string{
		// Lua -> RESP
		"return 1", "return 3.99", "return -3.99", "return 'x'", "return true", "return false", "return nil",
		"return {1, 'a', {2, 3}, true, false}", "return {1, 2, nil, 4}",
		"return {ok='fine'}", "return {err='MY error'}", "return redis.status_reply('S')", "return redis.error_reply('E x')",
		"return redis.error_reply('-ERR y')", "return {err='bad\\r\\nline'}",
		"return {double=3.5}", "return {map={a=1}}", "return {set={a=true}}", "return {big_number='123'}",
		// RESP -> Lua
		"redis.call('SET', 'k', 'v') return redis.call('GET', 'k')", "return redis.call('GET', 'missing')",
		"return redis.call('INCR', 'n')", "return redis.call('PING')", "return type(redis.call('PING'))",
		"redis.call('RPUSH', 'l', 'a', 'b') return redis.call('LRANGE', 'l', 0, -1)",
		"return redis.pcall('LPUSH', 'k', 'x')", "return redis.pcall('nosuchcommand')",
		"redis.setresp(3) return redis.call('HGETALL', 'nohash')",
		"redis.call('HSET', 'h', 'f', 'v') redis.setresp(3) return redis.call('HGETALL', 'h')",
		"redis.setresp(3) return redis.call('SMEMBERS', 'noset')",
		"redis.setresp(3) return redis.call('ZSCORE', 'nozset', 'm')",
		"return redis.call('SET', 'k', 9007199254740991)", "return redis.call('GET', 'k')",
		"return redis.call('SET', 'k', 0.1)", "return redis.call('GET', 'k')",
		"redis.call('SET', 'k', 1/0) return redis.call('GET', 'k')", "redis.call('SET', 'k', -1/0) return redis.call('GET', 'k')",
		"redis.call('SET', 'k', 1e300*1e10) return redis.call('GET', 'k')", "redis.call('SET', 'k', 2^63) return redis.call('GET', 'k')",
		"return redis.sha1hex('')", "return redis.REDIS_VERSION",
		// errors
		"return redis.call('SET', 'x')", "return redis.call()", "return redis.call({})",
		"redis.call('HSET', 'h2', 'f', 'v') return redis.call('GET', 'h2')",
		"return nosuchglobal", "x = 1", "error('boom')", "error({err='E custom'})",
		// libraries
		"return bit.tohex(65535)", "return bit.tohex(-1, -4)", "return bit.band(0xff, 0x0f0)",
		"return bit.lshift(1, 31)", "return bit.rshift(-1, 28)", "return bit.arshift(-256, 4)",
		"return bit.rol(0x12345678, 8)", "return bit.bswap(0x12345678)",
		"return cjson.encode({1,2,3,nil,5})", "return cjson.encode({a='x/y'})", "return cjson.encode({b={}})",
		"return cjson.encode(0.1)", "return cjson.encode(1e20)", "return cjson.encode('\\1')",
		"return cjson.decode('[1,\"a\",null,true]')[2]", "return cjson.decode('{\"a\":[1,2]}').a[2]",
		"return struct.pack('>i2', 258)", "return {struct.unpack('<I4', struct.pack('<I4', 123456))}",
		"return struct.size('!4bhi')", "return struct.pack('bc0', 3, 'abc')", "return {struct.unpack('s', 'hi\\0')}",
		"return cmsgpack.pack({1,2,3})", "return cmsgpack.pack({a=1})", "return cmsgpack.pack(-33)",
		"return cmsgpack.pack(1.5)", "return cmsgpack.pack(0.1)", "return cmsgpack.pack(-1099511627776)",
		"return cmsgpack.unpack(cmsgpack.pack({'x',{y=2}}))[1]", "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 0)}",
		"return tostring(0.1)", "return tostring(1e15)", "return tostring(-0.5)",
	}
	for _, proto := range []string{"2", "3"} {
		rd.do("HELLO", proto)
		sh.do("HELLO", proto)
		rd.do("FLUSHALL")
		sh.do("FLUSHALL")
		for _, sc := range scripts {
			want := rd.do("EVAL", sc, "0")
			got := sh.do("EVAL", sc, "0")
			require.Equal(t, want, got, "RESP%s: EVAL %q", proto, sc)
		}
	}
}
