package store

import (
	"bytes"
	"slices"
	"strings"
)

// StreamGroup is a consumer group: its last delivered ID, its read counter
// (Redis 7.0's entries_read, InvalidEntriesRead when unknown), the pending
// entries list (PEL: every message delivered and not yet acknowledged, with
// its owner, last delivery time and delivery count) and the consumers,
// each with its own PEL of message IDs.
//
// A pending entry names its owner by a slot number into the group's
// consumer table rather than by pointer, so that the PELs hold no pointers
// (see idChunks) and a clone needs no pointer fix-ups.
type StreamGroup struct {
	name        string
	LastID      StreamID
	EntriesRead int64

	pel       idChunks[pelEntry]
	consumers []*StreamConsumer // by name, in byte order
	bySlot    []*StreamConsumer // slot → consumer; slot 0 is "no owner"
	freeSlots []uint32
}

// StreamConsumer is one consumer of a group.
type StreamConsumer struct {
	name     string
	SeenTime int64 // unix ms of its last activity
	slot     uint32
	pel      idChunks[StreamID]
}

// pelEntry is a pending message (Redis's streamNACK).
type pelEntry struct {
	id            StreamID
	deliveryTime  int64
	deliveryCount uint64
	owner         uint32 // consumer slot; 0 = none yet (XCLAIM FORCE)
}

func (p pelEntry) key() StreamID { return p.id }

// PendingEntry describes a pending message.
type PendingEntry struct {
	ID            StreamID
	Consumer      *StreamConsumer // nil only transiently (XCLAIM FORCE)
	DeliveryTime  int64
	DeliveryCount uint64
}

// Name is the group's name.
func (g *StreamGroup) Name() string { return g.name }

// Name is the consumer's name.
func (c *StreamConsumer) Name() string { return c.name }

// PendingLen is the number of messages the consumer has pending.
func (c *StreamConsumer) PendingLen() int { return c.pel.Len() }

// ---------------------------------------------------------------- groups of a stream

func (s *Stream) groupIndex(name []byte) (int, bool) {
	return slices.BinarySearchFunc(s.groups, name, func(g *StreamGroup, name []byte) int {
		return strings.Compare(g.name, string(name))
	})
}

// Group returns the consumer group called name, or nil.
func (s *Stream) Group(name []byte) *StreamGroup {
	if i, ok := s.groupIndex(name); ok {
		return s.groups[i]
	}
	return nil
}

// Groups returns the groups in name order (the slice must not be modified).
func (s *Stream) Groups() []*StreamGroup { return s.groups }

// CreateGroup adds a group (XGROUP CREATE); nil if the name is taken.
func (s *Stream) CreateGroup(name []byte, last StreamID, entriesRead int64) *StreamGroup {
	i, ok := s.groupIndex(name)
	if ok {
		return nil
	}
	g := &StreamGroup{name: string(name), LastID: last, EntriesRead: entriesRead, bySlot: []*StreamConsumer{nil}}
	s.groups = slices.Insert(s.groups, i, g)
	return g
}

// DestroyGroup removes a group (XGROUP DESTROY); it reports whether it
// existed.
func (s *Stream) DestroyGroup(name []byte) bool {
	i, ok := s.groupIndex(name)
	if !ok {
		return false
	}
	s.groups = slices.Delete(s.groups, i, i+1)
	return true
}

func (g *StreamGroup) clone() *StreamGroup {
	out := &StreamGroup{
		name:        g.name,
		LastID:      g.LastID,
		EntriesRead: g.EntriesRead,
		pel:         g.pel.clone(),
		consumers:   make([]*StreamConsumer, len(g.consumers)),
		bySlot:      make([]*StreamConsumer, len(g.bySlot)),
		freeSlots:   slices.Clone(g.freeSlots),
	}
	for i, c := range g.consumers {
		nc := &StreamConsumer{name: c.name, SeenTime: c.SeenTime, slot: c.slot, pel: c.pel.clone()}
		out.consumers[i] = nc
		out.bySlot[c.slot] = nc
	}
	return out
}

