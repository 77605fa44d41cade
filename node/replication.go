package node

import (
	"github.com/shoal-db/shoal/resp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/replication"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
	"go.uber.org/zap"
)

// This file wires package replication into the node: the write-effect feed
// consumer that fills the backlog, the master side of a full sync (slot
// images, DESIGN.md §5), and the replication cron. The replica side is in
// replication_replica.go, the commands in cmd_replication.go.

// replState is the node's replication state. The Server owns one.
type replState struct {
	s *Server
	m *replication.Master

	feedOn atomic.Bool // registered as an EffectFeed
	// proxy: this node is a replica; its own writes are not propagated, its
	// master's stream is (FeedRaw).
	proxy atomic.Bool

	// syncs are the full syncs in progress (copy-on-write list).
	syncMu sync.Mutex
	syncs  atomic.Pointer[[]*fullSync]

	syncFull, syncPartialOK, syncPartialErr atomic.Int64
	bytesIn                                 atomic.Int64 // read from this node's master (INFO total_net_repl_input_bytes)
	goodReplicas                            atomic.Int64 // for min-replicas-to-write
	guards                                  atomic.Bool  // a write may be refused (replica or min-replicas)
	// roleGen counts the changes to a replica (follow): a command that
	// passed the guards under another generation is judged again once it
	// holds its run slot (node/dispatch.go).
	roleGen atomic.Uint64
	// started is set once the server listens (startReplication): role
	// changes the cluster bus reports before are taken from nodes.conf then.
	started atomic.Bool

	// applyMu orders, on a replica, the master link's apply-then-forward of
	// one command against the full-sync walker of a sub-replica: the walker
	// must not image a slot between the two.
	applyMu sync.Mutex

	// Replica side (replication_replica.go).
	roleMu sync.Mutex // serialises follow / unfollow (REPLICAOF, the bus, startup)
	linkMu sync.Mutex
	link   *masterLink
	up     atomic.Bool // master_link_status:up
	sync   atomic.Bool // master_sync_in_progress
	lastIO atomic.Int64
	downAt atomic.Int64 // unix seconds the link went down
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
	r.guards.Store(r.proxy.Load() || r.s.cfg.Int("min-replicas-to-write") > 0)
}

// Propagate is the EffectFeed: the effect enters the backlog and every
// replica's output; during a full sync, slot images are inserted first
// where the command needs them.
func (r *replState) Propagate(db int, cmds [][][]byte) {
	if r.proxy.Load() {
		return
	}
	if r.syncs.Load() == nil {
		r.m.Propagate(db, cmds, nil)
		return
	}
	r.m.Propagate(db, cmds, func() { r.beforeSyncLocked(db, cmds, false) })
}

// ensureFeed registers the feed before the first replica attaches.
func (r *replState) ensureFeed() {
	if r.feedOn.CompareAndSwap(false, true) {
		r.s.AddEffectFeed(r)
	}
}

// ---------------------------------------------------------------- full sync

// fullSync is one replica's fork-less full sync: the walker images every
// (db, slot) once, at the stream position where it holds the slot's lock.
// walked and touched are guarded by the Master's lock.
type fullSync struct {
	link    *replication.Link // nil until the replica is attached
	walked  [][]bool          // [db][slot]: the image was sent
	touched [][]bool          // [db][slot]: a write reached the replica before its image
}

func (r *replState) addSync(fs *fullSync) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	var next []*fullSync
	if cur := r.syncs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, fs)
	r.syncs.Store(&next)
}

func (r *replState) removeSync(fs *fullSync) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	var next []*fullSync
	if cur := r.syncs.Load(); cur != nil {
		for _, x := range *cur {
			if x != fs {
				next = append(next, x)
			}
		}
	}
	if len(next) == 0 {
		r.syncs.Store(nil)
		return
	}
	r.syncs.Store(&next)
}

// newFullSync returns a sync's empty bookkeeping; its link is set (under
// the Master's lock) once the replica is attached.
func (r *replState) newFullSync() *fullSync {
	n := r.s.ks.NumDBs()
	return &fullSync{walked: make([][]bool, n), touched: make([][]bool, n)}
}

