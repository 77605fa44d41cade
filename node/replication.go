package node

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/replication"
	"github.com/shoal-db/shoal/strconvx"
	"go.uber.org/zap"
)

// This file wires package replication into the node: the write-effect feed
// consumer that fills the backlog, the replication cron and the write
// guards. The master side of a full sync is in replication_fullsync.go,
// the replica side in replication_replica.go, the commands in
// cmd_replication.go.

// replState is the node's replication state. The Server owns one.
type replState struct {
	s *Server
	m *replication.Master

	feedOn atomic.Bool // registered as an EffectFeed
	// proxy: this node is a replica; its own writes are not propagated, its
	// master's stream is (FeedRaw).
	proxy atomic.Bool

	// syncer serves the replicas waiting for a full sync
	// (replication_fullsync.go).
	syncer *fullSyncer

	syncFull, syncPartialOK, syncPartialErr atomic.Int64
	goodReplicas                            atomic.Int64 // for min-replicas-to-write
	guards                                  atomic.Bool  // a write may be refused (replica or min-replicas)
	// roleGen counts the changes to a replica (follow): a command that
	// passed the guards under another generation is judged again once it
	// holds its run slot (node/dispatch.go).
	roleGen atomic.Uint64
	// started is set once the server listens (startReplication): role
	// changes the cluster bus reports before are taken from nodes.conf then.
	started atomic.Bool
	// diskErrorLogged: unix ms of the last "applying a command even though
	// it is unable to write to disk" line.
	diskErrorLogged atomic.Int64

	// Replica side (replication_replica.go): the link to this node's
	// master; its apply lock makes, on a replica, the master link's
	// apply-then-forward of one command one step for a sub-replica's full
	// sync, whose snapshot's instant holds it.
	rep    *replication.Replica
	roleMu sync.Mutex // serialises follow / unfollow (REPLICAOF, the bus, startup)
}

func newReplState(s *Server) *replState {
	r := &replState{s: s}
	cfg := s.cfg
	r.m = replication.NewMaster(replication.Config{
		BacklogSize: func() int { return int(cfg.Int("repl-backlog-size")) },
		OutputLimit: func() (uint64, uint64, int64) {
			l := cfg.ClientOutputBufferLimits()[config.ClientReplica]
			return l.HardBytes, l.SoftBytes, l.SoftSeconds
		},
		OnDrop: func(l *replication.Link, reason string) {
			s.log.Warn("Client scheduled to be closed ASAP for overcoming of output buffer limits: replica dropped", zap.String("reason", reason))
		},
	})
	r.rep = replication.NewReplica(r.m, replicaFSM{r}, s.log)
	r.syncer = newFullSyncer(r)
	cfg.OnChange("repl-backlog-size", func(string) error {
		r.m.ResizeBacklog(int(cfg.Int("repl-backlog-size")))
		return nil
	})
	for _, name := range []string{"min-replicas-to-write", "min-replicas-max-lag", "replica-read-only", "replica-serve-stale-data"} {
		cfg.OnChange(name, func(string) error {
			// Recounted at once, as Redis's updateGoodSlaves: a write
			// right after CONFIG SET must not wait for the cron.
			r.refreshGoodReplicas()
			r.updateGuards()
			return nil
		})
	}
	r.updateGuards()
	return r
}

// updateGuards keeps the one flag the dispatcher reads on every command.
func (r *replState) updateGuards() {
	r.guards.Store(r.proxy.Load() || r.s.cfg.Int("min-replicas-to-write") > 0 || r.s.loading.active.Load())
}

// Propagate is the EffectFeed: the effect enters the backlog and every
// replica's output.
func (r *replState) Propagate(db int, cmds [][][]byte) {
	if r.proxy.Load() {
		return
	}
	r.m.Propagate(db, cmds)
}

// PropagateLater is Propagate for an event loop's client: flushLater
// writes it to the replicas at the end of the loop's turn.
func (r *replState) PropagateLater(db int, cmds [][][]byte) {
	if r.proxy.Load() {
		return
	}
	r.m.PropagateLater(db, cmds)
}

