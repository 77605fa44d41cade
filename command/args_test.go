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
