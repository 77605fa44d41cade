package rdb

import (
	"encoding/hex"
	"testing"
)

// FuzzDecodeValue feeds arbitrary object bytes (type byte + object) to the
// RESTORE decoder, wrapped in a valid footer so that mutations reach the
// decoder instead of the checksum. Nothing may panic or allocate beyond
// the input's bounds, and whatever decodes must re-encode to a payload that
// decodes to the same value. Seeds: real redis-server 7.0 DUMP payloads.
func FuzzDecodeValue(f *testing.F) {
	for _, d := range redisDumps {
		p, _ := hex.DecodeString(d.hex)
		f.Add(p[:len(p)-footerSize])
	}
	lim := DefaultLimits()
	lim.MaxString = 1 << 20
	f.Fuzz(func(t *testing.T, v []byte) {
		p := withFooter(v)
		orig := string(p)
		o, err := DecodePayload(p, lim)
		if string(p) != orig {
			// RESTORE's payload is the client's request buffer, which is
			// propagated afterwards: decoding must never write to it.
			t.Fatalf("decoding modified its input")
		}
		if err != nil {
			return
		}
		e := storeObject(t, o)
		again, err := DecodePayload(DumpPayload(e), lim)
		if err != nil {
			t.Fatalf("our own payload does not decode: %v", err)
		}
		if objectDigest(o) != objectDigest(again) {
			t.Fatalf("value changed through a round trip")
		}
	})
}

// FuzzLoadFile feeds arbitrary bytes after a valid header to the RDB file
// loader (checksum 0 = not checked, so mutations reach the parser).
func FuzzLoadFile(f *testing.F) {
	for _, d := range redisDumps {
		p, _ := hex.DecodeString(d.hex)
		v := p[:len(p)-footerSize]
		file := append([]byte("REDIS0010\xfe\x00\xfb\x01\x00"), v[0])
		file = append(file, 1, 'k')
		file = append(file, v[1:]...)
		f.Add(append(file, 0xff, 0, 0, 0, 0, 0, 0, 0, 0))
	}
	lim := DefaultLimits()
	lim.MaxString = 1 << 20
	f.Fuzz(func(t *testing.T, file []byte) {
		orig := string(file)
		defer func() {
			if string(file) != orig {
				t.Fatalf("loading modified its input")
			}
		}()
		_ = LoadFile(file, lim, func(k *LoadedKey) error {
			if k.Obj.Type != 0 && k.Obj.Value == nil {
				t.Fatalf("non-string key without a value")
			}
			return nil
		})
	})
}