// flushLater writes to the replicas what the event loops' commands
// propagated (PropagateLater); any goroutine may call it.
func (s *Server) flushLater() {
	if s.repl != nil && s.repl.m != nil {
		s.repl.m.FlushOwed()
	}
}

// ensureFeed registers the feed before the first replica attaches.
func (r *replState) ensureFeed() {
	if r.feedOn.CompareAndSwap(false, true) {
		r.s.AddEffectFeed(r)
	}
}

// ---------------------------------------------------------------- cron

// replicationCron runs once a second: PING to replicas every
// repl-ping-replica-period, ACKs to the master, the good-replica count,
// the backlog's TTL, and the offset published to the cluster bus.
func (r *replState) cron(stop <-chan struct{}) {
	defer r.rep.Stop()
	loops := int64(0)
	r.s.crons.repl.run(stop, func() {
		loops++
		cfg := r.s.cfg
		// No PING while writes are paused (CLIENT PAUSE, a manual
		// failover): the replicas must be able to reach the final offset.
		if r.m.NumLinks() > 0 && !r.proxy.Load() && !r.s.pause.paused() {
			if period := cfg.Int("repl-ping-replica-period"); period > 0 && loops%period == 0 {
				r.m.FeedCommand("PING")
			}
		}
		r.m.RefreshLimits()
		r.refreshGoodReplicas()
		if !r.proxy.Load() && r.m.Expire(time.Duration(cfg.Int("repl-backlog-ttl"))*time.Second) {
			r.s.log.Info("Replication backlog freed after the configured time without replicas")
		}
		if r.s.cluster != nil {
			r.s.cluster.SetReplOffset(r.m.Offset())
		}
		r.rep.SendAck()
	})
}

// ---------------------------------------------------------------- guards

// diskErrorText is writeCommandsDeniedByDiskError: the -MISCONF error of a
// failed background save with stop-writes-on-bgsave-error (checked first,
// as Redis), or of an AOF write error; "" when writes may go on. Two
// atomic loads when all is well.
func (s *Server) diskErrorText() string {
	if s.rdbSave.lastFailed.Load() && s.rdbErrorDeniesWrites() {
		return msgBgsaveError
	}
	return s.aof.diskErrorText()
}

// replicaDiskError is what a replica does when its master sends a write
// it cannot persist: with replica-ignore-disk-write-errors no (Redis's
// default) it stops, as Redis's serverPanic("Replica was unable to write
// command to disk."), rather than serve data its files do not hold; with
// yes (and for PING) it goes on, saying so once every 10 s.
func (s *Server) replicaDiskError(ping bool) {
	if !ping && !s.cfg.Bool("replica-ignore-disk-write-errors") {
		s.log.Error("Replica was unable to write command to disk.")
		os.Exit(1)
	}
	now := time.Now().UnixMilli()
	if last := s.repl.diskErrorLogged.Load(); now > last+10_000 && s.repl.diskErrorLogged.CompareAndSwap(last, now) {
		s.log.Warn("Replica is applying a command even though it is unable to write to disk.")
	}
}

// replicationAllows refuses a command a replica or a master short of good
// replicas must not run, with Redis's errors. It is on the hot path: one
// atomic load when neither applies.
func (c *Client) replicationAllows(spec *command.Spec) bool {
	r := c.srv.repl
	if msg := c.srv.diskErrorText(); msg != "" {
		// writeCommandsDeniedByDiskError, checked before the replication
		// guards, as in processCommand: writes and PING are refused; the
		// master link must obey, and a replica that cannot persist what
		// it applies stops, unless replica-ignore-disk-write-errors.
		if write, _ := c.commandWrites(spec); write || spec.FullName() == "ping" {
			if !c.isMasterLink() {
				c.rejectCommand(spec, msg)
				return false
			}
			c.srv.replicaDiskError(spec.FullName() == "ping")
		}
	}
	if c.repl != nil && c.repl.link != nil &&
		spec.Flags&(command.FlagWrite|command.FlagReadonly|command.FlagMayReplicate) != 0 {
		// A replica's link only acknowledges (processCommand's check).
		c.rejectCommand(spec, "ERR Replica can't interact with the keyspace")
		return false
	}
	if !r.guards.Load() || c.isMasterLink() {
		return true
	}
	write, denyStale := c.commandWrites(spec)
	cfg := c.srv.cfg
	if r.proxy.Load() {
		// processCommand's order: READONLY, then MASTERDOWN.
		if write && cfg.Bool("replica-read-only") {
			c.rejectCommand(spec, "READONLY You can't write against a read only replica.")
			return false
		}
		if denyStale && r.stale() {
			c.rejectCommand(spec, errMasterDown)
			return false
		}
		return !c.loadingRefuses(spec)
	}
	if write {
		if min := cfg.Int("min-replicas-to-write"); min > 0 && r.goodReplicas.Load() < min {
			c.rejectCommand(spec, "NOREPLICAS Not enough good replicas to write.")
			return false
		}
	}
	return !c.loadingRefuses(spec)
}

