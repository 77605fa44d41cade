// Package resp is shoal's one implementation of the Redis protocol (RESP2
// and RESP3), with no server state of its own:
//
//   - RequestReader: a client connection's requests, parsed and bounded as
//     Redis parses them (inline and multibulk, Redis's protocol error texts,
//     proto-max-bulk-len, client-query-buffer-limit, the unauthenticated
//     limits), handed out as canonical RESP a batch at a time (request.go);
//   - Writer: replies, RESP3 types degraded to RESP2 as Redis 7.0 does
//     (writer.go);
//   - AppendCommand: the command encoder everything that sends commands to
//     another server uses (the replication stream, MIGRATE, atomic slot
//     migration);
//   - StreamReader: a master's replication stream, read by a replica
//     (stream.go);
//   - ReplyReader: the replies of a server shoal sent commands to (reply.go).
//
// The server-side glue (limits from the configuration, statistics,
// closing connections) stays with the server (node).
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
