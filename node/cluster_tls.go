package node

import (
	"crypto/tls"
	"errors"

	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/tlsconf"
)

// A TLS cluster (tls-cluster yes), as Redis 7.0's: the bus runs over TLS
// (gossip/tlstransport.go), nodes announce their tls-port as their port and
// their plaintext port beside it (pport), and a plaintext client is shown
// the plaintext ports (CLUSTER SLOTS, NODES, REPLICAS, MOVED, ASK) while a
// TLS client sees the TLS ones. CLUSTER SHARDS shows both. MIGRATE and
// slot migrations dial other nodes with TLS.

// busTLS is the bus's TLS with tls-cluster yes (nil otherwise). Accepted
// bus connections always require a client certificate, whatever
// tls-auth-clients says, as Redis's cluster bus does.
func (s *Server) busTLS() *gossip.BusTLS {
	if !s.cfg.Bool("tls-cluster") {
		return nil
	}
	return &gossip.BusTLS{
		Server: s.tls.holder.ServerConfig(func() tlsconf.AuthClients { return tlsconf.AuthYes }),
		Client: s.tls.holder.ClientConfig,
	}
}

// errTLSClusterOnOff refuses switching the bus's transport on a running
// node (the peers would no longer understand it).
var errTLSClusterOnOff = errors.New("tls-cluster can't be changed while the cluster bus runs (nodes with and " +
	"without it can't talk to each other): set it in the config file of every node and restart them")

func (s *Server) registerClusterTLSHooks() {
	started := s.cfg.Bool("tls-cluster")
	s.cfg.OnChange("tls-cluster", func(string) error {
		if s.cfg.Bool("tls-cluster") != started {
			return errTLSClusterOnOff
		}
		return nil
	})
	// The announced client ports follow CONFIG SET tls-port and port, as
	// Redis derives them for every message; the bus port stays the one
	// the bus listens on (0: unchanged).
	for _, name := range []string{"tls-port", "port"} {
		s.cfg.OnChange(name, func(string) error {
			port, pport, _ := s.announcedPorts()
			s.cluster.SetAnnounced(s.announceIP(), port, 0, s.cfg.String("cluster-announce-hostname"))
			s.cluster.SetPlaintextPort(pport)
			return nil
		})
	}
}

// isTLS reports whether the client connected over TLS.
func (c *Client) isTLS() bool {
	_, ok := c.guard.Conn.(*tls.Conn)
	return ok
}

// plainPorts reports whether the cluster's replies name plaintext ports
// for this client: a TLS cluster and a client that is not on TLS (Redis's
// use_pport).
func (c *Client) plainPorts() bool {
	return c.srv.cfg.Bool("tls-cluster") && !c.isTLS()
}

// clientPort is a node's port as a client is shown it: its plaintext port
// when plain and it announced one.
func clientPort(port, pport int, plain bool) int {
	if plain && pport != 0 {
		return pport
	}
	return port
}
