package node

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// This file wires the cluster bus (package gossip) into the server: creating
// it from the cluster-* directives, routing keyed commands with the
// lock-free slot table (MOVED, CROSSSLOT, CLUSTERDOWN), READONLY/READWRITE/
// ASKING, and acting on the bus's notifications.

// newClusterBus builds the bus when cluster-enabled is yes; nil otherwise.
func (s *Server) newClusterBus() (*gossip.Bus, error) {
	if !s.cfg.Bool("cluster-enabled") {
		return nil, nil
	}
	cfg := gossip.Config{
		Options:     s.clusterOptions(),
		IP:          s.announceIP(),
		Port:        int(s.cfg.Int("port")),
		ClusterPort: int(s.cfg.Int("cluster-port")),
		Hostname:    s.cfg.String("cluster-announce-hostname"),
		BindAddr:    s.busBindAddr(),
		Logger:      s.log,
		OnChange:    s.onClusterChange,
	}
	if p := s.cfg.Int("cluster-announce-port"); p > 0 {
		cfg.Port = int(p)
	}
	if p := s.cfg.Int("cluster-announce-bus-port"); p > 0 {
		cfg.ClusterPort = int(p)
	}
	if f := s.cfg.String("cluster-config-file"); f != "" {
		cfg.ConfigFile = f
		if !filepath.IsAbs(f) {
			cfg.ConfigFile = filepath.Join(s.cfg.String("dir"), f)
		}
	}
	return gossip.New(cfg)
}

// clusterOptions maps the cluster-* directives onto the bus's options.
func (s *Server) clusterOptions() gossip.Options {
	return gossip.Options{
		NodeTimeout:           time.Duration(s.cfg.Int("cluster-node-timeout")) * time.Millisecond,
		RequireFullCoverage:   s.cfg.Bool("cluster-require-full-coverage"),
		AllowReplicaMigration: s.cfg.Bool("cluster-allow-replica-migration"),
		NoFailover:            s.cfg.Bool("cluster-replica-no-failover"),
	}
}

// announceIP is cluster-announce-ip, else the first concrete bind address
// (what peers and MOVED redirects should use), else "" (the bus decides).
func (s *Server) announceIP() string {
	if ip := s.cfg.String("cluster-announce-ip"); ip != "" {
		return ip
	}
	for _, b := range s.cfg.Strings("bind") {
		b = strings.TrimPrefix(b, "-")
		if ip := net.ParseIP(b); ip != nil && !ip.IsUnspecified() {
			return ip.String()
		}
	}
	return ""
}

// busBindAddr is the address the bus listens on: the first concrete bind
// address, or every address.
func (s *Server) busBindAddr() string {
	for _, b := range s.cfg.Strings("bind") {
		b = strings.TrimPrefix(b, "-")
		if ip := net.ParseIP(b); ip != nil && !ip.IsUnspecified() {
			return ip.String()
		}
	}
	return ""
}

// registerClusterConfigHooks keeps the bus's options in step with CONFIG SET.
func (s *Server) registerClusterConfigHooks() {
	if s.cluster == nil {
		return
	}
	for _, name := range []string{"cluster-node-timeout", "cluster-require-full-coverage",
		"cluster-allow-replica-migration", "cluster-replica-no-failover"} {
		s.cfg.OnChange(name, func(string) error {
			s.cluster.SetOptions(s.clusterOptions())
			return nil
		})
	}
}

// onClusterChange acts on the bus's notifications (called in order, from
// one goroutine, without the bus lock).
func (s *Server) onClusterChange(ch gossip.Change) {
	if ch.RoleChanged {
		s.repl.followClusterRole(ch.MasterID, ch.MasterIP, ch.MasterPort) // node/replication.go
		if ch.MasterID == "" {
			s.log.Info("cluster: this node is now a master")
		} else {
			// The data stream from the master is the replication issue's
			// work; the topology change is already visible to clients.
			s.log.Info("cluster: this node is now a replica",
				zap.String("master", ch.MasterID), zap.String("addr", net.JoinHostPort(ch.MasterIP, strconv.Itoa(ch.MasterPort))))
		}
	}
	if ch.FlushData {
		s.ks.FlushAll()
	}
	if len(ch.LostSlots) > 0 {
		db := s.ks.DB(0)
		var n int64
		for _, slot := range ch.LostSlots {
			n += db.FlushSlot(uint16(slot))
		}
		s.log.Info("cluster: deleted the keys of slots lost to a newer configuration",
			zap.Int("slots", len(ch.LostSlots)), zap.Int64("keys", n))
	}
}

// clusterRedirect is why a keyed command cannot run here.
type clusterRedirect int

const (
	routeHere clusterRedirect = iota
	routeCrossSlot
	routeUnbound
	routeDown
	routeDownReadOnly
	routeMoved
)

