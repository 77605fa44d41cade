package slots

import "sync/atomic"

// Node is what routing needs to know about a slot's owner: its id and the
// client endpoint a MOVED/ASK redirect names.
type Node struct {
	ID       string // 40 lowercase hex characters
	IP       string
	Port     int
	PPort    int    // the plaintext port in a TLS cluster (Port is the TLS one), 0 = none
	Hostname string // "" when not announced
}

// Table is an immutable snapshot of the cluster's slot map as one node sees
// it: slot → owner, the migrating/importing marks of this node, and the few
// facts routing needs besides (who this node is, whether the cluster is up).
// Every method that "changes" a table returns a new one and leaves the
// receiver untouched, so a *Table may be shared by any number of goroutines
// without locks. A nil *Table behaves as an empty table.
type Table struct {
	owner     [Count]uint16 // index+1 into nodes; 0 = unassigned
	nodes     []Node
	migrating map[uint16]string // slot → destination node id (this node's marks)
	importing map[uint16]string // slot → source node id (this node's marks)

	// MyID is this node's id, MyMaster its master's id ("" for a master).
	MyID, MyMaster string
	// OK is cluster_state:ok. Routing answers "-CLUSTERDOWN The cluster is
	// down" while it is false.
	OK bool
	// Version increases with every table the gossip layer publishes; routing
	// may use it to cache derived data.
	Version uint64
}

// NewTable returns an empty table: no slot assigned, no marks, state fail.
func NewTable() *Table { return &Table{} }

// clone copies t (deeply: maps too) so the copy can be modified.
func (t *Table) clone() *Table {
	n := &Table{}
	if t == nil {
		return n
	}
	*n = *t
	n.nodes = append([]Node(nil), t.nodes...)
	n.migrating = cloneMarks(t.migrating)
	n.importing = cloneMarks(t.importing)
	return n
}