// ---------------------------------------------------------------- consumers

func (g *StreamGroup) consumerIndex(name []byte) (int, bool) {
	return slices.BinarySearchFunc(g.consumers, name, func(c *StreamConsumer, name []byte) int {
		return strings.Compare(c.name, string(name))
	})
}

// Consumer returns the consumer called name, or nil.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer {
	if i, ok := g.consumerIndex(name); ok {
		return g.consumers[i]
	}
	return nil
}

// Consumers returns the consumers in name order (not to be modified).
func (g *StreamGroup) Consumers() []*StreamConsumer { return g.consumers }

// CreateConsumer adds a consumer seen at now; nil if it exists.
func (g *StreamGroup) CreateConsumer(name []byte, now int64) *StreamConsumer {
	i, ok := g.consumerIndex(name)
	if ok {
		return nil
	}
	c := &StreamConsumer{name: string(name), SeenTime: now}
	if n := len(g.freeSlots); n > 0 {
		c.slot = g.freeSlots[n-1]
		g.freeSlots = g.freeSlots[:n-1]
		g.bySlot[c.slot] = c
	} else {
		c.slot = uint32(len(g.bySlot))
		g.bySlot = append(g.bySlot, c)
	}
	g.consumers = slices.Insert(g.consumers, i, c)
	return c
}

// DeleteConsumer removes a consumer and its pending messages from the
// group's PEL (XGROUP DELCONSUMER); it returns how many it had pending.
func (g *StreamGroup) DeleteConsumer(c *StreamConsumer) int {
	pending := c.pel.Len()
	c.pel.Each(func(id *StreamID) bool {
		g.pel.Delete(*id)
		return true
	})
	if i, ok := g.consumerIndex([]byte(c.name)); ok && g.consumers[i] == c {
		g.consumers = slices.Delete(g.consumers, i, i+1)
	}
	g.bySlot[c.slot] = nil
	g.freeSlots = append(g.freeSlots, c.slot)
	c.pel = idChunks[StreamID]{}
	return pending
}

// ---------------------------------------------------------------- the PEL

// PendingLen is the number of messages pending in the group.
func (g *StreamGroup) PendingLen() int { return g.pel.Len() }

// PendingBounds returns the lowest and highest pending IDs.
func (g *StreamGroup) PendingBounds() (first, last StreamID, ok bool) {
	if g.pel.Len() == 0 {
		return StreamID{}, StreamID{}, false
	}
	return g.pel.First().id, g.pel.Last().id, true
}

func (g *StreamGroup) export(p *pelEntry) PendingEntry {
	return PendingEntry{ID: p.id, Consumer: g.bySlot[p.owner], DeliveryTime: p.deliveryTime, DeliveryCount: p.deliveryCount}
}

// Pending returns the pending entry for id.
func (g *StreamGroup) Pending(id StreamID) (PendingEntry, bool) {
	p := g.pel.Get(id)
	if p == nil {
		return PendingEntry{}, false
	}
	return g.export(p), true
}

// NextPending returns the first pending entry with ID >= from.
func (g *StreamGroup) NextPending(from StreamID) (PendingEntry, bool) {
	p := g.pel.Seek(from)
	if p == nil {
		return PendingEntry{}, false
	}
	return g.export(p), true
}

// NextPending returns the first ID >= from the consumer has pending, with
// its entry in the group PEL.
func (g *StreamGroup) NextConsumerPending(c *StreamConsumer, from StreamID) (PendingEntry, bool) {
	id := c.pel.Seek(from)
	if id == nil {
		return PendingEntry{}, false
	}
	p := g.pel.Get(*id)
	if p == nil { // cannot happen: both PELs change together
		return PendingEntry{ID: *id, Consumer: c}, true
	}
	return g.export(p), true
}

