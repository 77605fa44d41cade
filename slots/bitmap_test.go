package slots

import "testing"

// SetRange sets exactly the slots a slot-by-slot loop sets, at every word
// boundary and out-of-range end.
func TestBitmapSetRangeMatchesSet(t *testing.T) {
	ends := []int{-5, 0, 1, 62, 63, 64, 65, 127, 128, 5460, 5461, 16320, 16382, 16383, 16384, 20000}
	for _, s := range ends {
		for _, e := range ends {
			var got, want Bitmap
			got[3] = 1 << 7 // bits already set stay
			want[3] = 1 << 7
			got.SetRange(s, e)
			for i := s; i <= e; i++ {
				want.Set(i)
			}
			if got != want {
				t.Fatalf("SetRange(%d, %d): %d slots, want %d", s, e, got.Count(), want.Count())
			}
		}
	}
}