// routeSlots decides where keys in the given slots (non-empty) are served,
// as Redis's getNodeByQuery does without the migration cases: one slot only,
// an assigned slot, a cluster that is up (reads may be allowed while down),
// and this node as the owner — or, for a READONLY client's read, this
// node's master.
func (c *Client) routeSlots(spec *CommandSpec, slotList []uint16) (clusterRedirect, uint16, *slots.Node) {
	slot := slotList[0]
	for _, x := range slotList[1:] {
		if x != slot {
			return routeCrossSlot, slot, nil
		}
	}
	t := c.srv.cluster.Slots().Load()
	owner := t.Owner(int(slot))
	if owner == nil {
		return routeUnbound, slot, nil
	}
	if !t.OK {
		if !c.srv.cfg.Bool("cluster-allow-reads-when-down") {
			return routeDown, slot, nil
		}
		if spec.Flags&FlagWrite != 0 {
			return routeDownReadOnly, slot, nil
		}
	}
	if owner.ID == t.MyID {
		return routeHere, slot, nil
	}
	if c.readonly && t.MyMaster != "" && owner.ID == t.MyMaster && spec.Flags&FlagWrite == 0 {
		return routeHere, slot, nil
	}
	return routeMoved, slot, owner
}

// redirect writes the error for a command that cannot run here.
func (c *Client) redirect(r clusterRedirect, slot uint16, owner *slots.Node) {
	switch r {
	case routeCrossSlot:
		c.Error("CROSSSLOT Keys in request don't hash to the same slot")
	case routeUnbound:
		c.Error("CLUSTERDOWN Hash slot not served")
	case routeDown:
		c.Error("CLUSTERDOWN The cluster is down")
	case routeDownReadOnly:
		c.Error("CLUSTERDOWN The cluster is down and only accepts read commands")
	case routeMoved:
		c.Error(fmt.Sprintf("MOVED %d %s:%d", slot, c.srv.preferredEndpoint(owner), owner.Port))
	}
}

// preferredEndpoint is the host a redirect names, per
// cluster-preferred-endpoint-type, as Redis's getPreferredEndpoint: the IP,
// the hostname ("?" when the node announced none), or "" for
// unknown-endpoint.
func (s *Server) preferredEndpoint(n *slots.Node) string {
	switch s.cfg.String("cluster-preferred-endpoint-type") {
	case "hostname":
		if n.Hostname == "" {
			return "?"
		}
		return n.Hostname
	case "unknown-endpoint":
		return ""
	}
	return n.IP
}

// routeCommand routes the running command by the slots in c.slotBuf (its
// keys'); it writes the redirect and returns false when the command must
// not run here. Commands without keys are never redirected.
func (c *Client) routeCommand(spec *CommandSpec) bool {
	if len(c.slotBuf) == 0 {
		return true
	}
	r, slot, owner := c.routeSlots(spec, c.slotBuf)
	if r == routeHere {
		return true
	}
	c.redirect(r, slot, owner)
	return false
}

// routeTransaction checks at EXEC that every queued command's keys hash to
// one slot served here (Redis routes the whole transaction as one request).
func (c *Client) routeTransaction(queue []queuedCommand) bool {
	var all []uint16
	var write bool
	for _, qc := range queue {
		keys, _ := commandKeys(qc.spec, qc.args, nil)
		for _, p := range keys {
			all = append(all, slots.KeySlot(qc.args[p]))
		}
		write = write || qc.spec.Flags&FlagWrite != 0
	}
	if len(all) == 0 {
		return true
	}
	probe := &CommandSpec{}
	if write {
		probe.Flags = FlagWrite
	}
	r, slot, owner := c.routeSlots(probe, all)
	if r == routeHere {
		return true
	}
	c.redirect(r, slot, owner)
	return false
}

// clusterHandlers: READONLY, READWRITE, ASKING (the CLUSTER command itself
// is in cmd_cluster.go).
func clusterRoutingHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"readonly":  cmdReadonly,
		"readwrite": cmdReadwrite,
		"asking":    cmdAsking,
	}
}

const msgClusterDisabled = "ERR This instance has cluster support disabled"

func cmdReadonly(c *Client, args [][]byte) {
	if c.srv.cluster == nil {
		c.Error(msgClusterDisabled)
		return
	}
	c.readonly = true
	c.OK()
}

func cmdReadwrite(c *Client, args [][]byte) {
	if c.srv.cluster == nil {
		c.Error(msgClusterDisabled)
		return
	}
	c.readonly = false
	c.OK()
}

// cmdAsking flags the next command as allowed on an importing slot (slot
// migration uses it; without migration it only answers +OK).
func cmdAsking(c *Client, args [][]byte) {
	if c.srv.cluster == nil {
		c.Error(msgClusterDisabled)
		return
	}
	c.asking = true
	c.OK()
}

// countKeysInSlot is what CLUSTER COUNTKEYSINSLOT and SETSLOT need: the
// number of keys db 0 holds in a slot.
func (s *Server) countKeysInSlot(slot int) int {
	return int(s.ks.DB(0).SlotSize(uint16(slot)))
}

// keysInSlot returns up to count keys of one slot (CLUSTER GETKEYSINSLOT).
func (s *Server) keysInSlot(slot uint16, count int) []string {
	var out []string
	s.ks.DB(0).ScanSlot(slot, func(e *store.Entry) bool {
		if len(out) >= count {
			return false
		}
		out = append(out, e.Key())
		return true
	})
	return out
}
