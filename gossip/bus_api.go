package gossip

import (
	"fmt"
	"time"

	"github.com/shoal-db/shoal/slots"
)

// This file is the server's view of the Bus: CLUSTER subcommands and
// read-only snapshots. Every method is safe for concurrent use and returns
// copies. Command methods return nil for +OK or an error whose text is the
// exact Redis reply (with its "ERR " prefix); arguments are the raw command
// arguments following the subcommand name.

// Slots returns the routing table holder: Slots().Load() is lock-free and
// always returns the current table (the hot path).
func (b *Bus) Slots() *slots.Ref { return b.ref }

// MyID is CLUSTER MYID.
func (b *Bus) MyID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.MyID()
}

// Myself returns this node's record.
func (b *Bus) Myself() NodeInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Myself()
}

// Nodes returns every known node (myself first).
func (b *Bus) Nodes() []NodeInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Nodes()
}

// Node returns one node by id.
func (b *Bus) Node(id string) (NodeInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Node(id)
}

// Epochs returns currentEpoch and lastVoteEpoch.
func (b *Bus) Epochs() (current, lastVote uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Epochs()
}

// NodesText is the CLUSTER NODES body (byte-exact, "\n"-terminated lines).
func (b *Bus) NodesText() string { return b.NodesTextFor(false) }

// NodesTextFor is NodesText with each node's plaintext port instead of its
// TLS port when plain (a plaintext client of a TLS cluster) and the node
// announced one.
func (b *Bus) NodesTextFor(plain bool) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.NodesTextFor(plain)
}

// InfoText is the CLUSTER INFO body ("\r\n" lines).
func (b *Bus) InfoText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.InfoText()
}

// StateOK reports cluster_state:ok (also in Slots().Load().OK).
func (b *Bus) StateOK() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.StateOK()
}

// SlotRanges is the data of CLUSTER SLOTS.
func (b *Bus) SlotRanges() []SlotRange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.SlotRanges()
}

// Shards is the data of CLUSTER SHARDS.
func (b *Bus) Shards() []Shard {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Shards()
}

// Links is the data of CLUSTER LINKS: the cluster links (gossip/link.go)
// with each known node, its "to" link then its "from" link. Events are
// "r" (every link is read: a "to" link for its peer closing it) and "w"
// while the send buffer holds bytes.
func (b *Bus) Links() []Link {
	b.mu.Lock()
	defer b.mu.Unlock()
	var links []Link
	for _, id := range b.st.linkNodes() {
		li := b.links.info(id)
		if li.present {
			ev := "r"
			if li.writePending {
				ev = "rw"
			}
			links = append(links, Link{Direction: "to", Node: id, CreateTime: li.created.UnixMilli(), Events: ev,
				SendBufferAllocated: li.alloc, SendBufferUsed: li.used})
		}
		if li.inPres {
			links = append(links, Link{Direction: "from", Node: id, CreateTime: li.inCreated.UnixMilli(), Events: "r"})
		}
	}
	return links
}

// Replicas is CLUSTER REPLICAS|SLAVES id (the replicas' NODES lines).
func (b *Bus) Replicas(id string) ([]string, error) { return b.ReplicasFor(id, false) }

// ReplicasFor is Replicas with plaintext ports when plain (NodesTextFor).
func (b *Bus) ReplicasFor(id string, plain bool) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.ReplicasFor(id, plain)
}

// CountFailureReports is CLUSTER COUNT-FAILURE-REPORTS id.
func (b *Bus) CountFailureReports(id string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.CountFailureReports(id)
}

// Meet is CLUSTER MEET ip port [cport] (cport nil when absent).
func (b *Bus) Meet(ip, port, cport []byte) error {
	return b.do(func(s *State) error { return s.Meet(ip, port, cport) })
}

// AddSlots is CLUSTER ADDSLOTS slot...
func (b *Bus) AddSlots(args [][]byte) error {
	return b.do(func(s *State) error { return s.AddSlots(args) })
}

// DelSlots is CLUSTER DELSLOTS slot...
func (b *Bus) DelSlots(args [][]byte) error {
	return b.do(func(s *State) error { return s.DelSlots(args) })
}

// AddSlotsRange is CLUSTER ADDSLOTSRANGE start end...
func (b *Bus) AddSlotsRange(args [][]byte) error {
	return b.do(func(s *State) error { return s.AddSlotsRange(args) })
}

// DelSlotsRange is CLUSTER DELSLOTSRANGE start end...
func (b *Bus) DelSlotsRange(args [][]byte) error {
	return b.do(func(s *State) error { return s.DelSlotsRange(args) })
}