func cloneMarks(m map[uint16]string) map[uint16]string {
	if len(m) == 0 {
		return nil
	}
	c := make(map[uint16]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Owner returns the node serving slot, or nil when the slot is unassigned
// (or out of range).
func (t *Table) Owner(slot int) *Node {
	if t == nil || slot < 0 || slot >= Count {
		return nil
	}
	i := t.owner[slot]
	if i == 0 {
		return nil
	}
	return &t.nodes[i-1]
}

// OwnerID returns the id of the node serving slot, "" when unassigned.
func (t *Table) OwnerID(slot int) string {
	if n := t.Owner(slot); n != nil {
		return n.ID
	}
	return ""
}

// Migrating returns the node id this node migrates slot to, or "".
func (t *Table) Migrating(slot int) string {
	if t == nil || slot < 0 || slot >= Count {
		return ""
	}
	return t.migrating[uint16(slot)]
}

// Importing returns the node id this node imports slot from, or "".
func (t *Table) Importing(slot int) string {
	if t == nil || slot < 0 || slot >= Count {
		return ""
	}
	return t.importing[uint16(slot)]
}

// Assigned returns the number of slots with an owner.
func (t *Table) Assigned() int {
	if t == nil {
		return 0
	}
	n := 0
	for _, o := range t.owner {
		if o != 0 {
			n++
		}
	}
	return n
}

// Nodes returns the distinct owners (a copy).
func (t *Table) Nodes() []Node {
	if t == nil {
		return nil
	}
	return append([]Node(nil), t.nodes...)
}

// SlotsOf returns the slots owned by the node with the given id.
func (t *Table) SlotsOf(id string) Bitmap {
	var b Bitmap
	if t == nil {
		return b
	}
	idx := uint16(0)
	for i := range t.nodes {
		if t.nodes[i].ID == id {
			idx = uint16(i + 1)
			break
		}
	}
	if idx == 0 {
		return b
	}
	for s, o := range t.owner {
		if o == idx {
			b.Set(s)
		}
	}
	return b
}

// nodeIndex returns the index+1 of n in t.nodes, appending it (or updating
// the endpoint of a node with the same id) as needed. t must be a private copy.
func (t *Table) nodeIndex(n Node) uint16 {
	for i := range t.nodes {
		if t.nodes[i].ID == n.ID {
			t.nodes[i] = n
			return uint16(i + 1)
		}
	}
	t.nodes = append(t.nodes, n)
	return uint16(len(t.nodes))
}

// WithOwner returns a copy of t in which slot is served by n. Out-of-range
// slots leave the copy unchanged.
func (t *Table) WithOwner(slot int, n Node) *Table {
	c := t.clone()
	if slot >= 0 && slot < Count {
		c.owner[slot] = c.nodeIndex(n)
		c.compact()
	}
	return c
}

// WithOwnerSlots returns a copy of t in which every slot of set is served by n.
func (t *Table) WithOwnerSlots(set *Bitmap, n Node) *Table {
	c := t.clone()
	idx := c.nodeIndex(n)
	set.Each(func(s int) { c.owner[s] = idx })
	c.compact()
	return c
}

// WithoutOwner returns a copy of t in which slot is unassigned.
func (t *Table) WithoutOwner(slot int) *Table {
	c := t.clone()
	if slot >= 0 && slot < Count {
		c.owner[slot] = 0
		c.compact()
	}
	return c
}

// WithMigrating returns a copy of t with slot marked as migrating to the
// node id to ("" clears the mark).
func (t *Table) WithMigrating(slot int, to string) *Table {
	c := t.clone()
	c.migrating = setMark(c.migrating, slot, to)
	return c
}

// WithImporting returns a copy of t with slot marked as importing from the
// node id from ("" clears the mark).
func (t *Table) WithImporting(slot int, from string) *Table {
	c := t.clone()
	c.importing = setMark(c.importing, slot, from)
	return c
}

// WithState returns a copy of t with the routing facts replaced.
func (t *Table) WithState(myID, myMaster string, ok bool, version uint64) *Table {
	c := t.clone()
	c.MyID, c.MyMaster, c.OK, c.Version = myID, myMaster, ok, version
	return c
}

func setMark(m map[uint16]string, slot int, id string) map[uint16]string {
	if slot < 0 || slot >= Count {
		return m
	}
	if id == "" {
		delete(m, uint16(slot))
		return m
	}
	if m == nil {
		m = make(map[uint16]string)
	}
	m[uint16(slot)] = id
	return m
}

// compact drops nodes that no longer own a slot so that the node list stays
// bounded by the number of owners.
func (t *Table) compact() {
	var used = make([]bool, len(t.nodes)+1)
	for _, o := range t.owner {
		used[o] = true
	}
	unused := 0
	for i := 1; i < len(used); i++ {
		if !used[i] {
			unused++
		}
	}
	if unused == 0 {
		return
	}
	remap := make([]uint16, len(t.nodes)+1)
	kept := t.nodes[:0:0]
	for i, n := range t.nodes {
		if used[i+1] {
			kept = append(kept, n)
			remap[i+1] = uint16(len(kept))
		}
	}
	for s, o := range t.owner {
		t.owner[s] = remap[o]
	}
	t.nodes = kept
}

// Equal reports whether two tables route identically (owners with their
// endpoints, marks and state; Version is ignored).
func (t *Table) Equal(o *Table) bool {
	if t == nil {
		t = &Table{}
	}
	if o == nil {
		o = &Table{}
	}
	if t.MyID != o.MyID || t.MyMaster != o.MyMaster || t.OK != o.OK {
		return false
	}
	for s := 0; s < Count; s++ {
		a, b := t.Owner(s), o.Owner(s)
		if (a == nil) != (b == nil) || (a != nil && *a != *b) {
			return false
		}
	}
	return marksEqual(t.migrating, o.migrating) && marksEqual(t.importing, o.importing)
}

func marksEqual(a, b map[uint16]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Builder assembles a Table in one pass (the gossip layer rebuilds the whole
// table after each change instead of copying it slot by slot). A Builder is
// not safe for concurrent use; Build hands the result over and the Builder
// must not be used afterwards.
type Builder struct{ t *Table }

// NewBuilder starts an empty table.
func NewBuilder() *Builder { return &Builder{t: &Table{}} }

// Assign makes n the owner of every slot in set.
func (b *Builder) Assign(set *Bitmap, n Node) {
	idx := b.t.nodeIndex(n)
	set.Each(func(s int) { b.t.owner[s] = idx })
}

// AssignSlot makes n the owner of slot.
func (b *Builder) AssignSlot(slot int, n Node) {
	if slot >= 0 && slot < Count {
		b.t.owner[slot] = b.t.nodeIndex(n)
	}
}

// Migrating marks slot as migrating to node id to.
func (b *Builder) Migrating(slot int, to string) { b.t.migrating = setMark(b.t.migrating, slot, to) }

// Importing marks slot as importing from node id from.
func (b *Builder) Importing(slot int, from string) {
	b.t.importing = setMark(b.t.importing, slot, from)
}

// Build returns the finished table.
func (b *Builder) Build(myID, myMaster string, ok bool, version uint64) *Table {
	t := b.t
	b.t = nil
	t.MyID, t.MyMaster, t.OK, t.Version = myID, myMaster, ok, version
	t.compact()
	return t
}

// Ref holds the current table. Load is wait-free and may be called from any
// goroutine (the command hot path); Store is meant for a single writer (the
// gossip layer), though concurrent Stores are safe too (last one wins).
type Ref struct{ p atomic.Pointer[Table] }

// NewRef returns a Ref holding t (an empty table if t is nil).
func NewRef(t *Table) *Ref {
	r := &Ref{}
	r.Store(t)
	return r
}

// Load returns the current table, never nil.
func (r *Ref) Load() *Table {
	if t := r.p.Load(); t != nil {
		return t
	}
	return &emptyTable
}

// Store publishes t (an empty table if t is nil).
func (r *Ref) Store(t *Table) {
	if t == nil {
		t = &Table{}
	}
	r.p.Store(t)
}

// emptyTable is never modified (every Table method copies before writing).
var emptyTable Table
