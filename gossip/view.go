package gossip

import (
	"strconv"
	"time"

	"github.com/shoal-db/shoal/slots"
)

// NodeInfo is a copy of what this node knows about one cluster node.
type NodeInfo struct {
	ID     string
	Flags  Flags
	Master string // master's id, "" for a master (or an unknown master)
	IP     string
	Port   int
	CPort  int
	// PPort is the plaintext client port of a node of a TLS cluster (its
	// Port is then the TLS port), 0 when it announced none.
	PPort    int
	Hostname string
	// PingSent and PongReceived are unix milliseconds, 0 for none.
	PingSent, PongReceived int64
	// ConfigEpoch is the node's own; CLUSTER NODES shows a replica's
	// master's (see Epoch).
	ConfigEpoch uint64
	// Epoch is what CLUSTER NODES prints: the master's configEpoch for a
	// replica.
	Epoch     uint64
	Connected bool
	Slots     slots.Bitmap
	NumSlots  int
	// ReplOffset is the last replication offset the node announced (this
	// node's own as set by SetReplOffset for myself).
	ReplOffset  int64
	FailReports int
	// Replicas are the ids of the node's replicas, in the order learned.
	Replicas []string
	// LinkCreated is when the current bus "link" to the node was made
	// (unix ms, 0 when disconnected).
	LinkCreated int64
}

// IsMaster, IsReplica, Failed report the flags.
func (n NodeInfo) IsMaster() bool  { return n.Flags&FlagMaster != 0 }
func (n NodeInfo) IsReplica() bool { return n.Flags&FlagSlave != 0 }
func (n NodeInfo) Failed() bool    { return n.Flags&FlagFail != 0 }

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func (s *State) info(n *node) NodeInfo {
	ni := NodeInfo{
		ID: n.id, Flags: n.flags &^ (FlagMeet | FlagMigrateTo), IP: n.ip, Port: n.port, CPort: n.cport, PPort: n.pport,
		Hostname: n.hostname, PingSent: unixMs(n.pingSent), PongReceived: unixMs(n.pongReceived),
		ConfigEpoch: n.configEpoch, Epoch: n.configEpoch, Connected: s.connected(n),
		Slots: n.slots, NumSlots: n.numSlots, ReplOffset: n.replOffset,
		FailReports: s.failureReportsCount(n), LinkCreated: unixMs(n.linkTime),
	}
	if n.master != nil {
		ni.Master = n.master.id
		if n.isSlave() {
			ni.Epoch = n.master.configEpoch
		}
	}
	for _, r := range n.replicas {
		ni.Replicas = append(ni.Replicas, r.id)
	}
	return ni
}

// MyID returns this node's id.
func (s *State) MyID() string { return s.myself.id }

// Myself returns this node's record.
func (s *State) Myself() NodeInfo { return s.info(s.myself) }

// Nodes returns every known node, myself first, then in the order learned.
func (s *State) Nodes() []NodeInfo {
	out := make([]NodeInfo, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.info(n))
	}
	return out
}

// Node returns the node with the given id.
func (s *State) Node(id string) (NodeInfo, bool) {
	n := s.lookup(id)
	if n == nil {
		return NodeInfo{}, false
	}
	return s.info(n), true
}

// Epochs returns currentEpoch and lastVoteEpoch.
func (s *State) Epochs() (current, lastVote uint64) { return s.currentEpoch, s.lastVoteEpoch }

// StateOK reports cluster_state:ok.
func (s *State) StateOK() bool { return s.stateOK }

// appendNodeLine appends one CLUSTER NODES line (clusterGenNodeDescription),
// without the trailing newline.
//
// plain writes the node's plaintext port instead of its TLS port when it
// announced one (a plaintext client of a TLS cluster, as Redis's use_pport).
func (s *State) appendNodeLine(b []byte, n *node, plain bool) []byte {
	b = append(b, n.id...)
	b = append(b, ' ')
	b = append(b, n.ip...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(n.clientPort(plain)), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, int64(n.cport), 10)
	if n.hostname != "" {
		b = append(b, ',')
		b = append(b, n.hostname...)
	}
	b = append(b, ' ')
	b = (n.flags &^ (FlagMeet | FlagMigrateTo)).appendTo(b)
	b = append(b, ' ')
	if n.master != nil {
		b = append(b, n.master.id...)
	} else {
		b = append(b, '-')
	}
	epoch := n.configEpoch
	if n.isSlave() && n.master != nil {
		epoch = n.master.configEpoch
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, unixMs(n.pingSent), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, unixMs(n.pongReceived), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, epoch, 10)
	if s.connected(n) {
		b = append(b, " connected"...)
	} else {
		b = append(b, " disconnected"...)
	}
	if n.numSlots > 0 {
		b = append(b, ' ')
		b = n.slots.AppendRanges(b)
	}
	if n == s.myself {
		for j := 0; j < slots.Count; j++ {
			if m := s.migrating.get(j); m != nil {
				b = append(b, " ["...)
				b = strconv.AppendInt(b, int64(j), 10)
				b = append(b, "->-"...)
				b = append(b, m.id...)
				b = append(b, ']')
			} else if m := s.importing.get(j); m != nil {
				b = append(b, " ["...)
				b = strconv.AppendInt(b, int64(j), 10)
				b = append(b, "-<-"...)
				b = append(b, m.id...)
				b = append(b, ']')
			}
		}
	}
	return b
}

