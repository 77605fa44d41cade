package strconvx

import (
	"math"
	"testing"
)

// The expected texts are glibc's printf("%.17g"), as Redis writes them.
func TestAppendDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "-0", 1: "1", -1.5: "-1.5", 0.1: "0.10000000000000001",
		1.0 / 3: "0.33333333333333331", 1e16: "10000000000000000", 1e17: "1e+17", 123456789012345678: "1.2345678901234568e+17",
		1e-4: "0.0001", 1e-5: "1.0000000000000001e-05", 0.00012345: "0.00012344999999999999", 1e100: "1e+100",
		math.MaxFloat64: "1.7976931348623157e+308", 5e-324: "4.9406564584124654e-324", 3.0000000000000004: "3.0000000000000004", 1e20: "1e+20", -1e-5: "-1.0000000000000001e-05", 3.0e-300: "3.0000000000000002e-300",
		math.Inf(1): "inf", math.Inf(-1): "-inf", math.NaN(): "nan",
	} {
		if got := string(AppendDouble([]byte("x"), f)); got != "x"+want {
			t.Errorf("AppendDouble(%v) = %q, want %q", f, got, "x"+want)
		}
	}
}