// commandWrites reports whether spec writes and whether it is refused on
// a stale replica. EXEC is judged by what it would run (Redis's
// processCommand looks at the queued commands' flags).
func (c *Client) commandWrites(spec *command.Spec) (write, denyStale bool) {
	write = spec.Flags&command.FlagWrite != 0
	denyStale = spec.Flags&command.FlagStale == 0
	if spec.FullName() == "exec" && c.multi != nil {
		for _, q := range c.multi.queue {
			write = write || q.spec.Flags&command.FlagWrite != 0
			denyStale = denyStale || q.spec.Flags&command.FlagStale == 0
		}
	}
	return write, denyStale
}

// errMasterDown is Redis's shared.masterdownerr.
const errMasterDown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."

// stale reports whether this node is a replica that must not serve data:
// its link is down and replica-serve-stale-data is no.
func (r *replState) stale() bool {
	return r.proxy.Load() && !r.rep.Up() && !r.s.cfg.Bool("replica-serve-stale-data")
}

// refreshGoodReplicas recounts the replicas min-replicas-to-write counts:
// online, acknowledged within min-replicas-max-lag.
func (r *replState) refreshGoodReplicas() {
	maxLag := time.Duration(r.s.cfg.Int("min-replicas-max-lag")) * time.Second
	r.goodReplicas.Store(int64(r.m.GoodLinks(maxLag)))
}

// isMasterLink reports whether c applies this replica's master stream.
func (c *Client) isMasterLink() bool { return c.repl != nil && c.repl.master }

// clientRepl is a client's replication role: a replica of this node
// (link set after PSYNC/SYNC), or this node's master link.
type clientRepl struct {
	master    bool
	link      *replication.Link
	port      int
	ip        string
	psync2    bool       // REPLCONF capa psync2
	eof       bool       // REPLCONF capa eof: reads an RDB with an end mark
	rdbOnly   bool       // REPLCONF rdb-only 1
	filter    syncFilter // REPLCONF rdb-filter-only
	lastAckAt atomic.Int64
	// The master-link client's: linkStop is closed when its link stops;
	// dropped says its last command did not run because of that.
	linkStop <-chan struct{}
	dropped  bool
}

// lowerASCII returns b's ASCII lower case as a string.
func lowerASCII(b []byte) string { return strings.ToLower(string(b)) }

// startReplication starts the replication cron and, when the replicaof
// directive is set (standalone), follows that master.
func (s *Server) startReplication() {
	s.repl.started.Store(true)
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.repl.cron(s.stopCron)
	}()
	go func() {
		defer s.wg.Done()
		s.repl.syncer.run(s.stopCron)
	}()
	go func() {
		defer s.wg.Done()
		s.repl.syncer.keepAlive(s.stopCron)
	}()
	if s.cluster == nil {
		if host, port, ok := s.cfg.ReplicaOf(); ok {
			s.repl.follow(host, port, "", nil)
		}
		return
	}
	// A node that restarts as a replica (nodes.conf) follows its master.
	if me := s.cluster.Myself(); me.Master != "" {
		if m, ok := s.cluster.Node(me.Master); ok {
			s.repl.followClusterRole(m.ID, m.IP, m.Port)
		}
	}
}