// NodesText is the CLUSTER NODES reply body: one line per node, each
// ending in "\n".
func (s *State) NodesText() string { return string(s.nodesText(0, false)) }

// NodesTextFor is NodesText with plaintext ports when plain (see
// appendNodeLine).
func (s *State) NodesTextFor(plain bool) string { return string(s.nodesText(0, plain)) }

// clientPort is the node's client port, its plaintext one when plain and
// it announced one.
func (n *node) clientPort(plain bool) int {
	if plain && n.pport != 0 {
		return n.pport
	}
	return n.port
}

func (s *State) nodesText(skip Flags, plain bool) []byte {
	b := make([]byte, 0, 160*len(s.order))
	for _, n := range s.order {
		if n.flags&skip != 0 {
			continue
		}
		b = s.appendNodeLine(b, n, plain)
		b = append(b, '\n')
	}
	return b
}

// NodeLine is one node's CLUSTER NODES line without "\n" (CLUSTER REPLICAS).
func (s *State) NodeLine(id string) (string, bool) {
	n := s.lookup(id)
	if n == nil {
		return "", false
	}
	return string(s.appendNodeLine(nil, n, false)), true
}

// Replicas is CLUSTER REPLICAS|SLAVES id: the CLUSTER NODES lines of the
// master's replicas.
func (s *State) Replicas(id string) ([]string, error) { return s.ReplicasFor(id, false) }

// ReplicasFor is Replicas with plaintext ports when plain.
func (s *State) ReplicasFor(id string, plain bool) ([]string, error) {
	n := s.lookup(id)
	if n == nil {
		return nil, errorf("Unknown node %s", id)
	}
	if n.isSlave() {
		return nil, errorf("The specified node is not a master")
	}
	out := make([]string, 0, len(n.replicas))
	for _, r := range n.replicas {
		out = append(out, string(s.appendNodeLine(nil, r, plain)))
	}
	return out, nil
}

// ConfigText is the content of nodes.conf (clusterSaveConfig): the CLUSTER
// NODES lines without handshake nodes, then the vars line.
func (s *State) ConfigText() []byte {
	b := s.nodesText(FlagHandshake, false)
	b = append(b, "vars currentEpoch "...)
	b = strconv.AppendUint(b, s.currentEpoch, 10)
	b = append(b, " lastVoteEpoch "...)
	b = strconv.AppendUint(b, s.lastVoteEpoch, 10)
	b = append(b, '\n')
	return b
}

// InfoText is the CLUSTER INFO reply body ("\r\n" lines, Redis's order).
func (s *State) InfoText() string {
	assigned, ok, pfail, fail := 0, 0, 0, 0
	for j := 0; j < slots.Count; j++ {
		n := s.owner.get(j)
		if n == nil {
			continue
		}
		assigned++
		switch {
		case n.failed():
			fail++
		case n.timedOut():
			pfail++
		default:
			ok++
		}
	}
	myEpoch := s.myself.configEpoch
	if s.myself.isSlave() && s.myself.master != nil {
		myEpoch = s.myself.master.configEpoch
	}
	state := "fail"
	if s.stateOK {
		state = "ok"
	}
	b := make([]byte, 0, 1024)
	line := func(k string, v uint64) {
		b = append(b, k...)
		b = append(b, ':')
		b = strconv.AppendUint(b, v, 10)
		b = append(b, '\r', '\n')
	}
	b = append(b, "cluster_state:"+state+"\r\n"...)
	line("cluster_slots_assigned", uint64(assigned))
	line("cluster_slots_ok", uint64(ok))
	line("cluster_slots_pfail", uint64(pfail))
	line("cluster_slots_fail", uint64(fail))
	line("cluster_known_nodes", uint64(len(s.nodes)))
	line("cluster_size", uint64(s.size))
	line("cluster_current_epoch", s.currentEpoch)
	line("cluster_my_epoch", myEpoch)
	var sent, recv uint64
	for t := 0; t < msgTypeCount; t++ {
		if v := s.statsSent[t]; v != 0 {
			sent += v
			line("cluster_stats_messages_"+MsgType(t).String()+"_sent", v)
		}
	}
	line("cluster_stats_messages_sent", sent)
	for t := 0; t < msgTypeCount; t++ {
		if v := s.statsRecv[t]; v != 0 {
			recv += v
			line("cluster_stats_messages_"+MsgType(t).String()+"_received", v)
		}
	}
	line("cluster_stats_messages_received", recv)
	line("total_cluster_links_buffer_limit_exceeded", s.linksBufferExceeded)
	return string(b)
}

