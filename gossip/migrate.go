package gossip

import (
	"errors"
	"time"

	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// The ownership flip of atomic slot migration (package migrate). Unlike
// CLUSTER SETSLOT NODE, which a tool sends slot by slot to every master,
// the flip is one step on each side: the target takes all the job's slots
// under one bumped configEpoch and broadcasts it; the source hands them
// over in its own table at once, so it stops serving them before it lets
// writes through again. Other nodes learn the new owner from the target's
// PONG (its configEpoch is now the greatest: rule 2 of the slot table).

// TakeSlots makes myself the owner of every slot in list, ending any
// SETSLOT mark on them, with a configEpoch bumped without consensus
// (clusterBumpConfigEpochWithoutConsensus, as SETSLOT NODE does when an
// importing node takes a slot) and a PONG to every node.
func (s *State) TakeSlots(list []int) error {
	me := s.myself
	if !me.isMaster() {
		return errors.New("ERR Please use SETSLOT only with masters.")
	}
	for _, j := range list {
		if j < 0 || j >= slots.Count {
			return errorf("Invalid or out of range slot")
		}
	}
	for _, j := range list {
		if prev := s.owner.get(j); prev != me {
			s.delSlot(j)
			s.addSlot(me, j)
			if prev != nil {
				s.noteHandoff(j, prev)
			}
		}
		s.importing.set(j, nil)
		s.migrating.set(j, nil)
	}
	if s.bumpEpochWithoutConsensus() {
		s.log.Warn("configEpoch updated after importing slots by atomic migration",
			zap.Int("slots", len(list)), zap.Uint64("configEpoch", me.configEpoch))
	}
	s.BroadcastPong()
	s.touchTable()
	s.todoUpdateState = true
	s.save(true)
	s.afterStep()
	return nil
}

// GiveSlots records that the node with id to now owns every slot in list
// (the source's side of the flip). Unlike SETSLOT NODE it does not check
// for keys left in the slots (the caller deletes them afterwards) and does
// not turn a master left without slots into a replica: its data for the
// slots is gone with them, and a tool decides what the empty master
// becomes.
func (s *State) GiveSlots(list []int, to string) error {
	n := s.lookup(to)
	switch {
	case n == nil:
		return errorf("Unknown node %s", to)
	case n.isSlave():
		return errors.New("ERR Target node is not a master")
	}
	for _, j := range list {
		if j < 0 || j >= slots.Count {
			return errorf("Invalid or out of range slot")
		}
	}
	for _, j := range list {
		s.delSlot(j)
		s.addSlot(n, j)
		s.importing.set(j, nil)
		s.migrating.set(j, nil)
	}
	s.touchTable()
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

// Hold keeps the bus from acting on received messages and ticks until
// release is called; commands (the Bus methods) still run. The server
// holds the bus while EXEC runs a transaction of CLUSTER commands:
// redis-cli's "MULTI; CLUSTER DELSLOTS s; CLUSTER ADDSLOTS s; CLUSTER
// BUMPEPOCH; EXEC" (its SetSlotOwner) must not see the slot, unbound
// between the two commands, taken by a peer's claim that arrived in
// between. Hold must not be called with the bus lock held, nor twice by one
// goroutine.
func (b *Bus) Hold() (release func()) {
	b.hold.Lock()
	return b.hold.Unlock
}

// handoff remembers where an imported slot came from.
type handoff struct {
	from  *node
	until time.Time
}

// noteHandoff records that this master just took slot at the end of an
// import from src (or from src by DELSLOTS and ADDSLOTS: applySlots).
//
// Why: redis-cli hands a slot over with SETSLOT NODE on the target (which
// bumps its configEpoch without consensus) and then on the source. A ping
// the source sent before its own SETSLOT still claims the slot, and when the
// source bumped its epoch concurrently (it imports other slots in the same
// resharding: each bump is blind to the others in flight) that stale claim
// carries the greater epoch. Redis then rebinds the slot to the source and
// the target deletes the keys it just received, which the source no longer
// has: acknowledged writes are gone and the slot ends unclaimed (the reason
// Redis's own 21-many-slot-migration test is disabled). shoal's target holds
// the slot against its source's shard for node-timeout instead and re-asserts
// it with a fresh epoch (holdsHandoff); any later, deliberate move of the slot
// goes through SETSLOT on this node (MIGRATING or NODE) and ends the hold.
func (s *State) noteHandoff(slot int, src *node) {
	if s.handoffs == nil {
		s.handoffs = map[int]handoff{}
	}
	s.handoffs[slot] = handoff{from: src, until: s.clock.Now().Add(s.opts.NodeTimeout)}
}

// holdsHandoff reports whether this master keeps slot against sender's
// claim: the slot is this master's, it took it from sender's shard less than
// node-timeout ago, and nothing since moved it.
func (s *State) holdsHandoff(slot int, sender *node) bool {
	h, ok := s.handoffs[slot]
	if !ok || s.owner.get(slot) != s.myself {
		return false
	}
	if !s.clock.Now().Before(h.until) {
		delete(s.handoffs, slot)
		return false
	}
	return sameShard(sender, h.from)
}

// sameShard: a and b are one master and its replicas (after a failover in
// the source's shard its promoted replica may repeat the stale claim).
func sameShard(a, b *node) bool {
	ma, mb := a, b
	if a.master != nil {
		ma = a.master
	}
	if b.master != nil {
		mb = b.master
	}
	return a == b || ma == mb || ma == b || mb == a
}

// reassertHandoff gives this master a configEpoch greater than senderEpoch
// (without consensus, as SETSLOT NODE does) and pings everybody, so nodes
// that believed the stale claim rebind the slot back.
func (s *State) reassertHandoff(sender *node, senderEpoch uint64, held []int) {
	me := s.myself
	s.log.Warn("kept slots just imported against a stale claim from their source",
		zap.String("source", sender.id), zap.Uint64("claimEpoch", senderEpoch), zap.Int("slots", len(held)),
		zap.Int("first", held[0]))
	if me.configEpoch > senderEpoch {
		return
	}
	if s.currentEpoch < senderEpoch {
		s.currentEpoch = senderEpoch
	}
	s.currentEpoch++
	me.configEpoch = s.currentEpoch
	s.save(true)
	s.log.Warn("new configEpoch set", zap.Uint64("configEpoch", me.configEpoch))
	s.BroadcastPong()
}
