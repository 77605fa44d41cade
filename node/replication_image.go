package node

import "github.com/shoal-db/shoal/replication"

// fullSyncPreamble returns the builder of a full sync's RDB payload
// (replication.SyncPreamble): the function libraries are read now; the
// caller holds the execution gate.
func (s *Server) fullSyncPreamble() func(streamDB int) []byte {
	libs := s.tx.functions.sortedLibs()
	codes := make([][]byte, len(libs))
	for i, l := range libs {
		codes[i] = l.code
	}
	return func(streamDB int) []byte { return replication.SyncPreamble(Version, codes, streamDB) }
}
