package node

import (
	"math/rand/v2"

	"github.com/shoal-db/shoal/glob"
)

// stringmatchFuzz runs the glob matcher on random patterns and strings, as
// Redis's stringmatchlen_fuzz_test does: it passes by not crashing or
// hanging (the matcher bounds its own backtracking).
func stringmatchFuzz() {
	const alphabet = "ab*?[]^-\\"
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	gen := func() string {
		b := make([]byte, rnd.IntN(32))
		for i := range b {
			if rnd.IntN(4) == 0 {
				b[i] = byte(rnd.IntN(256))
			} else {
				b[i] = alphabet[rnd.IntN(len(alphabet))]
			}
		}
		return string(b)
	}
	for i := 0; i < 100000; i++ {
		glob.Match(gen(), gen(), rnd.IntN(2) == 0)
	}
}
