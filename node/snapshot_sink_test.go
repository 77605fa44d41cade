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
				require.NotNil(t, chunks[0].block, "the copies live in the arena")
				require.Equal(t, len(chunks[0].strings), cap(chunks[0].strings), "the size pass is exact")
			}
			writeChunk(fw, chunks[0])
			sink.recycle(chunks[0])
			sink.close()
			require.Empty(t, sink.arena.blocks, "a closed sink unmaps its arena")
			require.NoError(t, fw.Finish())
			return out.Bytes()
		}
		walk, copied := file(true), file(false)
		load := func(data []byte) map[string]rdb.LoadedKey {
			got := map[string]rdb.LoadedKey{}
			require.NoError(t, rdb.LoadFile(data, rdb.DefaultLimits(), func(k *rdb.LoadedKey) error {
				// The loader reuses its buffers after the callback: copied.
				got[string(k.Key)] = rdb.LoadedKey{ExpireAt: k.ExpireAt, Obj: rdb.Object{Type: k.Obj.Type, Str: bytes.Clone(k.Obj.Str)}}
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

// The arena: buffers are cut from shared blocks, a big one gets its own
// mapping, a block goes when its last buffer is released and no more are
// cut from it, and a closed sink frees everything once the last capture
// copying into it is done; a capture after that uses the heap and is
// dropped.
func TestSnapshotArenaLifetime(t *testing.T) {
	var a snapshotArena
	b1, blk1 := a.alloc(1000)
	b2, blk2 := a.alloc(2000)
	require.NotNil(t, blk1)
	require.Same(t, blk1, blk2)
	require.Equal(t, 1000, cap(b1))
	b1 = append(b1, bytes.Repeat([]byte("a"), 1000)...)
	b2 = append(b2, bytes.Repeat([]byte("b"), 2000)...)
	require.Equal(t, byte('a'), b1[999], "buffers do not overlap")
	big, blkBig := a.alloc(arenaBlockSize)
	require.NotSame(t, blk1, blkBig)
	require.Equal(t, arenaBlockSize, cap(big))
	require.Len(t, a.blocks, 2)
	a.release(blkBig)
	require.Len(t, a.blocks, 1, "a big buffer's mapping goes with it")
	a.release(blk1)
	a.release(blk2)
	require.Len(t, a.blocks, 1, "the current block stays for the next buffers")
	const quarter = arenaBlockSize / 4
	var cut []*arenaBlock
	for range 3 {
		_, b := a.alloc(quarter)
		require.Same(t, blk1, b)
		cut = append(cut, b)
	}
	_, blk4 := a.alloc(quarter) // 3000 bytes short: a new block
	require.NotSame(t, blk1, blk4)
	require.Len(t, a.blocks, 2)
	for _, b := range cut {
		a.release(b)
	}
	require.Len(t, a.blocks, 1, "a full block goes with its last buffer")
	a.freeAll()
	require.Empty(t, a.blocks)

	db := store.New(1, nil, nil).DB(0)
	db.SetString([]byte("{x}k"), []byte("v"), false)
	slot := slots.KeySlot([]byte("{x}"))
	sink := &rdbSnapshotSink{enc: rdb.Compressed}
	// A capture copying while the snapshot closes keeps the arena mapped
	// until it is done.
	buf, blk := sink.stringsBuffer(64)
	require.NotNil(t, blk)
	sink.close()
	require.Len(t, sink.arena.blocks, 1)
	_ = append(buf, "still copying"...)
	sink.mu.Lock()
	sink.copying--
	sink.mu.Unlock()
	// A late capture (it found the snapshot before End) is dropped.
	sink.CaptureSlot(0, db, slot, false)
	require.Empty(t, sink.take())
	require.Empty(t, sink.arena.blocks, "the last capture unmapped the closed sink's arena")
}
