package node

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"go.uber.org/zap"
)

// A cluster master that restarts without its data (no RDB, no AOF: a
// server without persistence killed and restarted at once, or a lost
// disk) must not wipe its replica, which still holds the data. Redis lets
// it come back as the master of its slots with an empty data set, and its
// replica then resyncs to that empty set. Here such a master serves none
// of its slots and lets no replica sync until a replica holding the data
// took the slots over (the node then follows it and gets the data back),
// or until it is clear that none can (failover/datalost.go has the rules
// and the bounds). Outside cluster mode nothing changes: a standalone
// master has no way to hand its role to its replica, and a replica follows
// whatever master REPLICAOF names, as in Redis.
//
// Meanwhile its slots answer -CLUSTERDOWN, what Redis answers when a slot
// has no serving master (as during a failover): the situation is one, and
// the slots are about to move. Cluster clients treat it as transient —
// go-redis retries it like TRYAGAIN, redis-py also reloads its slot map on
// it, which is what finds the replica once it took over — while TRYAGAIN
// means "a multi-key request during resharding" to Redis users. PSYNC is
// answered -LOADING, which a redis-server replica also takes as "try again
// later" (shoal's link retries every second).

const (
	msgDataLostSlot = "CLUSTERDOWN The master of this slot restarted without its data and waits for a replica holding it to take over"
	msgDataLostSync = "LOADING This master restarted without its data and waits for a replica holding it to take over"
)

// dataSetFilesExist reports whether a data set file exists to be loaded:
// dir/dbfilename, or with appendonly yes an AOF (a manifest in
// dir/appenddirname, or the single-file dir/appendfilename of Redis 6).
// An existing file, even one holding no keys, means the data set really is
// what it holds; none at all means the data, if any, was lost.
func (s *Server) dataSetFilesExist() bool {
	dir := s.cfg.String("dir")
	paths := []string{s.rdbPath()}
	if s.cfg.Bool("appendonly") {
		name := s.cfg.String("appendfilename")
		paths = append(paths, filepath.Join(dir, s.cfg.String("appenddirname"), name+".manifest"),
			filepath.Join(dir, name))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true // an unreadable file is not a missing one
		}
	}
	return false
}

// checkRestartedWithoutData is called at start-up once the data set is
// loaded: a cluster master that owns slots according to nodes.conf and
// found no data set file waits for a replica holding the data to take over,
// when one may exist; a node that loaded keys says so on the bus until it
// syncs (its replication offset, 0 after a restart, does not show them).
func (s *Server) checkRestartedWithoutData(found bool) {
	if s.cluster == nil {
		return
	}
	if found {
		if s.ks.DB(0).Size() > 0 {
			s.cluster.RestartedWithData()
		}
		return
	}
	if s.cluster.RestartedWithoutData() {
		s.dataLost.Store(true)
	}
}

// endDataLost: the bus stopped waiting for a takeover (a replica took the
// slots, or none can): the slots this node still owns are served again.
func (s *Server) endDataLost() {
	if s.dataLost.Swap(false) {
		s.log.Warn("cluster: no longer waiting for a replica to take over the lost data",
			zap.Bool("master", s.cluster.Myself().Master == ""))
	}
}

// RefuseEmptyHistory is the replica's guard (replication.EmptyHistoryGuard):
// its master answered PSYNC with a new history behind this replica's
// offset, a master that restarted without its data. The replica refuses
// to load it while it holds keys and may take over instead (the bus then
// starts that takeover).
func (f replicaFSM) RefuseEmptyHistory(masterNodeID string) bool {
	s := f.r.s
	if s.cluster == nil || s.ks.DB(0).Size() == 0 {
		return false
	}
	return s.cluster.MasterRestartedEmpty(masterNodeID)
}
