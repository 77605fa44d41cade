package node

import (
	"slices"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/slots"
)

// This file is the CLUSTER command family (cluster.c clusterCommand). The
// cluster state and its rules live in package gossip; the handlers here
// parse what Redis parses before calling the bus, shape the replies
// (CLUSTER SLOTS / SHARDS / LINKS and the verbatim NODES and INFO texts),
// and supply what only the server knows: the keys of db 0. CLUSTER FAILOVER
// belongs to the failover layer and is not registered here.

func clusterHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"cluster|help":                  clusterOnly(cmdClusterHelp),
		"cluster|meet":                  clusterOnly(cmdClusterMeet),
		"cluster|nodes":                 clusterOnly(cmdClusterNodes),
		"cluster|slots":                 clusterOnly(cmdClusterSlots),
		"cluster|shards":                clusterOnly(cmdClusterShards),
		"cluster|info":                  clusterOnly(cmdClusterInfo),
		"cluster|myid":                  clusterOnly(cmdClusterMyID),
		"cluster|keyslot":               clusterOnly(cmdClusterKeySlot),
		"cluster|countkeysinslot":       clusterOnly(cmdClusterCountKeysInSlot),
		"cluster|getkeysinslot":         clusterOnly(cmdClusterGetKeysInSlot),
		"cluster|addslots":              clusterOnly(cmdClusterAddSlots),
		"cluster|addslotsrange":         clusterOnly(cmdClusterAddSlotsRange),
		"cluster|delslots":              clusterOnly(cmdClusterDelSlots),
		"cluster|delslotsrange":         clusterOnly(cmdClusterDelSlotsRange),
		"cluster|flushslots":            clusterOnly(cmdClusterFlushSlots),
		"cluster|replicate":             clusterOnly(cmdClusterReplicate),
		"cluster|replicas":              clusterOnly(cmdClusterReplicas),
		"cluster|slaves":                clusterOnly(cmdClusterReplicas),
		"cluster|set-config-epoch":      clusterOnly(cmdClusterSetConfigEpoch),
		"cluster|bumpepoch":             clusterOnly(cmdClusterBumpEpoch),
		"cluster|reset":                 clusterOnly(cmdClusterReset),
		"cluster|forget":                clusterOnly(cmdClusterForget),
		"cluster|saveconfig":            clusterOnly(cmdClusterSaveConfig),
		"cluster|links":                 clusterOnly(cmdClusterLinks),
		"cluster|count-failure-reports": clusterOnly(cmdClusterCountFailureReports),
		"cluster|setslot":               clusterOnly(cmdClusterSetSlot),
	}
}

// clusterOnly answers every CLUSTER subcommand of a standalone node with
// Redis's error (clusterCommand checks cluster_enabled before anything).
func clusterOnly(h HandlerFunc) HandlerFunc {
	return func(c *Client, args [][]byte) {
		if c.srv.cluster == nil {
			c.Error(msgClusterDisabled)
			return
		}
		h(c, args)
	}
}

// clusterReply answers a bus command: nil is +OK, an error carries the exact
// Redis reply text (including its "ERR " or other code).
func (c *Client) clusterReply(err error) {
	if err != nil {
		c.Error(err.Error())
		return
	}
	c.OK()
}

// dbEmpty reports whether db 0 holds no key (Redis's dictSize(db[0].dict)
// == 0, which counts keys that expired but are not deleted yet, as Size does).
func (s *Server) dbEmpty() bool { return s.ks.DB(0).Size() == 0 }

var clusterHelpLines = []string{
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
}

// cmdClusterHelp is Redis's CLUSTER HELP followed by shoal's extensions
// (node/cmd_cluster_migrate.go).
func cmdClusterHelp(c *Client, args [][]byte) {
	c.ReplyHelp(args, slices.Concat(clusterHelpLines, clusterExtensionHelpLines))
}

// cmdClusterMeet is CLUSTER MEET ip port [cport]; the metadata's arity (-4)
// lets six or more arguments through, which Redis answers as a subcommand
// syntax error.
func cmdClusterMeet(c *Client, args [][]byte) {
	if len(args) != 4 && len(args) != 5 {
		c.ErrSubcommandSyntax(args)
		return
	}
	var cport []byte
	if len(args) == 5 {
		cport = args[4]
	}
	c.clusterReply(c.srv.cluster.Meet(args[2], args[3], cport))
}

func cmdClusterNodes(c *Client, args [][]byte) {
	c.Verbatim(c.srv.cluster.NodesTextFor(c.plainPorts()), "txt")
}