// dbSlot names one slot of one database.
type dbSlot struct {
	db   int
	slot uint16
}

// effectSlots lists the (db, slot) pairs one effect command touches, with
// the command table's own key extraction (one extractor). MOVE and COPY ...
// DB also touch the other database. keyless reports a command that touches
// whole databases (FLUSHALL, FLUSHDB, SWAPDB).
func (r *replState) effectSlots(db int, argv [][]byte, out []dbSlot) []dbSlot {
	spec, unknown := r.s.table.lookup(argv)
	if spec == nil || unknown {
		return out
	}
	keys, err := commandKeys(spec, argv, nil)
	if err != nil {
		return out
	}
	other := -1
	switch spec.fullName {
	case "move":
		if n, ok := strconvx.ParseInt(argv[2]); ok {
			other = int(n)
		}
	case "copy":
		for j := 3; j+1 < len(argv); j++ {
			if argIs(argv[j], "db") {
				if n, ok := strconvx.ParseInt(argv[j+1]); ok {
					other = int(n)
				}
			}
		}
	}
	for i, p := range keys {
		sl := slots.KeySlot(argv[p])
		out = append(out, dbSlot{db, sl})
		if other >= 0 && other < r.s.ks.NumDBs() && (spec.fullName == "move" || i == 1) {
			out = append(out, dbSlot{other, sl})
		}
	}
	return out
}

// beforeSyncLocked runs under the Master's lock before an effect enters
// the stream while full syncs are in progress. It records the slots the
// effect touches, and for a command that spans walked and unwalked slots
// (it read an unwalked slot to write a walked one, or the reverse), sends
// the unwalked slots' images first: the command holds their locks, and the
// replica, replaying the command after the images, computes what the master
// did.
//
// On a replica (chained replication) the master link calls it before
// applying a command, holding applyMu and no slot lock: lockSlots says to
// take each imaged slot's lock.
func (r *replState) beforeSyncLocked(db int, cmds [][][]byte, lockSlots bool) {
	syncs := r.syncs.Load()
	if syncs == nil {
		return
	}
	var pairs []dbSlot
	for _, argv := range cmds {
		if len(argv) > 0 && argIs(argv[0], "swapdb") && len(argv) == 3 {
			a, okA := strconvx.ParseInt(argv[1])
			b, okB := strconvx.ParseInt(argv[2])
			if okA && okB {
				for _, fs := range *syncs {
					fs.swap(int(a), int(b))
				}
			}
			continue
		}
		pairs = r.effectSlots(db, argv, pairs)
	}
	if len(pairs) == 0 {
		return
	}
	for _, fs := range *syncs {
		if fs.link == nil {
			// Not attached yet: nothing is walked, the writes are noted.
			for _, p := range pairs {
				fs.row(p.db)
				fs.touched[p.db][p.slot] = true
			}
			continue
		}
		if fs.link.ClosedLocked() {
			continue
		}
		mixed, anyWalked := false, false
		for _, p := range pairs {
			fs.row(p.db)
			fs.touched[p.db][p.slot] = true
			if fs.walked[p.db][p.slot] {
				anyWalked = true
			}
		}
		if anyWalked {
			for _, p := range pairs {
				if !fs.walked[p.db][p.slot] {
					mixed = true
				}
			}
		}
		if !mixed {
			continue
		}
		for _, p := range pairs {
			if fs.walked[p.db][p.slot] {
				continue
			}
			// The command holds this slot's lock (it is one of its keys),
			// or, on a replica, nothing else writes it while applyMu is held.
			d := r.s.ks.DB(p.db)
			if lockSlots {
				d.Lock(p.slot)
			}
			img, _ := appendSlotImage(nil, d, p.db, p.slot, nil)
			if lockSlots {
				d.Unlock(p.slot)
			}
			fs.link.QueueImageLocked(img)
			fs.walked[p.db][p.slot] = true
		}
	}
}

