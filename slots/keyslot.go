// Package slots maps keys to Redis Cluster hash slots: CRC16/XMODEM over the
// key (or its hash tag) modulo 16384.
package slots

import (
	"bytes"

	"github.com/sigurn/crc16"
)

// Count is the number of hash slots.
const Count = 16384

// xmodem is sigurn/crc16's CRC-16/XMODEM table; xmodemBytes is the same
// 256-entry table read out through crc16.Update, so that KeySlot's loop
// runs without the library's per-byte reflection check (XMODEM reflects
// nothing). KeySlot runs for every keyed command. Both are immutable after
// package initialisation.
//
// xmodemPairs[b] is the CRC of byte b followed by a zero byte: with it
// KeySlot folds two bytes per step (CRC is linear, so the register XOR the
// next two bytes, split into its high and low byte, gives
// xmodemPairs[hi] ^ xmodemBytes[lo]), halving the loop's dependency chain.
var (
	xmodem      = crc16.MakeTable(crc16.CRC16_XMODEM)
	xmodemBytes = func() (t [256]uint16) {
		for i := range t {
			t[i] = crc16.Update(0, []byte{byte(i)}, xmodem)
		}
		return t
	}()
	xmodemPairs = func() (t [256]uint16) {
		for i := range t {
			t[i] = crc16.Update(0, []byte{byte(i), 0}, xmodem)
		}
		return t
	}()
)

// KeySlot returns the hash slot of key. If the key contains a hash tag — a
// '{' followed later by a '}' with at least one byte between them (the first
// '}' after the first '{') — only the tag is hashed.
func KeySlot(key []byte) uint16 {
	b := HashTag(key)
	var crc uint16 // XMODEM: init 0, no reflection, no final xor
	for len(b) >= 2 {
		x := crc ^ (uint16(b[0])<<8 | uint16(b[1]))
		crc = xmodemPairs[x>>8] ^ xmodemBytes[byte(x)]
		b = b[2:]
	}
	if len(b) == 1 {
		crc = crc<<8 ^ xmodemBytes[byte(crc>>8)^b[0]]
	}
	return crc & (Count - 1)
}

// HashTag returns the part of key that is hashed: the content of the first
// non-empty {...} section, or the whole key.
func HashTag(key []byte) []byte {
	i := bytes.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := bytes.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key // no closing brace after the first '{', or "{}": hash the whole key
	}
	return key[i+1 : i+1+j]
}
