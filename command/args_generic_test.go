package command

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseScanCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		isOK bool
	}{
		{"0", 0, true},
		{"", 0, true}, // strtoul of "" is 0
		{"17", 17, true},
		{"+5", 5, true},
		{"-1", math.MaxUint64, true}, // strtoul negates in unsigned arithmetic
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, // overflow
		{"12\x00junk", 12, true},           // read as a C string
		{" 1", 0, false},
		{"\t1", 0, false},
		{"-", 0, false},
		{"1x", 0, false},
	} {
		got, ok := ParseScanCursor([]byte(tc.in))
		require.Equal(t, tc.isOK, ok, "%q", tc.in)
		if ok {
			require.Equal(t, tc.want, got, "%q", tc.in)
		}
	}
}

func TestArgIsAndCString(t *testing.T) {
	require.True(t, ArgIs([]byte("COUNT"), "count"))
	require.True(t, ArgIs([]byte("count\x00xyz"), "count"))
	require.False(t, ArgIs([]byte("counts"), "count"))
	require.False(t, ArgIs([]byte("\x00count"), "count"))
	require.Equal(t, "ab", CString([]byte("ab\x00cd")))
	require.Equal(t, "abcd", CString([]byte("abcd")))
	require.Equal(t, "", CString([]byte("\x00")))
}

func TestParseDBIndex(t *testing.T) {
	for _, tc := range []struct {
		in, errMsg string
		want       int
		reply      string // empty when the parse succeeds
	}{
		{"3", "", 3, ""},
		{"-1", "", -1, ""}, // a number: the range check is the caller's
		{"2147483647", "", math.MaxInt32, ""},
		{"x", "", 0, "-ERR value is not an integer or out of range\r\n"},
		{"2147483648", "", 0, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{"x", "ERR invalid first DB index", 0, "-ERR invalid first DB index\r\n"},
		{"-2147483649", "ERR invalid second DB index", 0, "-ERR invalid second DB index\r\n"},
	} {
		var c Ctx
		n, ok := ParseDBIndex(&c, []byte(tc.in), tc.errMsg)
		require.Equal(t, tc.reply == "", ok, tc.in)
		require.Equal(t, tc.reply, string(c.Out), tc.in)
		if ok {
			require.Equal(t, tc.want, n, tc.in)
		}
	}
}
