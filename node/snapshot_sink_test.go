package node

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// A slot captured by a command (string keys copied, encoded when the
// chunk is written) ends up in the file byte for byte as when the walk
// captures it (encoded at once): with and without expiry, integers,
// compressible and incompressible values, compressed or not, and beside
// keys of other types, which are encoded at capture either way.
func TestSnapshotSinkCopiedStringsEncodeAsTheWalk(t *testing.T) {
	db := store.New(1, nil, nil).DB(0)
	incompressible := []byte("q8#Lz!0vK2@pR7$wX5^nB3&mT9*jF1(dH6)sY4_gC0+eA8=uI2-oZ7~lN5")
	values := [][]byte{
		[]byte("v"), []byte("12345"), []byte("-9223372036854775808"), []byte(""),
		bytes.Repeat([]byte("ab"), 200), incompressible, bytes.Repeat([]byte("x"), 70_000),
	}
	for i, v := range values {
		key := []byte("{tag}s" + strings.Repeat("k", i))
		e := db.SetString(key, v, false)
		if i%2 == 1 {
			db.SetExpire(key, e, 4_000_000_000_000+int64(i))
		}
	}
	l := store.NewList(-2)
	l.Push([]byte("element"), false)
	db.SetValue([]byte("{tag}list"), l)
	slot := slots.KeySlot([]byte("{tag}"))

	for _, compress := range []bool{true, false} {
		file := func(byWalk bool) []byte {
			sink := &rdbSnapshotSink{enc: rdb.Encoder{Compress: compress}}
			sink.CaptureSlot(0, db, slot, byWalk)
			var out bytes.Buffer
			fw := rdb.NewFileWriter(&out, sink.enc)
			chunks := sink.take()
			require.Len(t, chunks, 1)
			require.Equal(t, len(values)+1, chunks[0].keys)
			if !byWalk {
				require.NotEmpty(t, chunks[0].strings, "strings are copied, not encoded, off the walk")
			}
			writeChunk(fw, chunks[0])
			require.NoError(t, fw.Finish())
			return out.Bytes()
		}
		walk, copied := file(true), file(false)
		load := func(data []byte) map[string]rdb.LoadedKey {
			got := map[string]rdb.LoadedKey{}
			require.NoError(t, rdb.LoadFile(data, rdb.DefaultLimits(), func(k *rdb.LoadedKey) error {
				got[string(k.Key)] = rdb.LoadedKey{Key: k.Key, ExpireAt: k.ExpireAt, Obj: rdb.Object{Type: k.Obj.Type, Str: k.Obj.Str}}
				return nil
			}))
			return got
		}
		fromWalk, fromCopy := load(walk), load(copied)
		require.Len(t, fromWalk, len(values)+1)
		require.Equal(t, fromWalk, fromCopy, "compress=%v", compress)
		require.Equal(t, len(walk), len(copied), "compress=%v: the same encodings", compress)
	}
}