// FlushSlots is CLUSTER FLUSHSLOTS (dbEmpty: db 0 holds no key).
func (b *Bus) FlushSlots(dbEmpty bool) error {
	return b.do(func(s *State) error { return s.FlushSlots(dbEmpty) })
}

// SetSlot is CLUSTER SETSLOT (args after SETSLOT). keysInSlot is called with
// the Bus lock held and must not call back into the Bus.
func (b *Bus) SetSlot(args [][]byte, keysInSlot func(slot int) int) error {
	return b.do(func(s *State) error { return s.SetSlot(args, keysInSlot) })
}

// Forget is CLUSTER FORGET id.
func (b *Bus) Forget(id string) error {
	return b.do(func(s *State) error { return s.Forget(id) })
}

// Replicate is CLUSTER REPLICATE id (dbEmpty: db 0 holds no key). On
// success OnChange reports RoleChanged with the master's address.
func (b *Bus) Replicate(id string, dbEmpty bool) error {
	return b.do(func(s *State) error { return s.Replicate(id, dbEmpty) })
}

// Reset is CLUSTER RESET [HARD|SOFT] (dbEmpty: the node holds no key).
func (b *Bus) Reset(hard, dbEmpty bool) error {
	return b.do(func(s *State) error { return s.Reset(hard, dbEmpty) })
}

// SetConfigEpoch is CLUSTER SET-CONFIG-EPOCH epoch.
func (b *Bus) SetConfigEpoch(arg []byte) error {
	return b.do(func(s *State) error { return s.SetConfigEpoch(arg) })
}

// BumpEpoch is CLUSTER BUMPEPOCH; the result is the status text
// ("BUMPED n" / "STILL n"). nodes.conf is fsynced before it returns.
func (b *Bus) BumpEpoch() string {
	var r string
	_ = b.do(func(s *State) error { r = s.BumpEpoch(); return nil })
	return r
}

// SaveConfig is CLUSTER SAVECONFIG.
func (b *Bus) SaveConfig() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.persistLocked(Ready{Save: true, Fsync: true}); err != nil {
		return fmt.Errorf("ERR error saving the cluster node config: %s", unwrapPathError(err))
	}
	return nil
}

// BroadcastPong tells every node our configuration now.
func (b *Bus) BroadcastPong() {
	_ = b.do(func(s *State) error { s.BroadcastPong(); return nil })
}

// SetReplOffset records this node's replication offset (cheap; call it
// from the replication layer every now and then, e.g. on each cron).
func (b *Bus) SetReplOffset(off int64) {
	b.mu.Lock()
	b.st.SetReplOffset(off)
	b.mu.Unlock()
}

// SetOptions applies CONFIG SET of cluster-node-timeout,
// cluster-require-full-coverage, cluster-allow-replica-migration,
// cluster-replica-no-failover.
func (b *Bus) SetOptions(o Options) {
	var nodeTimeout time.Duration
	_ = b.do(func(s *State) error {
		s.SetOptions(o)
		nodeTimeout = s.opts.NodeTimeout
		return nil
	})
	// memberlist's Config is fixed at Create: its stream timeout is
	// re-tuned under it (gossip/bus_timing.go).
	b.streamTimeout.Store(int64(timingFor(nodeTimeout).stream))
}

// SetAnnounced changes what this node announces (CONFIG SET of
// cluster-announce-ip/-port/-bus-port/-hostname): the next messages carry
// it, so every node learns it (see State.SetAnnounced).
func (b *Bus) SetAnnounced(ip string, port, cport int, hostname string) {
	_ = b.do(func(s *State) error { s.SetAnnounced(ip, port, cport, hostname); return nil })
}

// SetPlaintextPort changes the plaintext port announced beside the TLS
// port (CONFIG SET port / cluster-announce-port in a TLS cluster).
func (b *Bus) SetPlaintextPort(pport int) {
	_ = b.do(func(s *State) error { s.SetPlaintextPort(pport); return nil })
}

// Do runs fn against the State under the Bus lock and carries out what it
// produced (for the failover layer: votes, auth requests, takeovers). fn
// must not keep the *State.
func (b *Bus) Do(fn func(s *State) error) error { return b.do(fn) }

// Traffic returns the bus payload bytes sent and received so far and the
// messages dropped because a queue was full.
func (b *Bus) Traffic() (sent, received, dropped uint64) {
	return b.bytesSent.Load(), b.bytesRecv.Load(), b.dropped.Load()
}

// Rejected returns how many inbound bus packets and stream messages the
// guard dropped as malformed or oversized (see guard.go).
func (b *Bus) Rejected() uint64 { return b.guard.rejected.Load() }

func unwrapPathError(err error) string {
	type unwrapper interface{ Unwrap() error }
	for {
		u, ok := err.(unwrapper)
		if !ok {
			return err.Error()
		}
		next := u.Unwrap()
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