// MessageStats returns the per-type sent and received message counters.
func (s *State) MessageStats() (sent, received [msgTypeCount]uint64) {
	return s.statsSent, s.statsRecv
}

// SlotRange is one entry of CLUSTER SLOTS: a maximal run of slots served by
// one master, with the master's available replicas (not failing, offset ≠ 0).
type SlotRange struct {
	Start, End int
	Master     NodeInfo
	Replicas   []NodeInfo
}

// SlotRanges is the data of CLUSTER SLOTS, ascending.
func (s *State) SlotRanges() []SlotRange {
	var out []SlotRange
	var cur *node
	start := -1
	flush := func(end int) {
		if cur == nil {
			return
		}
		r := SlotRange{Start: start, End: end, Master: s.info(cur)}
		for _, rep := range cur.replicas {
			if rep.failed() || rep.replOffset == 0 {
				continue
			}
			r.Replicas = append(r.Replicas, s.info(rep))
		}
		out = append(out, r)
	}
	for j := 0; j <= slots.Count; j++ {
		var n *node
		if j < slots.Count {
			n = s.owner.get(j)
		}
		if n != cur || j == slots.Count {
			flush(j - 1)
			cur, start = n, j
		}
	}
	return out
}

// Shard is one entry of CLUSTER SHARDS: a master (with or without slots)
// and its replicas; Slots are the master's maximal runs.
type Shard struct {
	Slots []slots.Range
	Nodes []NodeInfo // the master first
}

// Shards is the data of CLUSTER SHARDS. A node's health is "fail" when
// Failed(), "loading" for a replica with offset 0, else "online".
func (s *State) Shards() []Shard {
	var out []Shard
	for _, n := range s.order {
		if !n.isMaster() {
			continue
		}
		sh := Shard{Slots: n.slots.Ranges(), Nodes: []NodeInfo{s.info(n)}}
		for _, r := range n.replicas {
			sh.Nodes = append(sh.Nodes, s.info(r))
		}
		out = append(out, sh)
	}
	return out
}

// Link is one entry of CLUSTER LINKS.
type Link struct {
	Direction           string // "to" or "from"
	Node                string
	CreateTime          int64 // unix ms
	Events              string
	SendBufferAllocated int64
	SendBufferUsed      int64
}

// Links is the State's own bookkeeping of the links (linkTime, inboundTime):
// a "to" link per node we talk to and a "from" link per node that talks to
// us. CLUSTER LINKS shows the Bus's real ones (Bus.Links, link.go), which
// follow linkTime; this view serves the deterministic simulations.
func (s *State) Links() []Link {
	var out []Link
	for _, n := range s.order {
		if n == s.myself || n.inHandshake() {
			continue
		}
		if !n.linkTime.IsZero() {
			out = append(out, Link{Direction: "to", Node: n.id, CreateTime: unixMs(n.linkTime), Events: "r"})
		}
		if s.connected(n) && !n.inboundTime.IsZero() {
			out = append(out, Link{Direction: "from", Node: n.id, CreateTime: unixMs(n.inboundTime), Events: "r"})
		}
	}
	return out
}

// linkPeers appends to out the nodes the State holds a link to (a
// non-zero link time): the Bus keeps a cluster link to each
// (busLinks.sync).
func (s *State) linkPeers(out []linkPeer) []linkPeer {
	for _, n := range s.order {
		if n == s.myself || n.linkKilled || n.linkTime.IsZero() || !n.hasAddr() || n.ip == "" || n.cport <= 0 {
			continue
		}
		out = append(out, linkPeer{id: n.id, addr: n.addr(), since: n.linkTime})
	}
	return out
}

// linkNodes are the nodes CLUSTER LINKS reports links with: every node
// but myself and those in a handshake.
func (s *State) linkNodes() []string {
	var out []string
	for _, n := range s.order {
		if n != s.myself && !n.inHandshake() {
			out = append(out, n.id)
		}
	}
	return out
}
