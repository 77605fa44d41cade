package node

import (
	"strconv"

	"github.com/shoal-db/shoal/replication"
)

// fullSyncPreamble returns the builder of a full sync's RDB payload
// (replication.SyncPreamble): the function libraries are read now; the
// caller holds the execution gate.
func (s *Server) fullSyncPreamble() func(streamDB int) []byte {
	libs := s.tx.functions.sortedLibs()
	codes := make([][]byte, len(libs))
	for i, l := range libs {
		codes[i] = l.code
	}
	return func(streamDB int) []byte {
		// Read with every other client stopped, at the sync's instant.
		var keys int64
		for db := 0; db < s.ks.NumDBs(); db++ {
			keys += s.ks.DB(db).Size()
		}
		return replication.SyncPreamble(Version, codes, streamDB,
			[2]string{replication.AuxKeys, strconv.FormatInt(keys, 10)})
	}
}
