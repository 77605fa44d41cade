package rdb

import (
	"hash/crc64"
	"math/rand/v2"
	"testing"
)

// The slicing-by-8 CRC agrees with hash/crc64 driven by the same
// polynomial (complemented in and out, as that package does) for every
// length around the 8-byte steps, and a CRC continued piece by piece, as
// FileWriter does, equals the CRC of the whole.
func TestCRC64MatchesHashCRC64(t *testing.T) {
	ref := crc64.MakeTable(jonesPolyReflected)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4200)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 70; n++ {
		if got, want := CRC64(buf[:n]), ^crc64.Update(^uint64(0), ref, buf[:n]); got != want {
			t.Fatalf("length %d: %x, want %x", n, got, want)
		}
	}
	whole := CRC64(buf)
	if want := ^crc64.Update(^uint64(0), ref, buf); whole != want {
		t.Fatalf("4200 bytes: %x, want %x", whole, want)
	}
	for _, cut := range []int{1, 7, 8, 9, 2047, 2048, 4199} {
		if got := crc64Update(crc64Update(0, buf[:cut]), buf[cut:]); got != whole {
			t.Fatalf("cut at %d: %x, want %x", cut, got, whole)
		}
	}
}

func BenchmarkCRC64(b *testing.B) {
	p := make([]byte, fileFlushSize)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		CRC64(p)
	}
}