// followClusterRole acts on the cluster view's role for this node: follow
// master id (address ip:port, refreshed from the bus on every connect), or
// stop replicating when id is "" (a master keeps its data and shifts its
// replication ID, so former siblings continue from it).
func (r *replState) followClusterRole(id, ip string, port int) {
	if !r.started.Load() {
		// The bus's first notification comes from gossip.New, before the
		// data is loaded and before s.cluster is set: startReplication
		// follows the role nodes.conf gives once the server listens.
		return
	}
	curID, following := r.rep.Following()
	if id == "" {
		if following {
			r.unfollow()
			r.s.log.Info("cluster: replication stopped, this node is a master")
		}
		return
	}
	if following && curID == id {
		return
	}
	r.follow(ip, port, id, nil)
}

// propagateNow puts the running command's argv in the effect feed at once
// (the handler holds the locks that order it) and nothing after it returns.
func (c *Client) propagateNow(args [][]byte) {
	db := int(c.dbIndex.Load())
	if c.LockedDB() != nil {
		db = c.LockedDB().ID()
	}
	c.emitEffects(db, [][][]byte{args}) // the feed, or EXEC's capture (node/multi.go)
	c.NoEffect()
}

// saveInfoAux is what an RDB file written now records of replication, as
// Redis's rdbPopulateSaveInfo: the database the stream is in, the
// replication ID and the offset, so that a replica restarted from the
// file continues with a partial resync. Nothing when the node is in no
// replication chain (no backlog). It runs at the snapshot's instant
// (snapshotRDB's atStart: the gate closed, the master-link apply held).
func (r *replState) saveInfoAux() [][2]string {
	id, off, db, ok := r.m.SaveInfo()
	if !ok {
		return nil
	}
	return [][2]string{{"repl-stream-db", strconv.Itoa(db)}, {"repl-id", id},
		{"repl-offset", strconv.FormatInt(off, 10)}}
}

// replSaveInfo collects an RDB file's replication aux fields.
type replSaveInfo struct {
	id            string
	offset, db    int64
	hasOff, hasDB bool
}

func (i *replSaveInfo) aux(name, value []byte) error {
	switch string(name) {
	case "repl-id":
		if len(value) == 40 {
			i.id = string(value)
		}
	case "repl-offset":
		i.offset, i.hasOff = strconvx.ParseInt(value)
	case "repl-stream-db":
		i.db, i.hasDB = strconvx.ParseInt(value)
	}
	return nil
}

// restoreSaveInfo acts on the replication fields of the RDB file loaded at
// start-up, as Redis's loadDataFromDisk: a replica takes the ID, offset
// and stream database as those of its (cached) master, so its first PSYNC
// can continue; a master keeps the file's ID as ID2, valid up to the
// file's offset, and places the DELs its load fed (node/cmd_dump_save.go
// loadRDB) after that offset, so its former replicas continue with
// +CONTINUE and drop the keys that expired while it was down. Without
// valid fields a master frees the backlog the load fed: nobody can
// continue from it.
func (r *replState) restoreSaveInfo(i replSaveInfo, replica bool) {
	if i.id == "" || !i.hasOff || i.offset < 0 || !i.hasDB || i.db < 0 || i.db >= int64(r.s.ks.NumDBs()) {
		if !replica {
			r.m.DropLoadFeed()
		}
		return
	}
	if replica {
		r.m.ResetTo(i.id, i.offset, int(i.db))
	} else {
		r.m.RebaseOnFile(i.id, i.offset)
	}
	r.s.log.Info("Restored the replication ID and offset from the RDB file",
		zap.String("replid", i.id), zap.Int64("offset", i.offset))
}

// ReplOffset is this node's replication offset (master_repl_offset; on a
// replica the processed offset of its master's stream), what the cluster
// bus announces and failover ranks replicas by.
func (r *replState) ReplOffset() int64 { return r.m.Offset() }

// paused reports whether a CLIENT PAUSE (of writes or of everything) is in
// force.
func (p *clientPause) paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.until.IsZero() && time.Now().Before(p.until)
}
