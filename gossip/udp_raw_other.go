//go:build !linux

package gossip

import (
	"net"
	"net/netip"
)

// rawUDP is the ordinary socket path where raw system calls are not
// written for (see udp_raw_linux.go).
type rawUDP struct{ c *net.UDPConn }

func newRawUDP(c *net.UDPConn) (*rawUDP, error) { return &rawUDP{c: c}, nil }

func (u *rawUDP) readFrom(buf []byte) (int, netip.AddrPort, error) {
	return u.c.ReadFromUDPAddrPort(buf)
}

func (u *rawUDP) writeTo(b []byte, to netip.AddrPort) error {
	_, err := u.c.WriteToUDPAddrPort(b, to)
	return err
}