// Deliver records that message id was delivered to consumer c at now
// (XREADGROUP): a new pending entry, or the existing one handed over to c
// with its delivery count reset to 1.
func (g *StreamGroup) Deliver(id StreamID, c *StreamConsumer, now int64) {
	if p := g.pel.Get(id); p != nil {
		if old := g.bySlot[p.owner]; old != nil {
			old.pel.Delete(id)
		}
		p.owner = c.slot
		p.deliveryTime = now
		p.deliveryCount = 1
		c.pel.Insert(id)
		return
	}
	g.pel.Insert(pelEntry{id: id, deliveryTime: now, deliveryCount: 1, owner: c.slot})
	c.pel.Insert(id)
}

// Redeliver notes another delivery of an entry from the consumer's own
// history (XREADGROUP with an explicit ID): delivery time now, count + 1.
func (g *StreamGroup) Redeliver(id StreamID, now int64) {
	if p := g.pel.Get(id); p != nil {
		p.deliveryTime = now
		p.deliveryCount++
	}
}

// Ack removes id from the group's and its owner's PEL (XACK, and the
// cleanup of entries that no longer exist); it reports whether it was
// pending.
func (g *StreamGroup) Ack(id StreamID) bool {
	p := g.pel.Get(id)
	if p == nil {
		return false
	}
	if owner := g.bySlot[p.owner]; owner != nil {
		owner.pel.Delete(id)
	}
	g.pel.Delete(id)
	return true
}

// Claim makes c the owner of pending message id with the given delivery
// time and count, creating the pending entry if there is none (XCLAIM,
// XAUTOCLAIM).
func (g *StreamGroup) Claim(id StreamID, c *StreamConsumer, deliveryTime int64, deliveryCount uint64) {
	p := g.pel.Get(id)
	if p == nil {
		g.pel.Insert(pelEntry{id: id, deliveryTime: deliveryTime, deliveryCount: deliveryCount, owner: c.slot})
		c.pel.Insert(id)
		return
	}
	if p.owner != c.slot {
		if old := g.bySlot[p.owner]; old != nil {
			old.pel.Delete(id)
		}
		p.owner = c.slot
		c.pel.Insert(id)
	}
	p.deliveryTime = deliveryTime
	p.deliveryCount = deliveryCount
}

// EachPending calls fn for the group's pending entries in ID order until it
// returns false; fn must not modify the group.
func (g *StreamGroup) EachPending(fn func(p PendingEntry) bool) {
	g.pel.Each(func(p *pelEntry) bool { return fn(g.export(p)) })
}

// EachConsumerPending is EachPending for one consumer's PEL.
func (g *StreamGroup) EachConsumerPending(c *StreamConsumer, fn func(p PendingEntry) bool) {
	c.pel.Each(func(id *StreamID) bool {
		if p := g.pel.Get(*id); p != nil {
			return fn(g.export(p))
		}
		return true
	})
}

// checkInvariants verifies that the group's PEL and the consumers' PELs
// describe the same pending entries (tests).
func (g *StreamGroup) checkInvariants() string {
	n := 0
	for _, c := range g.consumers {
		if g.bySlot[c.slot] != c {
			return "consumer slot mismatch for " + c.name
		}
		bad := ""
		c.pel.Each(func(id *StreamID) bool {
			p := g.pel.Get(*id)
			if p == nil || p.owner != c.slot {
				bad = "consumer " + c.name + " has " + id.String() + " not owned in the group PEL"
				return false
			}
			return true
		})
		if bad != "" {
			return bad
		}
		n += c.pel.Len()
	}
	if n != g.pel.Len() {
		return "group PEL size differs from the sum of the consumers' PELs"
	}
	if !slices.IsSortedFunc(g.consumers, func(a, b *StreamConsumer) int { return bytes.Compare([]byte(a.name), []byte(b.name)) }) {
		return "consumers not sorted"
	}
	return ""
}
