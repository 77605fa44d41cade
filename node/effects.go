package node

import (
	"sync"
	"sync/atomic"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// The write-effect feed (DESIGN.md §4).
//
// Everything that leaves the node — the replication stream, the AOF, a slot
// migration stream — carries the deterministic effect of a write, never the
// request: SPOP becomes SREM, EXPIRE becomes PEXPIREAT, a key deleted by
// expiry becomes DEL. The dispatcher calls propagateEffects after every
// handler, with the command's slots still locked, so the effects of the
// writes to one slot enter every feed in the order they were applied to the
// keyspace. Writes to different slots run in parallel and enter the feeds
// in either order, which is harmless because they commute.
//
// A handler says what its effect is:
//   - by default a write command (command.FlagWrite) that did not reply with an
//     error propagates its own argv verbatim;
//   - ReplaceEffect gives the effect explicitly (call it once per command of
//     the effect; a read command may call it too, e.g. to propagate a DEL);
//   - NoEffect says the command changed nothing.

// EffectFeed consumes the write-effect feed.
type EffectFeed interface {
	// Propagate records one command's effects: cmds in argv form, in the
	// order they apply, against database db (a transaction or script that
	// changed databases carries SELECTs among cmds; the feed is in the last
	// one afterwards, resp.SelectedAfter). It is called on the writer's
	// goroutine with the command's slots locked, so it must not block, and
	// the argument slices are only valid during the call (encode or copy
	// them).
	Propagate(db int, cmds [][][]byte)
}

// effectFeeds is the server's set of feed consumers, read without a lock on
// every write.
type effectFeeds struct {
	mu   sync.Mutex // serialises changes to list
	list atomic.Pointer[[]EffectFeed]
}

// AddEffectFeed starts sending the write-effect feed to f. Safe at any time;
// writes already under way may or may not reach f.
func (s *Server) AddEffectFeed(f EffectFeed) {
	s.feeds.mu.Lock()
	defer s.feeds.mu.Unlock()
	var next []EffectFeed
	if cur := s.feeds.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, f)
	s.feeds.list.Store(&next)
}

// RemoveEffectFeed stops sending the feed to f.
func (s *Server) RemoveEffectFeed(f EffectFeed) {
	s.feeds.mu.Lock()
	defer s.feeds.mu.Unlock()
	cur := s.feeds.list.Load()
	if cur == nil {
		return
	}
	var next []EffectFeed
	for _, g := range *cur {
		if g != f {
			next = append(next, g)
		}
	}
	if len(next) == 0 {
		s.feeds.list.Store(nil)
		return
	}
	s.feeds.list.Store(&next)
}

// propagate sends one command's effects to every feed.
func (s *Server) propagate(db int, cmds [][][]byte) {
	feeds := s.feeds.list.Load()
	if feeds == nil {
		return
	}
	for _, f := range *feeds {
		f.Propagate(db, cmds)
	}
}

// laterFeed is an EffectFeed that can take effects without sending them
// at once: the event loop that ran the command calls flushLater at the
// end of its turn (node/evloop.go), so the feed sends many clients'
// effects together.
type laterFeed interface {
	PropagateLater(db int, cmds [][][]byte)
}

// propagate sends the effects of c's command to every feed: an event
// loop's client's to be sent at the end of the loop's turn where a feed
// can (laterFeed).
func (c *Client) propagate(db int, cmds [][][]byte) {
	s := c.srv
	if c.loopConn == nil {
		s.propagate(db, cmds)
		return
	}
	feeds := s.feeds.list.Load()
	if feeds == nil {
		return
	}
	for _, f := range *feeds {
		if lf, ok := f.(laterFeed); ok {
			lf.PropagateLater(db, cmds)
		} else {
			f.Propagate(db, cmds)
		}
	}
}

// propagateEffects runs after every handler, with the command's slots still
// locked: it sends the command's effect to the feeds and resets the
// client's effect state.
func (c *Client) propagateEffects(spec *command.Spec, args [][]byte) {
	fx := c.Effects()
	if c.srv.tx.watch.watching() {
		c.touchWritten(spec, args) // node/watch.go
	}
	if c.srv.tracking.active() {
		c.trackingInvalidateWritten(spec, args) // node/tracking.go
	}
	if !fx.Replaced && (spec.Flags&command.FlagWrite == 0 || fx.None || c.errored || c.bs.pending != nil) {
		// A read, a write that changed nothing or failed, or a blocking
		// command that is waiting (its effect is the pop that serves it).
		fx.None, fx.DirtySet, fx.Charged = false, false, false
		return
	}
	c.remeasureWritten(spec, args, fx.Charged)
	// Redis's server.dirty: a command with an effect changed one thing
	// unless its handler counted otherwise (node/persistence.go).
	if !fx.DirtySet {
		c.srv.dirty.add(c.id, 1)
	}
	db := 0
	if d := c.LockedDB(); d != nil {
		db = d.ID()
	} else {
		db = int(c.dbIndex.Load())
	}
	cmds := fx.Cmds
	if !fx.Replaced {
		c.verbatimEffect[0] = args
		cmds = c.verbatimEffect[:]
	}
	c.emitEffects(db, cmds) // the feed, or the open transaction's capture
	c.verbatimEffect[0] = nil
	c.ResetEffects()
}

// remeasureWritten brings the memory charges of the keys a write command
// touched up to date (store/memory.go): handlers change collections and
// mutable strings in place, which the keyspace cannot see. Runs with the
// command's slots still locked; a key the command deleted costs nothing.
// charged: the handler said its keys were charged exactly as written
// (command.Ctx.ChargedExactly), so only a writable replica's expiry
// tracking is left to do.
func (c *Client) remeasureWritten(spec *command.Spec, args [][]byte, charged bool) {
	db := c.DB() // the key's slot as the dispatcher hashed it (command.DB)
	// A writable replica expires the keys its own clients give a TTL
	// (store/replica_expire.go); the master's keys expire by its DEL.
	trackExpiry := c.srv.ks.ReplicaMode() && !c.isMasterLink() && !c.srv.cfg.Bool("replica-read-only")
	if charged && !trackExpiry {
		return
	}
	keys, err := command.Keys(spec, args, c.measureBuf[:0])
	if err != nil {
		return
	}
	for _, p := range keys {
		if !charged {
			db.Remeasure(args[p])
		}
		if trackExpiry {
			db.TrackReplicaExpiry(args[p])
		}
	}
	c.measureBuf = keys[:0]
}

// servedEffectsApplied accounts for effects applied outside a command's
// own run (the pop that serves a blocked client), under the written keys'
// slot locks: the keys they write are remeasured (used_memory,
// store/memory.go), touched for their watchers (node/watch.go) and
// invalidated for their trackers (node/tracking.go) on behalf of by, the
// served client.
func (s *Server) servedEffectsApplied(db *store.DB, cmds [][][]byte, by *Client) {
	reg := &s.tx.watch
	watching := reg.watching()
	tracking := s.tracking.active()
	for _, cmd := range cmds {
		spec, unknown := s.table.lookupOwn(cmd)
		if spec == nil || unknown {
			continue
		}
		for _, p := range writtenKeys(spec, cmd) {
			k := cmd[p]
			db.Remeasure(k)
			if watching {
				reg.touch(db.ID(), k, func() bool { return db.Exists(k) })
			}
			if tracking {
				s.trackingInvalidate(by, k, true)
			}
		}
	}
}
