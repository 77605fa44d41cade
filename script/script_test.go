package script

import (
	"testing"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// run evaluates a chunk in a state with the libraries and returns its
// single result as a string.
func run(t *testing.T, code string) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	Open(L)
	require.NoError(t, L.DoString(code), code)
	return L.Get(-1).String()
}

func TestBit(t *testing.T) {
	for code, want := range map[string]string{
		"return bit.tohex(65535)":            "0000ffff",
		"return bit.tohex(-1, -4)":           "FFFF",
		"return bit.band(0xff, 0x0f0)":       "240",
		"return bit.bor(1, 2, 4, 8)":         "15",
		"return bit.lshift(1, 31)":           "-2147483648",
		"return bit.rshift(-1, 28)":          "15",
		"return bit.arshift(-256, 4)":        "-16",
		"return bit.rol(0x12345678, 8)":      "878082066",
		"return bit.bswap(0x12345678)":       "2018915346",
		"return bit.tobit(0xffffffff + 1)":   "0",
		"return bit.bnot(0)":                 "-1",
		"return bit.bxor(0xf0f0, 0xff00, 1)": "4081",
	} {
		require.Equal(t, want, run(t, code), code)
	}
}

func TestCjson(t *testing.T) {
	require.Equal(t, "[1,2,3,null,5]", run(t, "return cjson.encode({1,2,3,nil,5})"))
	require.Equal(t, `{"a":"x\/y"}`, run(t, "return cjson.encode({a='x/y'})"))
	require.Equal(t, "1e+20", run(t, "return cjson.encode(1e20)"))
	require.Equal(t, "0.1", run(t, "return cjson.encode(0.1)"))
	require.Equal(t, "b", run(t, `return cjson.decode('{"a":[1,"b",null]}').a[2]`))
	require.Equal(t, "true", run(t, `return cjson.decode('[null]')[1] == cjson.null`))
	require.Equal(t, "false", run(t, `return (pcall(cjson.encode, {[true]=1}))`))
	require.Equal(t, "false", run(t, `return (pcall(cjson.encode, {1, [100]=2}))`), "excessively sparse")
	require.Equal(t, "false", run(t, `return (pcall(cjson.decode, '[1,'))`))
	require.Equal(t, "false", run(t, `cjson.decode_max_depth(1) return (pcall(cjson.decode, '[[1]]'))`))
}

func TestCmsgpack(t *testing.T) {
	hex := func(code string) string {
		return run(t, "local s = "+code+" local h = '' for i = 1, #s do h = h .. string.format('%02x', string.byte(s, i)) end return h")
	}
	require.Equal(t, "93010203", hex("cmsgpack.pack({1,2,3})"))
	require.Equal(t, "81a16101", hex("cmsgpack.pack({a=1})"))
	require.Equal(t, "d0df", hex("cmsgpack.pack(-33)"))
	require.Equal(t, "ca3fc00000", hex("cmsgpack.pack(1.5)"))
	require.Equal(t, "cb3fb999999999999a", hex("cmsgpack.pack(0.1)"))
	require.Equal(t, "d3ffffff0000000000", hex("cmsgpack.pack(-1099511627776)"))
	require.Equal(t, "x2", run(t, "local t = cmsgpack.unpack(cmsgpack.pack({'x',{y=2}})) return t[1] .. t[2].y"))
	require.Equal(t, "-1", run(t, "local off = cmsgpack.unpack_one(cmsgpack.pack(7), 0) return off"))
	require.Equal(t, "false", run(t, "return (pcall(cmsgpack.unpack, '\\147\\1'))"), "missing bytes")
}

func TestStruct(t *testing.T) {
	require.Equal(t, "258", run(t, "return (struct.unpack('>i2', struct.pack('>i2', 258)))"))
	require.Equal(t, "123456 5", run(t, "local v, n = struct.unpack('<I4', struct.pack('<I4', 123456)) return v .. ' ' .. n"))
	require.Equal(t, "8", run(t, "return struct.size('!4bhi')"))
	require.Equal(t, "abc 5", run(t, "local s, n = struct.unpack('bc0', struct.pack('bc0', 3, 'abc')) return s .. ' ' .. n"))
	require.Equal(t, "hi 4", run(t, "local s, n = struct.unpack('s', 'hi\\0') return s .. ' ' .. n"))
	require.Equal(t, "-2", run(t, "return (struct.unpack('<h', struct.pack('<h', -2)))"))
	require.Equal(t, "2.5", run(t, "return (struct.unpack('>d', struct.pack('>d', 2.5)))"))
}

func TestFormatG(t *testing.T) {
	for f, want := range map[float64]string{0.1: "0.1", 1e15: "1e+15", 1e14: "1e+14", 123456789012: "123456789012",
		0.30000000000000004: "0.3", -0.5: "-0.5", 1e-5: "1e-05", 100: "100"} {
		require.Equal(t, want, FormatG(f, 14), "%v", f)
	}
}
