package rdb

import "hash/crc64"

// jonesTable is the table of the CRC-64 variant Redis uses for DUMP
// payloads and RDB files (crc64.c: "Jones" polynomial 0xad93d23594c935a9,
// reflected in and out, initial value 0, no final xor). Go's hash/crc64
// implements the reflected algorithm and takes the polynomial in its
// reversed bit order, 0x95ac9329ac4bc9b5; it complements the running value
// on entry and exit, which the complements in CRC64 undo. The table is
// written once at package initialisation and only read afterwards.
var jonesTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// CRC64 returns Redis's crc64(0, b) (check value: CRC64("123456789") ==
// 0xe9c6d914c4b8d9ca).
func CRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), jonesTable, b) }
