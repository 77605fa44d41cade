package node

import (
	"time"

	"github.com/shoal-db/shoal/gossip"
	"go.uber.org/zap"
)

// This file is CLUSTER FAILOVER [FORCE|TAKEOVER] (standalone FAILOVER:
// node/failover_standalone.go) and the server's part of
// the failover layer (package failover, run inside the cluster state by
// package gossip): pausing writers while this master is failed over
// manually, and giving the bus this node's current replication offset.
//
// Role lives in the gossip state: a promotion, a demotion through UPDATE or
// a replica migration changes myself there, and the server follows it
// through OnChange's RoleChanged (replication starts or stops).

func failoverHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"failover":         cmdFailover,
		"cluster|failover": clusterOnly(cmdClusterFailover),
	}
}

// cmdClusterFailover is CLUSTER FAILOVER [FORCE|TAKEOVER]: +OK once the
// failover is started (it completes asynchronously, as in Redis).
func cmdClusterFailover(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	var mode []byte
	if len(args) == 3 {
		mode = args[2]
	}
	c.clusterReply(c.srv.cluster.Failover(mode))
}

// replOffsetSource is what the replication layer implements so that the
// failover layer sees this node's replication offset as it is now (the
// master's final offset after its writers paused for a manual failover,
// the replica's processed offset it must reach, the offsets replicas are
// ranked by). Without it the bus uses the offset last given to
// SetReplOffset.
type replOffsetSource interface {
	ReplOffset() int64
}

// announcedOffset is the replication offset the bus announces (Redis's
// replicationGetSlaveOffset for a replica): master_repl_offset — on a
// replica too, the master's stream passes through this backlog, so it is
// the processed offset (the once-a-second SetReplOffset of the replication
// cron is too stale for the manual failover's final offset) — but 0 while
// a replica's full sync is loading, as Redis's replica has no master
// client then: CLUSTER SLOTS leaves such a replica out and CLUSTER SHARDS
// shows it "loading".
func (r *replState) announcedOffset() int64 {
	if r.proxy.Load() && r.rep.Syncing() {
		return 0
	}
	return r.m.Offset()
}

// replDataAgeSource is what the replication layer implements so that
// cluster-replica-validity-factor applies to the replication link, as in
// Redis: the age of this replica's data (since the master's last byte while
// the link is up, else since it went down), false when never connected.
type replDataAgeSource interface {
	ReplDataAge() (time.Duration, bool)
}

// wireFailover connects the server to the failover layer once the bus
// exists: the replication offset source (when the replication layer
// provides one) and CONFIG SET of the directives only the failover uses.
func (s *Server) wireFailover() {
	if s.cluster == nil {
		return
	}
	switch src := any(s.repl).(type) {
	case *replState:
		if src != nil && src.m != nil {
			s.cluster.SetReplOffsetSource(src.announcedOffset)
		}
	case replOffsetSource:
		s.cluster.SetReplOffsetSource(src.ReplOffset)
	}
	switch src := any(s.repl).(type) {
	case replDataAgeSource:
		s.cluster.SetReplDataAgeSource(src.ReplDataAge)
	case *replState:
		if src != nil {
			// What INFO replication shows as master_last_io_seconds_ago
			// and master_link_down_since_seconds.
			s.cluster.SetReplDataAgeSource(src.rep.DataAge)
		}
	}
	for _, name := range []string{"cluster-replica-validity-factor", "cluster-migration-barrier", "repl-ping-replica-period"} {
		s.cfg.OnChange(name, func(string) error {
			s.cluster.SetOptions(s.clusterOptions())
			return nil
		})
	}
}

// failoverOptions adds the failover settings to the bus options.
func (s *Server) failoverOptions(o gossip.Options) gossip.Options {
	o.ValidityFactor = int(s.cfg.Int("cluster-replica-validity-factor"))
	o.MigrationBarrier = int(s.cfg.Int("cluster-migration-barrier"))
	o.ReplPingPeriod = time.Duration(s.cfg.Int("repl-ping-replica-period")) * time.Second
	return o
}

// applyFailoverPause pauses or resumes writers for a manual failover of
// this master (Redis's pauseClients(PAUSE_DURING_FAILOVER, ...,
// CLIENT_PAUSE_WRITE)): writes wait, reads go on, and the replica catches
// up to an offset that no longer moves.
func (s *Server) applyFailoverPause(ch gossip.Change) {
	switch {
	case ch.PauseWrites > 0:
		s.pause.Pause(ch.PauseWrites, false)
		s.log.Warn("cluster: manual failover requested, writes paused", zap.Duration("for", ch.PauseWrites))
	case ch.ResumeWrites:
		s.pause.Unpause()
		s.log.Warn("cluster: manual failover over, writes resumed")
	}
}
