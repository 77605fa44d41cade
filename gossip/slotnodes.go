package gossip

import "github.com/shoal-db/shoal/slots"

// slotNodes maps every slot to a node, or to none, in two bytes a slot: a
// 16,384-entry array of pointers is 128 KB, all of it resident once every
// slot is assigned, which was a twentieth of an idle cluster node's
// memory. Entries refer to a short table of the nodes in use (masters
// owning slots, the peers of open migrations); a node's entry is freed
// when it no longer holds a slot, so nodes that come and go do not grow
// it. A slot that does not change is never written, so a map whose slots
// stay unset (no migration open) keeps its pages unbacked.
//
// Not safe for concurrent use: the State that holds it serializes access.
type slotNodes struct {
	ref   [slots.Count]uint16 // 0: no node; r: nodes[r-1]
	nodes []*node             // the table; nil: a free entry
	uses  []uint16            // how many slots refer to each entry
	// last and lastRef cache the last lookup: a table update sets runs of
	// slots to one node.
	last    *node
	lastRef uint16
}

// get returns the node of slot, or nil.
func (m *slotNodes) get(slot int) *node {
	if r := m.ref[slot]; r != 0 {
		return m.nodes[r-1]
	}
	return nil
}

// set makes n (nil: none) the node of slot.
func (m *slotNodes) set(slot int, n *node) {
	old := m.ref[slot]
	if old != 0 && m.nodes[old-1] == n || old == 0 && n == nil {
		return
	}
	if old != 0 {
		m.release(old)
	}
	var r uint16
	if n != nil {
		r = m.refOf(n)
		m.uses[r-1]++
	}
	m.ref[slot] = r
}

// refOf returns n's entry, taking a free one (or a new one) when n has none.
func (m *slotNodes) refOf(n *node) uint16 {
	if m.last == n && m.lastRef != 0 {
		return m.lastRef
	}
	free := -1
	for i, o := range m.nodes {
		if o == n {
			m.last, m.lastRef = n, uint16(i+1)
			return m.lastRef
		}
		if o == nil && free < 0 {
			free = i
		}
	}
	if free < 0 {
		// At most one entry per slot can be in use, so the table never
		// outgrows a uint16 reference.
		free = len(m.nodes)
		m.nodes = append(m.nodes, nil)
		m.uses = append(m.uses, 0)
	}
	m.nodes[free] = n
	m.last, m.lastRef = n, uint16(free+1)
	return m.lastRef
}

// release drops one slot's use of entry r, freeing it with the last.
func (m *slotNodes) release(r uint16) {
	m.uses[r-1]--
	if m.uses[r-1] == 0 {
		if m.last == m.nodes[r-1] {
			m.last, m.lastRef = nil, 0
		}
		m.nodes[r-1] = nil
	}
}
