package migrate

import "net"

// Source is what the node offers an export job. Every method is safe for
// concurrent use.
type Source interface {
	// MyID is this node's id.
	MyID() string
	// OwnsSlot reports whether this node is the master serving slot.
	OwnsSlot(slot int) bool
	// MasterAddr returns the client address of the master with the given
	// id, or an error whose text is the reply to the command that named it.
	MasterAddr(id string) (string, error)
	// Dial connects to a node's client port, authenticated as a replica
	// would (masteruser/masterauth) when the target requires it.
	Dial(addr string) (net.Conn, error)
	// LockSlots and UnlockSlots take and release the keyspace locks of
	// the given slots (ascending, no repeats).
	LockSlots(list []uint16)
	UnlockSlots(list []uint16)
	// SlotImage calls emit with commands that rebuild every live key of
	// slot on an empty node, values of many elements split over several
	// commands; it returns the number of keys. The caller holds the slot's
	// lock; argv is only valid during the call.
	SlotImage(slot uint16, emit func(argv ...[][]byte)) int
	// KeysInSlots counts the keys in the given slots now (the total a job's
	// progress is reported against; writes may change it while it runs).
	KeysInSlots(list []int) int64
	// EffectSlot tells which slot an effect command writes: its keys'
	// slot, or -1 for a command without keys; flush is true for a
	// keyspace-wide deletion (FLUSHALL, FLUSHDB).
	EffectSlot(argv [][]byte) (slot int, flush bool)
	// AddEffectFeed and RemoveEffectFeed subscribe f to the node's
	// write-effect feed (see node.EffectFeed for Propagate's contract).
	AddEffectFeed(f Feed)
	RemoveEffectFeed(f Feed)
	// GiveSlots makes the node with id to the owner of list in this
	// node's cluster table (the flip on the source).
	GiveSlots(list []int, to string) error
	// DropSlots deletes this node's keys in list (after the flip).
	DropSlots(list []int)
}

// Feed is the write-effect feed consumer interface (node.EffectFeed).
type Feed interface {
	Propagate(db int, cmds [][][]byte)
}

// Target is what the node offers an import session.
type Target interface {
	// MyID is this node's id.
	MyID() string
	// CanImport checks, before an import starts, that this node is a
	// master, that it does not own any slot of list, and that the source
	// is a known master; the error's text is the reply.
	CanImport(source string, list []int) error
	// DropSlots deletes this node's keys in list.
	DropSlots(list []int)
	// TakeSlots makes this node the owner of list under a bumped
	// configEpoch, broadcast to the cluster.
	TakeSlots(list []int) error
}
