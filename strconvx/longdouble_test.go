package strconvx

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLongDouble(t *testing.T) {
	ok := map[string]string{
		"1": "1", "-1.1": "-1.1", "+2.5": "2.5", ".5": "0.5", "5.": "5", "1e3": "1000", "1E+3": "1000",
		"-0": "0", "0.0": "0", "0e999999999999": "0", "0x10": "16", "0X1P-2": "0.25", "0x.8": "0.5",
		"1e-18": "0", "5e-18": "0", "6e-18": "0.00000000000000001", "123456789012345678901234567890": "123456789012345678899921813504",
		"2e-4951":     "0",
		"0.1":         "0.1",
		"3.14159e-10": "0.000000000314159",
	}
	for in, want := range ok {
		v, good := ParseLongDouble([]byte(in))
		require.True(t, good, "%q", in)
		require.Equal(t, want, string(v.AppendHuman(nil)), "%q", in)
	}
	for _, in := range []string{"", " 1", "1 ", "\t1", "abc", "1e", "1e+", "e5", ".", "-", "+", "0x", "0x1p", "0xg",
		"nan", "NaN", "-nan", "nan(1)", "1e5000", "-1e5000", "1e-5000", "1e-4951", "1\x002", "infin", "--1", "1..2",
		"0x1p-16446", "0x1p16384", strings.Repeat("1", 5120), "\u0131nf", "\u0130NF", "inf\x00"} {
		_, good := ParseLongDouble([]byte(in))
		require.False(t, good, "%q", in)
	}
	for _, in := range []string{"inf", "-INF", "Infinity", "+infinity"} {
		v, good := ParseLongDouble([]byte(in))
		require.True(t, good, "%q", in)
		require.True(t, v.IsInf())
	}
	v, good := ParseLongDouble([]byte("0x1p-16445")) // the smallest denormal
	require.True(t, good)
	require.Equal(t, "0", string(v.AppendHuman(nil)))
}

func TestAppendHumanFloat(t *testing.T) {
	for f, want := range map[float64]string{13.361389338970184: "13.36138933897018433", math.Inf(1): "inf", math.Inf(-1): "-inf", 0: "0", -0.5: "-0.5", 180: "180", math.Copysign(0, -1): "0"} {
		if got := string(AppendHumanFloat(nil, f)); got != want {
			t.Errorf("AppendHumanFloat(%v) = %q, want %q", f, got, want)
		}
	}
}