// row makes sure db's rows exist (under the Master's lock).
func (fs *fullSync) row(db int) {
	if fs.walked[db] == nil {
		fs.walked[db] = make([]bool, store.NumSlots)
		fs.touched[db] = make([]bool, store.NumSlots)
	}
}

// swap follows SWAPDB: the replica swaps its databases, images included.
func (fs *fullSync) swap(a, b int) {
	if a < 0 || b < 0 || a >= len(fs.walked) || b >= len(fs.walked) {
		return
	}
	fs.row(a)
	fs.row(b)
	fs.walked[a], fs.walked[b] = fs.walked[b], fs.walked[a]
	fs.touched[a], fs.touched[b] = fs.touched[b], fs.touched[a]
}

// imageThrottle is how many bytes a syncing replica may have queued before
// the walker waits for its socket (images are not bounded by the output
// limit; the walker is).
const imageThrottle = 8 << 20

// runFullSync walks every slot of every database and images it into the
// link's output, then marks the replica online.
func (r *replState) runFullSync(fs *fullSync) {
	ks := r.s.ks
	link := fs.link
	defer r.removeSync(fs)
	start := time.Now()
	var buf, scratch []byte
	// The walker waits while a transaction or script runs with the
	// execution gate closed (node/multi.go): such a run propagates its
	// effects when it ends, after its per-command locks are gone, and an
	// image taken in between would be followed by effects already in it.
	// The gate's owner does not wait for the walker: a slot begun just as
	// the gate closes is still imaged, a narrow window that remains.
	gate := &Client{srv: r.s}
	for dbID := 0; dbID < ks.NumDBs(); dbID++ {
		db := ks.ExistingDB(dbID)
		if db == nil {
			// Never used: every write to it is in the stream after the
			// empty RDB. (SWAPDB may bring a used one here later; it
			// carries its own rows.)
			r.m.Locked(func() {
				fs.row(dbID)
				for i := range fs.walked[dbID] {
					fs.walked[dbID][i] = true
				}
			})
			continue
		}
		for slot := 0; slot < store.NumSlots; slot++ {
			for link.Pending() > imageThrottle {
				select {
				case <-link.Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
			// SWAPDB may have replaced the database under this number: take
			// the current one, under the slot lock, each time.
			db = ks.DB(dbID)
			gate.enterRunWaiting()
			r.applyMu.Lock()
			db.Lock(uint16(slot))
			// The image is built under the slot lock only; writers of other
			// slots wait for the fan-out lock just while it is queued.
			empty := db.SlotSize(uint16(slot)) == 0
			if !empty {
				buf, scratch = appendSlotImage(buf[:0], db, dbID, uint16(slot), scratch)
			}
			r.m.Locked(func() {
				fs.row(dbID)
				if fs.walked[dbID][slot] || link.ClosedLocked() {
					return
				}
				fs.walked[dbID][slot] = true
				if empty {
					if !fs.touched[dbID][slot] {
						return // empty on both sides
					}
					buf, scratch = appendSlotImage(buf[:0], db, dbID, uint16(slot), scratch)
				}
				link.QueueImageLocked(buf)
			})
			db.Unlock(uint16(slot))
			r.applyMu.Unlock()
			gate.leaveRun()
			select {
			case <-link.Done():
				return
			default:
			}
		}
	}
	r.m.Locked(func() {
		link.QueueImageLocked(resp.AppendCommand(nil, imageCommand, "DONE"))
	})
	link.Online()
	r.s.log.Info("Synchronization with replica succeeded (slot images sent)", zap.Duration("took", time.Since(start)))
}

// ---------------------------------------------------------------- cron

// replicationCron runs once a second: PING to replicas every
// repl-ping-replica-period, ACKs to the master, the good-replica count,
// the backlog's TTL, and the offset published to the cluster bus.
func (r *replState) cron(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	loops := int64(0)
	for {
		select {
		case <-stop:
			r.stopLink()
			return
		case <-t.C:
		}
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
		r.sendAck()
	}
}

// ---------------------------------------------------------------- guards

// replicationAllows refuses a command a replica or a master short of good
// replicas must not run, with Redis's errors. It is on the hot path: one
// atomic load when neither applies.
func (c *Client) replicationAllows(spec *CommandSpec) bool {
	r := c.srv.repl
	if c.srv.rdbSave.lastFailed.Load() && !c.isMasterLink() && c.srv.rdbErrorDeniesWrites() {
		// stop-writes-on-bgsave-error (node/persistence.go): checked before
		// the replication guards, as in processCommand; PING too.
		if write, _ := c.commandWrites(spec); write || spec.fullName == "ping" {
			c.rejectCommand(spec, msgBgsaveError)
			return false
		}
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
		return true
	}
	if write {
		if min := cfg.Int("min-replicas-to-write"); min > 0 && r.goodReplicas.Load() < min {
			c.rejectCommand(spec, "NOREPLICAS Not enough good replicas to write.")
			return false
		}
	}
	return true
}

// commandWrites reports whether spec writes and whether it is refused on
// a stale replica. EXEC is judged by what it would run (Redis's
// processCommand looks at the queued commands' flags).
func (c *Client) commandWrites(spec *CommandSpec) (write, denyStale bool) {
	write = spec.Flags&FlagWrite != 0
	denyStale = spec.Flags&FlagStale == 0
	if spec.fullName == "exec" && c.multi != nil {
		for _, q := range c.multi.queue {
			write = write || q.spec.Flags&FlagWrite != 0
			denyStale = denyStale || q.spec.Flags&FlagStale == 0
		}
	}
	return write, denyStale
}

// errMasterDown is Redis's shared.masterdownerr.
const errMasterDown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."

// stale reports whether this node is a replica that must not serve data:
// its link is down and replica-serve-stale-data is no.
func (r *replState) stale() bool {
	return r.proxy.Load() && !r.up.Load() && !r.s.cfg.Bool("replica-serve-stale-data")
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
	psync2    bool
	lastAckAt atomic.Int64
}

// lowerASCII returns b's ASCII lower case as a string.
func lowerASCII(b []byte) string { return strings.ToLower(string(b)) }

// startReplication starts the replication cron and, when the replicaof
// directive is set (standalone), follows that master.
func (s *Server) startReplication() {
	s.repl.started.Store(true)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.repl.cron(s.stopCron)
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
	r.linkMu.Lock()
	cur := r.link
	r.linkMu.Unlock()
	if id == "" {
		if cur != nil {
			r.unfollow()
			r.s.log.Info("cluster: replication stopped, this node is a master")
		}
		return
	}
	if cur != nil && cur.nodeID == id {
		return
	}
	r.follow(ip, port, id, nil)
}

// lockWholeDBs locks every slot of the given databases (in the store's
// database order) and returns the unlock. FLUSHALL, FLUSHDB and SWAPDB hold
// them while they change the data and put their effect in the stream, so
// no write to a slot they cleared can enter the stream between the two.
func lockWholeDBs(dbs ...*store.DB) (unlock func()) {
	sorted := slices.Clone(dbs)
	slices.SortFunc(sorted, func(a, b *store.DB) int {
		switch {
		case a == b:
			return 0
		case store.LockOrderLess(a, b):
			return -1
		}
		return 1
	})
	sorted = slices.Compact(sorted)
	for _, db := range sorted {
		db.LockAll()
	}
	return func() {
		for i := len(sorted) - 1; i >= 0; i-- {
			sorted[i].UnlockAll()
		}
	}
}

// propagateNow puts the running command's argv in the effect feed at once
// (the handler holds the locks that order it) and nothing after it returns.
func (c *Client) propagateNow(args [][]byte) {
	db := int(c.dbIndex.Load())
	if c.db != nil {
		db = c.db.ID()
	}
	c.emitEffects(db, [][][]byte{args}) // the feed, or EXEC's capture (node/multi.go)
	c.NoEffect()
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
