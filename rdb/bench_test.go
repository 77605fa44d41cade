package rdb

import (
	"strconv"
	"testing"

	"github.com/shoal-db/shoal/store"
)

// benchEntries builds one 1M-element value of each collection type.
func benchEntry(b *testing.B, kind string) *store.Entry {
	b.Helper()
	const n = 1_000_000
	db := store.New(1, nil, nil).DB(0)
	num := func(i int) []byte { return strconv.AppendInt(nil, int64(i), 10) }
	switch kind {
	case "hash":
		h := store.NewHash()
		for i := 0; i < n; i++ {
			h.Set(append([]byte("field:"), num(i)...), append([]byte("value:"), num(i)...), 512, 64)
		}
		return db.SetValue([]byte("k"), h)
	case "list":
		l := store.NewList(-2)
		for i := 0; i < n; i++ {
			l.Push(append([]byte("element:"), num(i)...), false)
		}
		return db.SetValue([]byte("k"), l)
	case "zset":
		zm := make([]store.ZMember, n)
		for i := range zm {
			zm[i] = store.ZMember{Member: "member:" + strconv.Itoa(i), Score: float64(i)}
		}
		return db.SetValue([]byte("k"), store.BuildZSet(zm, store.ZSetLimits{MaxListpackEntries: 128, MaxListpackValue: 64}))
	}
	s := store.NewSetFor([]byte("a"))
	for i := 0; i < n; i++ {
		s.Add(append([]byte("member:"), num(i)...), 512)
	}
	return db.SetValue([]byte("k"), s)
}

// BenchmarkDump and BenchmarkRestore measure DUMP and RESTORE of 1M-element
// values (the payload work only, no network).
func BenchmarkDump(b *testing.B) {
	for _, kind := range []string{"hash", "list", "set", "zset"} {
		b.Run(kind, func(b *testing.B) {
			e := benchEntry(b, kind)
			b.ResetTimer()
			var size int
			for i := 0; i < b.N; i++ {
				size = len(DumpPayload(e))
			}
			b.SetBytes(int64(size))
		})
	}
}

func BenchmarkRestore(b *testing.B) {
	lim := DefaultLimits()
	for _, kind := range []string{"hash", "list", "set", "zset"} {
		b.Run(kind, func(b *testing.B) {
			p := DumpPayload(benchEntry(b, kind))
			b.SetBytes(int64(len(p)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := DecodePayload(p, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
