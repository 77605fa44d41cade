package gossip

import (
	"errors"

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
		if s.owner[j] != me {
			s.delSlot(j)
			s.addSlot(me, j)
		}
		s.importing[j] = nil
		s.migrating[j] = nil
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
		s.importing[j] = nil
		s.migrating[j] = nil
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
