package resp

import (
	"bytes"
	"testing"

	"github.com/tidwall/redcon"
)

// requireSameSplit checks that SplitCanonical splits the command at the
// start of b as redcon.ReadNextCommand did (into want, leaving wantRest),
// in place in a buffer with room.
func requireSameSplit(t *testing.T, b []byte, want [][]byte, wantRest []byte) {
	t.Helper()
	buf := make([][]byte, 0, len(want))
	got, rest, ok := SplitCanonical(b, buf)
	if !ok || len(got) != len(want) || len(rest) != len(wantRest) {
		t.Fatalf("%q: SplitCanonical gave %q rest %d ok=%v, redcon %q rest %d", b, got, len(rest), ok, want, len(wantRest))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) || cap(got[i]) != len(got[i]) {
			t.Fatalf("%q: argument %d is %q (cap %d), redcon's %q", b, i, got[i], cap(got[i]), want[i])
		}
	}
	if len(got) > 0 && &got[0] != &buf[:1][0] {
		t.Fatalf("%q: arguments not appended in place", b)
	}
}

func TestSplitCanonical(t *testing.T) {
	ok := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000012345\r\n$3\r\nxyz\r\n*1\r\n$4\r\nPING\r\n",
		"*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
		"*2\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n", // CRLF inside a payload
	}
	for _, s := range ok {
		complete, want, _, wantRest, err := redcon.ReadNextCommand([]byte(s), nil)
		if err != nil || !complete {
			t.Fatalf("redcon refuses %q: %v", s, err)
		}
		requireSameSplit(t, []byte(s), want, wantRest)
	}
	bad := []string{
		"",
		"PING\r\n",             // inline: the reader rewrites it
		"*1\r\n$4\r\nPING",     // no CRLF after the payload
		"*1\r\n$4\r\nPIN",      // short payload
		"*2\r\n$4\r\nPING\r\n", // an argument missing
		"*1\r\n$-1\r\n",
		"*0\r\n",
		"*1\r\n$9999999999999999999\r\nx\r\n", // 19 digits
		"*1\r\n$999999999999999999\r\nx\r\n",  // past the end
		"*1\n$4\r\nPING\r\n",
		"*x\r\n",
	}
	for _, s := range bad {
		if got, rest, ok := SplitCanonical([]byte(s), nil); ok {
			t.Fatalf("%q split into %q, rest %q", s, got, rest)
		}
	}
}

// FuzzSplitCanonical: on any bytes SplitCanonical does not panic, and what
// it accepts redcon splits the same way.
func FuzzSplitCanonical(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("*1\r\n$4\r\nPI\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, rest, ok := SplitCanonical(b, nil)
		if !ok {
			return
		}
		complete, want, _, wantRest, err := redcon.ReadNextCommand(b, nil)
		if err != nil || !complete {
			t.Fatalf("%q: SplitCanonical gave %q, redcon refuses it: %v", b, got, err)
		}
		if len(rest) != len(wantRest) || len(got) != len(want) {
			t.Fatalf("%q: %q rest %d, redcon %q rest %d", b, got, len(rest), want, len(wantRest))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: argument %d %q, redcon's %q", b, i, got[i], want[i])
			}
		}
	})
}

// BenchmarkSplitSetBatch splits a -P 16 batch of redis-benchmark's SETs, as
// serveRequests does, with SplitCanonical and with redcon.
func BenchmarkSplitSetBatch(b *testing.B) {
	var batch []byte
	for range 16 {
		batch = append(batch, "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000012345\r\n$100\r\n"...)
		batch = append(batch, bytes.Repeat([]byte{'x'}, 100)...)
		batch = append(batch, "\r\n"...)
	}
	args := make([][]byte, 0, 48)
	for _, split := range []struct {
		name string
		next func([]byte, [][]byte) ([][]byte, []byte)
	}{
		{"SplitCanonical", func(b []byte, a [][]byte) ([][]byte, []byte) {
			cmd, rest, _ := SplitCanonical(b, a)
			return cmd, rest
		}},
		{"redcon", func(b []byte, a [][]byte) ([][]byte, []byte) {
			_, cmd, _, rest, _ := redcon.ReadNextCommand(b, a)
			return cmd, rest
		}},
	} {
		b.Run(split.name, func(b *testing.B) {
			for range b.N {
				all := args[:0]
				for rest := batch; len(rest) > 0; {
					var cmd [][]byte
					cmd, rest = split.next(rest, all[len(all):])
					all = all[:len(all)+len(cmd)]
				}
			}
		})
	}
}