func cmdClusterInfo(c *Client, args [][]byte) {
	c.Verbatim(c.srv.cluster.InfoText(), "txt")
}

func cmdClusterMyID(c *Client, args [][]byte) { c.BulkString(c.srv.cluster.MyID()) }

func cmdClusterKeySlot(c *Client, args [][]byte) { c.Int(int64(slots.KeySlot(args[2]))) }

func cmdClusterCountKeysInSlot(c *Client, args [][]byte) {
	slot, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if slot < 0 || slot >= slots.Count {
		c.Error("ERR Invalid slot")
		return
	}
	c.Int(int64(c.srv.countKeysInSlot(int(slot))))
}

func cmdClusterGetKeysInSlot(c *Client, args [][]byte) {
	slot, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	maxKeys, ok := command.ParseInt64(args[3])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if slot < 0 || slot >= slots.Count || maxKeys < 0 {
		c.Error("ERR Invalid slot or number of keys")
		return
	}
	// keysInSlot appends as it goes, so a huge count allocates nothing
	// up front; the slot's own size bounds the reply.
	n := int64(c.srv.countKeysInSlot(int(slot)))
	keys := c.srv.keysInSlot(uint16(slot), int(min(maxKeys, n)))
	c.StringArray(keys)
}

func cmdClusterAddSlots(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.AddSlots(args[2:]))
}

func cmdClusterDelSlots(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.DelSlots(args[2:]))
}

func cmdClusterAddSlotsRange(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.AddSlotsRange(args[2:]))
}

func cmdClusterDelSlotsRange(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.DelSlotsRange(args[2:]))
}

func cmdClusterFlushSlots(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.FlushSlots(c.srv.dbEmpty()))
}

func cmdClusterReplicate(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.Replicate(string(args[2]), c.srv.dbEmpty()))
}

// cmdClusterReplicas is CLUSTER REPLICAS|SLAVES id: the replicas' NODES
// lines, each a bulk string without its newline.
func cmdClusterReplicas(c *Client, args [][]byte) {
	lines, err := c.srv.cluster.ReplicasFor(string(args[2]), c.plainPorts())
	if err != nil {
		c.Error(err.Error())
		return
	}
	c.StringArray(lines)
}

func cmdClusterSetConfigEpoch(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.SetConfigEpoch(args[2]))
}

func cmdClusterBumpEpoch(c *Client, args [][]byte) { c.Status(c.srv.cluster.BumpEpoch()) }

// cmdClusterReset is CLUSTER RESET [HARD|SOFT] (soft by default).
func cmdClusterReset(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	hard := false
	if len(args) == 3 {
		switch {
		case command.ArgEquals(args[2], "hard"):
			hard = true
		case command.ArgEquals(args[2], "soft"):
		default:
			c.ErrSyntax()
			return
		}
	}
	c.clusterReply(c.srv.cluster.Reset(hard, c.srv.dbEmpty()))
}

func cmdClusterForget(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.Forget(string(args[2])))
}

func cmdClusterSaveConfig(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.SaveConfig())
}

func cmdClusterCountFailureReports(c *Client, args [][]byte) {
	n, err := c.srv.cluster.CountFailureReports(string(args[2]))
	if err != nil {
		c.Error(err.Error())
		return
	}
	c.Int(int64(n))
}

// cmdClusterSetSlot is CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE id /
// STABLE. The key count callback runs under the bus lock; it only reads the
// keyspace's per-slot counters.
func cmdClusterSetSlot(c *Client, args [][]byte) {
	c.clusterReply(c.srv.cluster.SetSlot(args[2:], c.srv.countKeysInSlot))
}

// endpoint is Redis's getPreferredEndpoint for CLUSTER SHARDS: the IP, the
// hostname ("?" when the node has none), or "" for unknown-endpoint.
func (c *Client) endpoint(n *gossip.NodeInfo) string {
	switch c.srv.cfg.String("cluster-preferred-endpoint-type") {
	case "hostname":
		if n.Hostname != "" {
			return n.Hostname
		}
		return "?"
	case "unknown-endpoint":
		return ""
	}
	return n.IP
}

