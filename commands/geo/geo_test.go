package geo

import "testing"

func TestGeoFormatting(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0000", 0.00005: "0.0000", 0.00015: "0.0001", 1.23456: "1.2346", 123: "123.0000", -1.5: "-1.5000"} {
		if got := string(appendGeoDistance(nil, f)); got != want {
			t.Errorf("appendGeoDistance(%v) = %q, want %q", f, got, want)
		}
	}
	if got := cFormatF(200); got != "200.000000" {
		t.Errorf("cFormatF = %q", got)
	}
}
