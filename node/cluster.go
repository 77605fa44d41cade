package node

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/config"
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
	port, pport, cport := s.announcedPorts()
	cfg := gossip.Config{
		Options:     s.clusterOptions(),
		IP:          s.announceIP(),
		Port:        port,
		PPort:       pport,
		TLS:         s.busTLS(), // node/cluster_tls.go
		ClusterPort: cport,
		Hostname:    s.cfg.String("cluster-announce-hostname"),
		BindAddr:    s.busBindAddr(),
		SourceAddr:  func() string { return s.cfg.String("bind-source-addr") },
		BindPort:    s.busPort(),
		Logger:      s.log,
		OnChange:    s.onClusterChange,
		Secrets:     config.ClusterBusSecrets(s.cfg.String("cluster-bus-secret")),
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
	return s.failoverOptions(gossip.Options{ // node/cmd_failover.go
		NodeTimeout:           time.Duration(s.cfg.Int("cluster-node-timeout")) * time.Millisecond,
		RequireFullCoverage:   s.cfg.Bool("cluster-require-full-coverage"),
		AllowReplicaMigration: s.cfg.Bool("cluster-allow-replica-migration"),
		NoFailover:            s.cfg.Bool("cluster-replica-no-failover"),
		LinkSendBufLimit:      s.cfg.Uint("cluster-link-sendbuf-limit"),
	})
}

// announcedPorts are the client, plaintext and bus ports this node
// announces, as Redis's deriveAnnouncedPorts: with tls-cluster the client
// port is tls-port (cluster-announce-tls-port) and the plaintext one port
// (cluster-announce-port); without, port (cluster-announce-port) and no
// plaintext one; the bus port is cluster-announce-bus-port, else the one
// it listens on.
func (s *Server) announcedPorts() (port, pport, cport int) {
	if s.cfg.Bool("tls-cluster") {
		port, pport = int(s.cfg.Int("tls-port")), int(s.cfg.Int("port"))
		if p := s.cfg.Int("cluster-announce-tls-port"); p > 0 {
			port, pport = int(p), int(s.cfg.Int("cluster-announce-port"))
		}
	} else {
		port = int(s.cfg.Int("port"))
		if p := s.cfg.Int("cluster-announce-port"); p > 0 {
			port = int(p)
		}
	}
	cport = s.busPort()
	if p := s.cfg.Int("cluster-announce-bus-port"); p > 0 {
		cport = int(p)
	}
	return port, pport, cport
}

// busPort is the port the bus listens on: cluster-port, 0 = the client
// port (tls-port with tls-cluster) + 10000.
func (s *Server) busPort() int {
	if p := s.cfg.Int("cluster-port"); p > 0 {
		return int(p)
	}
	if s.cfg.Bool("tls-cluster") {
		return int(s.cfg.Int("tls-port")) + 10000
	}
	return int(s.cfg.Int("port")) + 10000
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
	s.migrations = s.newMigrations()
	s.wireFailover() // node/cmd_failover.go
	for _, name := range []string{"cluster-node-timeout", "cluster-require-full-coverage",
		"cluster-allow-replica-migration", "cluster-replica-no-failover", "cluster-link-sendbuf-limit"} {
		s.cfg.OnChange(name, func(string) error {
			s.cluster.SetOptions(s.clusterOptions())
			return nil
		})
	}
	// Redis applies these at run time and its next pings carry them.
	for _, name := range []string{"cluster-announce-ip", "cluster-announce-port", "cluster-announce-bus-port",
		"cluster-announce-hostname", "cluster-announce-tls-port"} {
		s.cfg.OnChange(name, func(string) error {
			port, pport, cport := s.announcedPorts()
			s.cluster.SetAnnounced(s.announceIP(), port, cport, s.cfg.String("cluster-announce-hostname"))
			s.cluster.SetPlaintextPort(pport)
			return nil
		})
	}
	s.registerClusterTLSHooks() // node/cluster_tls.go
	// Rotating the bus secret takes effect at once; turning it on or off
	// is refused (gossip.ErrSecretOnOff) and CONFIG SET keeps the old value.
	s.cfg.OnChange("cluster-bus-secret", func(v string) error {
		return s.cluster.SetSecrets(config.ClusterBusSecrets(v))
	})
}

// onClusterChange acts on the bus's notifications (called in order, from
// one goroutine, without the bus lock).
func (s *Server) onClusterChange(ch gossip.Change) {
	s.applyFailoverPause(ch) // node/cmd_failover.go
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
	if ch.DataLostEnded {
		s.endDataLost() // node/datalost.go
	}
	if ch.FlushData {
		s.ks.FlushAll()
		s.tx.watch.touchFlushed(-1, nil) // node/watch.go
		s.trackingSlotsLost(nil)         // node/tracking.go
	}
	if ch.Table != nil {
		s.redirectBlockedClients(ch.Table)
		s.dropShardChannels(ch.Table) // node/pubsub.go
	}
	s.deliverInbound(ch.Inbound) // node/pubsub.go
	if len(ch.LostSlots) > 0 {
		n := s.deleteSlotKeys(ch.LostSlots) // node/cmd_cluster_migrate.go
		s.log.Info("cluster: deleted the keys of slots lost to a newer configuration",
			zap.Int("slots", len(ch.LostSlots)), zap.Int64("keys", n))
	}
	if len(ch.MovedOutSlots) > 0 {
		s.slotsMovedOut(ch.MovedOutSlots) // node/cmd_cluster_migrate.go
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
	if !c.inExec {
		c.askingJustSet = true
	}
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
		out = append(out, strings.Clone(e.Key())) // the entry may be reused once its slot is unlocked
		return true
	})
	return out
}
