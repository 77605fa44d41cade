package gossip

import (
	"net"

	sockaddr "github.com/hashicorp/go-sockaddr"
)

// advertiseFallback picks memberlist's advertised address when the bus
// listens on every address and no IP was configured (no cluster-announce-ip,
// no concrete bind address). It is a transport detail only: the cluster
// address a node announces is learned from its peers (State.learnMyIP),
// never this guess. memberlist itself only accepts a private address
// that has a default route and refuses to start otherwise, which breaks a
// node in a loopback-only network namespace or on a host with public
// addresses only, where Redis works (it learns its IP from its peers).
//
// It returns "" when memberlist's own rule finds an address (nothing
// changes), else the first global unicast IPv4 address of an interface that
// is up, else the first such IPv6 address, else 127.0.0.1.
func advertiseFallback(privateIP func() (string, error), ifaceAddrs func() ([]net.Addr, error)) string {
	if ip, err := privateIP(); err == nil && ip != "" {
		return ""
	}
	addrs, _ := ifaceAddrs()
	var v6 string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
		if v6 == "" {
			v6 = ipn.IP.String()
		}
	}
	if v6 != "" {
		return v6
	}
	return "127.0.0.1"
}

// upInterfaceAddrs returns the addresses of the interfaces that are up.
func upInterfaceAddrs() ([]net.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []net.Addr
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		out = append(out, addrs...)
	}
	return out, nil
}

// systemAdvertiseFallback is advertiseFallback on this host.
func systemAdvertiseFallback() string {
	return advertiseFallback(sockaddr.GetPrivateIP, upInterfaceAddrs)
}
