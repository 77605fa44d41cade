package gossip

import (
	"testing"

	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A slot map answers what was set, shares one table entry among a node's
// slots, frees the entry with the node's last slot and gives it to the
// next node, so nodes that come and go never grow the table.
func TestSlotNodesEntriesFollowTheNodes(t *testing.T) {
	var m slotNodes
	a, b, c := &node{id: "a"}, &node{id: "b"}, &node{id: "c"}
	for j := range slots.Count {
		m.set(j, a)
	}
	m.set(100, b)
	m.set(200, b)
	assert.Same(t, a, m.get(0))
	assert.Same(t, b, m.get(100))
	assert.Same(t, a, m.get(slots.Count-1))
	require.Len(t, m.nodes, 2, "one entry per node")
	assert.Equal(t, []uint16{slots.Count - 2, 2}, m.uses)

	m.set(100, nil)
	m.set(200, a)
	assert.Nil(t, m.get(100))
	assert.Same(t, a, m.get(200))
	assert.Nil(t, m.nodes[1], "b's entry is freed with its last slot")

	m.set(100, c)
	assert.Same(t, c, m.get(100))
	assert.Len(t, m.nodes, 2, "c takes b's freed entry")

	for j := range slots.Count {
		m.set(j, nil)
	}
	assert.Equal(t, []*node{nil, nil}, m.nodes)
	assert.Equal(t, [slots.Count]uint16{}, m.ref)

	for range 50 { // a node that takes a slot and gives it back, many times
		n := &node{}
		m.set(7, n)
		m.set(7, nil)
	}
	assert.Len(t, m.nodes, 2)
}
