// Package resp holds the RESP encoding shared by everything that sends
// commands to another server: the replication stream, MIGRATE, atomic slot
// migration.
package resp

import "strconv"

// AppendCommand appends argv as a RESP multibulk request (the form every
// command takes on the wire and in the replication stream).
func AppendCommand[T ~string | ~[]byte](dst []byte, argv ...T) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(argv)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range argv {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
