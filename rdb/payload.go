package rdb

import (
	"encoding/binary"
	"errors"

	"github.com/shoal-db/shoal/store"
)

// footerSize is the DUMP payload footer: RDB version (u16 LE) + CRC64 (u64 LE).
const footerSize = 10

// ErrChecksum is a payload whose footer is missing, whose RDB version is
// newer than Version, or whose CRC64 does not match: RESTORE answers
// "DUMP payload version or checksum are wrong".
var ErrChecksum = errors.New("rdb: DUMP payload version or checksum are wrong")

// AppendPayload appends e's DUMP payload (createDumpPayload): the value as
// AppendValue writes it, the RDB version, and the CRC64 of all that.
func (en Encoder) AppendPayload(dst []byte, e *store.Entry) []byte {
	start := len(dst)
	dst = en.AppendValue(dst, e)
	dst = binary.LittleEndian.AppendUint16(dst, Version)
	return binary.LittleEndian.AppendUint64(dst, CRC64(dst[start:]))
}

// DumpPayload returns e's DUMP payload in a new slice.
func (en Encoder) DumpPayload(e *store.Entry) []byte { return en.AppendPayload(nil, e) }

// DumpPayload returns e's DUMP payload with rdbcompression yes.
func DumpPayload(e *store.Entry) []byte { return Compressed.DumpPayload(e) }

// VerifyPayload checks a DUMP payload's footer as verifyDumpPayload does:
// at least the footer's 10 bytes, an RDB version no newer than Version and
// a matching CRC64.
func VerifyPayload(p []byte) error {
	if len(p) < footerSize {
		return ErrChecksum
	}
	footer := p[len(p)-footerSize:]
	if binary.LittleEndian.Uint16(footer) > Version {
		return ErrChecksum
	}
	if CRC64(p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return ErrChecksum
	}
	return nil
}

// DecodePayload verifies a DUMP payload and decodes its value. Errors are
// ErrChecksum or ErrBadData. Bytes between the value and the footer are
// ignored, as Redis ignores them.
func DecodePayload(p []byte, lim Limits) (Object, error) {
	if err := VerifyPayload(p); err != nil {
		return Object{}, err
	}
	o, _, err := DecodeValue(p[:len(p)-footerSize], lim)
	if err != nil {
		return Object{}, ErrBadData
	}
	return o, nil
}
