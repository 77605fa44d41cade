package rdb

import (
	"encoding/binary"
	"sync"
)

// Redis's CRC-64 for DUMP payloads and RDB files (crc64.c): the "Jones"
// polynomial 0xad93d23594c935a9, reflected in and out, initial value 0, no
// final xor. In the reflected (LSB-first) form the polynomial is taken in
// reversed bit order.
const jonesPolyReflected = 0x95ac9329ac4bc9b5

// jonesTables holds the slicing-by-8 tables: jonesTables[0] is the
// byte-at-a-time table, jonesTables[k][b] the CRC of byte b followed by k
// zero bytes. Built on first use (16 KB, only a node that saves, loads or
// dumps ever touches it) and read-only afterwards.
//
// hash/crc64 is not used for this: with any table but its two built-in
// ones it builds a 16 KB slicing table on every call of 2 KB or more (an
// RDB file is checksummed in 64 KB pieces), and its first use keeps the
// built-in ISO and ECMA tables, 32 KB, resident for good.
var (
	jonesTables     [8][256]uint64
	jonesTablesOnce sync.Once
)

func buildJonesTables() {
	t := &jonesTables
	for i := range 256 {
		crc := uint64(i)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ jonesPolyReflected
			} else {
				crc >>= 1
			}
		}
		t[0][i] = crc
	}
	for i := range 256 {
		crc := t[0][i]
		for k := 1; k < 8; k++ {
			crc = t[0][byte(crc)] ^ crc>>8
			t[k][i] = crc
		}
	}
}

// crc64Update continues Redis's CRC-64 crc over p (crc64(crc, p) in
// crc64.c): eight bytes per step, then byte by byte.
func crc64Update(crc uint64, p []byte) uint64 {
	jonesTablesOnce.Do(buildJonesTables)
	t := &jonesTables
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

// CRC64 returns Redis's crc64(0, b) (check value: CRC64("123456789") ==
// 0xe9c6d914c4b8d9ca).
func CRC64(b []byte) uint64 { return crc64Update(0, b) }
