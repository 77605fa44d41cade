package replication

import "encoding/binary"

// EmptyRDB returns a valid RDB version 10 file holding no keys (magic,
// EOF opcode, CRC64 checksum), the payload a fork-less full sync sends
// after +FULLRESYNC: the data itself follows in the stream as slot images.
func EmptyRDB() []byte {
	b := []byte("REDIS0010")
	b = append(b, 0xFF)
	var sum [8]byte
	binary.LittleEndian.PutUint64(sum[:], CRC64(0, b))
	return append(b, sum[:]...)
}

// crc64Table is Redis's CRC-64/Jones (reflected polynomial
// 0x95AC9329AC4BC9B5, init 0, no final xor), the RDB checksum.
var crc64Table = func() (t [256]uint64) {
	const poly = 0x95AC9329AC4BC9B5
	for i := range t {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC64 continues Redis's crc64 over p.
func CRC64(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc = crc64Table[byte(crc)^b] ^ crc>>8
	}
	return crc
}