// slotsNode writes one node of a CLUSTER SLOTS entry (addNodeToNodeReply):
// [endpoint, port, id, {the known endpoints that are not the preferred
// one}]. With unknown-endpoint the endpoint is a null.
func (c *Client) slotsNode(n *gossip.NodeInfo) {
	kind := c.srv.cfg.String("cluster-preferred-endpoint-type")
	c.Array(4)
	switch kind {
	case "hostname":
		c.BulkString(c.endpoint(n))
	case "unknown-endpoint":
		c.Null()
	default:
		c.BulkString(n.IP)
	}
	c.Int(int64(clientPort(n.Port, n.PPort, c.plainPorts())))
	c.BulkString(n.ID)
	withIP := kind != "ip"
	withHostname := kind != "hostname" && n.Hostname != ""
	pairs := 0
	if withIP {
		pairs++
	}
	if withHostname {
		pairs++
	}
	c.Map(pairs)
	if withIP {
		c.BulkString("ip")
		c.BulkString(n.IP)
	}
	if withHostname {
		c.BulkString("hostname")
		c.BulkString(n.Hostname)
	}
}

// cmdClusterSlots is CLUSTER SLOTS: [start, end, master, available
// replicas...] per maximal run of slots served by one master.
func cmdClusterSlots(c *Client, args [][]byte) {
	ranges := c.srv.cluster.SlotRanges()
	c.Array(len(ranges))
	for i := range ranges {
		r := &ranges[i]
		c.Array(3 + len(r.Replicas))
		c.Int(int64(r.Start))
		c.Int(int64(r.End))
		c.slotsNode(&r.Master)
		for j := range r.Replicas {
			c.slotsNode(&r.Replicas[j])
		}
	}
}

// cmdClusterShards is CLUSTER SHARDS: per master, its slot ranges as a flat
// list of bounds and the details of the master and its replicas.
func cmdClusterShards(c *Client, args [][]byte) {
	shards := c.srv.cluster.Shards()
	c.Array(len(shards))
	for i := range shards {
		sh := &shards[i]
		c.Map(2)
		c.BulkString("slots")
		c.Array(2 * len(sh.Slots))
		for _, r := range sh.Slots {
			c.Int(int64(r.Start))
			c.Int(int64(r.End))
		}
		c.BulkString("nodes")
		c.Array(len(sh.Nodes))
		for j := range sh.Nodes {
			c.shardNode(&sh.Nodes[j])
		}
	}
}

// shardNode writes one node's details in CLUSTER SHARDS
// (addNodeDetailsToShardReply), in Redis's field order.
func (c *Client) shardNode(n *gossip.NodeInfo) {
	// tls-cluster says whether a node's port is its TLS port (Redis uses
	// it as the proxy for the whole cluster's ports).
	port, tlsPort := n.Port, 0
	if c.srv.cfg.Bool("tls-cluster") {
		port, tlsPort = n.PPort, n.Port
	}
	pairs := 6
	if port != 0 {
		pairs++
	}
	if tlsPort != 0 {
		pairs++
	}
	if n.Hostname != "" {
		pairs++
	}
	c.Map(pairs)
	c.BulkString("id")
	c.BulkString(n.ID)
	if port != 0 {
		c.BulkString("port")
		c.Int(int64(port))
	}
	if tlsPort != 0 {
		c.BulkString("tls-port")
		c.Int(int64(tlsPort))
	}
	c.BulkString("ip")
	c.BulkString(n.IP)
	c.BulkString("endpoint")
	c.BulkString(c.endpoint(n))
	if n.Hostname != "" {
		c.BulkString("hostname")
		c.BulkString(n.Hostname)
	}
	c.BulkString("role")
	if n.IsReplica() {
		c.BulkString("replica")
	} else {
		c.BulkString("master")
	}
	c.BulkString("replication-offset")
	c.Int(n.ReplOffset)
	c.BulkString("health")
	switch {
	case n.Failed():
		c.BulkString("fail")
	case n.IsReplica() && n.ReplOffset == 0:
		c.BulkString("loading")
	default:
		c.BulkString("online")
	}
}

// cmdClusterLinks is CLUSTER LINKS: one six-field map per bus link.
func cmdClusterLinks(c *Client, args [][]byte) {
	links := c.srv.cluster.Links()
	c.Array(len(links))
	for _, l := range links {
		c.Map(6)
		c.BulkString("direction")
		c.BulkString(l.Direction)
		c.BulkString("node")
		c.BulkString(l.Node)
		c.BulkString("create-time")
		c.Int(l.CreateTime)
		c.BulkString("events")
		c.BulkString(l.Events)
		c.BulkString("send-buffer-allocated")
		c.Int(l.SendBufferAllocated)
		c.BulkString("send-buffer-used")
		c.Int(l.SendBufferUsed)
	}
}
