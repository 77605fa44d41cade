package slots

import (
	"math/rand/v2"
	"testing"

	"github.com/sigurn/crc16"

	"github.com/stretchr/testify/require"
)

func TestKeySlotKnownValues(t *testing.T) {
	// Values from `redis-cli cluster keyslot` on Redis 7.0.15 and the cluster spec.
	cases := map[string]uint16{
		"":                     0,
		"foo":                  12182,
		"bar":                  5061,
		"123456789":            0x31C3 & (Count - 1), // the CRC16/XMODEM check value
		"{user1000}.following": KeySlot([]byte("user1000")),
		"foo{}{bar}":           KeySlot([]byte("foo{}{bar}")),
		"foo{{bar}}zap":        KeySlot([]byte("{bar")),
		"foo{bar}{zap}":        KeySlot([]byte("bar")),
	}
	for k, want := range cases {
		require.Equal(t, want, KeySlot([]byte(k)), "key %q", k)
	}
}

func TestHashTagRules(t *testing.T) {
	require.Equal(t, "bar", string(HashTag([]byte("foo{bar}zap"))))
	require.Equal(t, "a}{b", string(HashTag([]byte("a}{b"))), "a '}' before the first '{' is not a tag end")
	require.Equal(t, "b", string(HashTag([]byte("a}{b}"))))
	require.Equal(t, "x{", string(HashTag([]byte("x{"))))
	require.Equal(t, "{}x", string(HashTag([]byte("{}x"))), "empty tag hashes the whole key")
}

func TestKeySlotMatchesLibraryChecksum(t *testing.T) {
	keys := [][]byte{nil, []byte("a"), []byte("key:__rand_int__"), []byte("\x00\xff\x80"), make([]byte, 1000)}
	for i := range keys[4] {
		keys[4][i] = byte(i * 7)
	}
	// KeySlot folds two bytes per step: every length parity, random bytes
	// (braces included, so tags of every shape show up).
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		k := make([]byte, rnd.IntN(40))
		for i := range k {
			k[i] = "ab{}\x00\xff"[rnd.IntN(6)]
			if rnd.IntN(2) == 0 {
				k[i] = byte(rnd.Uint32())
			}
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		require.Equal(t, crc16.Checksum(HashTag(k), xmodem)&(Count-1), KeySlot(k), "key %q", k)
	}
}
