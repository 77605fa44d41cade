// Package slots maps keys to Redis Cluster hash slots: CRC16/XMODEM over the
// key (or its hash tag) modulo 16384.
package slots

import "github.com/sigurn/crc16"

// Count is the number of hash slots.
const Count = 16384

// xmodem is sigurn/crc16's CRC-16/XMODEM table; xmodemBytes is the same
// 256-entry table read out through crc16.Update, so that KeySlot's loop
// runs without the library's per-byte reflection check (XMODEM reflects
// nothing). KeySlot runs for every keyed command. Both are immutable after
// package initialisation.
var (
	xmodem      = crc16.MakeTable(crc16.CRC16_XMODEM)
	xmodemBytes = func() (t [256]uint16) {
		for i := range t {
			t[i] = crc16.Update(0, []byte{byte(i)}, xmodem)
		}
		return t
	}()
)

// KeySlot returns the hash slot of key. If the key contains a hash tag — a
// '{' followed later by a '}' with at least one byte between them (the first
// '}' after the first '{') — only the tag is hashed.
func KeySlot(key []byte) uint16 {
	var crc uint16 // XMODEM: init 0, no reflection, no final xor
	for _, b := range HashTag(key) {
		crc = crc<<8 ^ xmodemBytes[byte(crc>>8)^b]
	}
	return crc & (Count - 1)
}

// HashTag returns the part of key that is hashed: the content of the first
// non-empty {...} section, or the whole key.
func HashTag(key []byte) []byte {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}" : hash the whole key
				}
				return key[i+1 : j]
			}
		}
		return key // no closing brace after the first '{'
	}
	return key
}
