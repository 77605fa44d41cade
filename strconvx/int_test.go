package strconvx

import (
	"math"
	"strconv"
	"testing"
)

func TestParseInt(t *testing.T) {
	for in, want := range map[string]bool{
		"0": true, "1": true, "-1": true, "123": true, "9223372036854775807": true, "-9223372036854775808": true,
		"": false, "-": false, "-0": false, "01": false, "+1": false, " 1": false, "1 ": false, "1a": false,
		"9223372036854775808": false, "-9223372036854775809": false, "1.0": false, "0x1": false,
		"18446744073709551616": false, "99999999999999999999": false, "123456789012345678901": false,
		"1_000": false, "\x001": false,
	} {
		v, ok := ParseInt(in)
		vb, okb := ParseInt([]byte(in))
		if ok != want || okb != ok || vb != v {
			t.Errorf("ParseInt(%q) = %d, %v ([]byte: %d, %v), want ok %v", in, v, ok, vb, okb, want)
		}
		if ok && strconv.FormatInt(v, 10) != in {
			t.Errorf("ParseInt(%q) = %d", in, v)
		}
	}
	if v, _ := ParseInt("-9223372036854775808"); v != math.MinInt64 {
		t.Errorf("MinInt64 parsed as %d", v)
	}
}

// TestParseIntRoundTrip: ParseInt accepts exactly the strings that are
// some int64's decimal form (what string2ll + ll2string round-trips).
func TestParseIntRoundTrip(t *testing.T) {
	for _, in := range []string{"7", "-7", "42", "1000000", "-100", "00", "-01", "+0", "12345678901234567890"} {
		n, err := strconv.ParseInt(in, 10, 64)
		want := err == nil && strconv.FormatInt(n, 10) == in
		if _, ok := ParseInt(in); ok != want {
			t.Errorf("ParseInt(%q) ok = %v, want %v", in, ok, want)
		}
	}
}
