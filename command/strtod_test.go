package command

import (
	"math"
	"testing"
)

// Strtod's acceptance and lengths as glibc's strtod in the "C" locale.
func TestStrtod(t *testing.T) {
	cases := []struct {
		in     string
		val    float64
		n      int
		erange bool
	}{
		{"1.5", 1.5, 3, false},
		{"  -2e3x", -2000, 6, false},
		{"1e", 1, 1, false},
		{"0x1p4", 16, 5, false},
		{"0x", 0, 1, false},
		{"inf", math.Inf(1), 3, false},
		{"-Infinity", math.Inf(-1), 9, false},
		{"1e400", math.Inf(1), 5, true},
		{"1e-400", 0, 6, true},
		{"abc", 0, 0, false},
		{".", 0, 0, false},
	}
	for _, tc := range cases {
		v, n, er := Strtod([]byte(tc.in))
		if v != tc.val || n != tc.n || er != tc.erange {
			t.Errorf("Strtod(%q) = %v, %d, %v; want %v, %d, %v", tc.in, v, n, er, tc.val, tc.n, tc.erange)
		}
	}
	for in, n := range map[string]int{"nan": 3, "nan(abc_1)": 10, "nan(": 3, "-NaN(x": 4} {
		v, got, _ := Strtod([]byte(in))
		if !math.IsNaN(v) || got != n {
			t.Errorf("Strtod(%q) = %v, %d; want NaN, %d", in, v, got, n)
		}
	}
}

// ArgIs compares the argument's C string: a NUL ends it.
func TestArgIsCString(t *testing.T) {
	for in, want := range map[string]bool{"LIMIT": true, "limit\x00junk": true, "limits": false, "": false} {
		if got := ArgIs([]byte(in), "limit"); got != want {
			t.Errorf("ArgIs(%q, limit) = %v, want %v", in, got, want)
		}
	}
}
