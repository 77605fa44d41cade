package command

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTimeoutMillis(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ms   int64
		isOK bool
	}{
		{"0", 0, true},
		{"1", 1000, true},
		{"0.1", 100, true},
		{"0.0001", 1, true}, // rounded up
		{"1.5", 1500, true},
		{"-0", 0, true},
		{"-1", -1000, true},
		{"0x10", 16000, true},
		{"1e3", 1000000, true},
		{"inf", math.MinInt64, true},
		{"-inf", math.MinInt64, true},
		{"9223372036854775807", math.MinInt64, true},
		{"1e400", math.MinInt64, true},
		{"abc", 0, false},
		{"", 0, false},
		{" 1", 0, false},
		{"nan", 0, false},
	} {
		ms, ok := timeoutMillis([]byte(tc.in))
		require.Equal(t, tc.isOK, ok, tc.in)
		if ok {
			require.Equal(t, tc.ms, ms, tc.in)
		}
	}
}

// Keywords compare as Redis's strcasecmp: ASCII case only (BITFIELD k ſet
// u8 0 1 is a syntax error in Redis; Unicode folding accepted it).
func TestKeywordsFoldASCIIOnly(t *testing.T) {
	require.True(t, ArgIs([]byte("SeT"), "set"))
	require.True(t, ArgIs([]byte("set\x00junk"), "set"))
	require.False(t, ArgIs([]byte("ſet"), "set"))
	require.False(t, ArgEquals([]byte("\u212a"), "k")) // Kelvin sign
	require.False(t, ArgEquals([]byte("ſet"), "set"))
	require.True(t, ArgEquals([]byte("NX"), "nx"))
	require.False(t, ArgEquals([]byte("n"), "nx"))
}
